"""One sweep per sweep folder (issue 23 section 2): two different sweeps started into the
same ``hydra.sweep.dir`` never mix their files; the same sweep again resumes.

Seen before: a job's ``.hydra`` said tfidf/40 while its results were bm25/40. The
first sweep claims the folder with ``.receval-sweep.json`` (created atomically, holding
its identity); a different one is refused before it runs a job.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from conftest import run_cli

from receval.core.errors import ConfigError, RunError
from receval.cli.preflight import SWEEP_MARKER, claim_sweep_dir

A = {"config_name": "config", "overrides": ["retriever=bm25", "chunking.max_words=40,120"], "params": None}
B = {"config_name": "config", "overrides": ["retriever=tfidf", "chunking.max_words=40,120"], "params": None}


def race(folder: Path, identities: list[dict]) -> list[str | None]:
    """Claim ``folder`` from one thread per identity, released together; each one's error or None."""
    start, outcome = threading.Barrier(len(identities)), [None] * len(identities)

    def claim(i: int) -> None:
        start.wait()
        try:
            claim_sweep_dir(folder, identities[i])
        except ConfigError as error:
            outcome[i] = str(error)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(len(identities))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcome


def test_of_two_different_sweeps_claiming_together_exactly_one_wins(tmp_path):
    for attempt in range(100):
        folder = tmp_path / str(attempt)
        outcome = race(folder, [A, B])
        assert sorted(o is None for o in outcome) == [False, True], outcome
        winner = [A, B][outcome.index(None)]
        assert json.loads((folder / SWEEP_MARKER).read_text()) == winner
        (refusal,) = [o for o in outcome if o]
        assert "holds another sweep" in refusal and "nothing was run" in refusal
        assert [p.name for p in folder.iterdir()] == [SWEEP_MARKER]  # no temporary file left


def test_the_same_sweep_claims_its_folder_again_and_again(tmp_path):
    assert race(tmp_path / "s", [A, A, A]) == [None, None, None]
    claim_sweep_dir(tmp_path / "s", A)  # resume
    with pytest.raises(ConfigError, match=r"holds another sweep \(retriever=bm25 chunking.max_words=40,120\); "
                                          r"this one \(retriever=tfidf chunking.max_words=40,120\)"):
        claim_sweep_dir(tmp_path / "s", B)


def test_a_folder_swept_before_folders_were_claimed_is_compared_by_its_multirun_yaml(tmp_path):
    folder = tmp_path / "old"
    folder.mkdir()
    saved = {"hydra": {"job": {"config_name": "config"}, "overrides": {"task": A["overrides"]},
                       "sweeper": {"params": None}}, "retriever": {"kind": "bm25"}}
    (folder / "multirun.yaml").write_text(yaml.safe_dump(saved))
    with pytest.raises(ConfigError, match="holds another sweep"):
        claim_sweep_dir(folder, B)
    assert not (folder / SWEEP_MARKER).exists()
    claim_sweep_dir(folder, A)  # its own sweep resumes, and claims it from now on
    assert json.loads((folder / SWEEP_MARKER).read_text()) == A


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(9)
) + "hydra: *j\n"  # 9**10 nodes once expanded, in under 1 KB


def test_an_alias_bomb_in_an_earlier_sweep_s_multirun_yaml_is_refused_as_the_door_refuses_it(tmp_path):
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "multirun.yaml").write_text(BOMB)
    assert len(BOMB) < 1024
    with pytest.raises(RunError, match=r"multirun.yaml: more than 100,000 YAML nodes once its aliases are expanded"
                                       r".*choose another folder with hydra.sweep.dir=\.\.\., or remove multirun.yaml"):
        claim_sweep_dir(folder, A)
    assert not (folder / SWEEP_MARKER).exists()  # nothing claimed
    (folder / "multirun.yaml").unlink()
    (folder / "multirun.yaml").symlink_to(tmp_path / "elsewhere.yaml")
    (tmp_path / "elsewhere.yaml").write_text(yaml.safe_dump({"hydra": {}}))
    with pytest.raises(RunError, match="a symlink to .*elsewhere.yaml, outside the run folder"):
        claim_sweep_dir(folder, A)


@pytest.mark.slow
def test_a_sweep_into_a_folder_holding_an_alias_bomb_stops_with_one_message(tmp_path):
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "multirun.yaml").write_text(BOMB)
    done = run_cli("retriever=bm25,tfidf", f"hydra.sweep.dir={tmp_path / 's'}", "cache_dir=null", "-m", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("receval: error: ") and "multirun.yaml: more than 100,000 YAML nodes" in line
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["multirun.yaml"]  # no job ran


def job_kinds(sweep: Path) -> list[tuple[str, str, str]]:
    """Per job: the retriever its .hydra overrides name, its run.json config's, its results' label."""
    out = []
    for job in sorted(p for p in sweep.iterdir() if p.is_dir()):
        overrides = yaml.safe_load((job / ".hydra" / "overrides.yaml").read_text())
        named = next(o.split("=", 1)[1] for o in overrides if o.startswith("retriever="))
        saved = yaml.safe_load((job / ".hydra" / "config.yaml").read_text())["retriever"]["kind"]
        stored = json.loads((job / "run.json").read_text())["config"]["retriever"]["kind"]
        out.append((named, saved, stored))
    return out


@pytest.mark.slow
def test_two_different_sweeps_started_together_never_mix_files(tmp_path):
    rounds = 3
    for attempt in range(rounds):
        sweep = tmp_path / f"s{attempt}"
        commands = [
            [sys.executable, "-m", "receval", f"retriever={kind}", "chunking.max_words=40,120",
             f"hydra.sweep.dir={sweep}", "cache_dir=null", "-m"]
            for kind in ("bm25", "tfidf")
        ]
        procs = [subprocess.Popen(c, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for c in commands]
        done = [(p.wait(timeout=300), *p.communicate()) for p in procs]
        codes = sorted(code for code, _, _ in done)
        assert codes == [0, 2], done
        refused = next(err for code, _, err in done if code == 2)
        assert "holds another sweep" in refused and refused.count("receval: error:") == 1
        kinds = job_kinds(sweep)
        assert len(kinds) == 2 and all(len(set(k)) == 1 for k in kinds), kinds  # each job agrees with itself
        assert len({k[0] for k in kinds}) == 1  # and all jobs are the winning sweep's
    winner = next(k for k in ("bm25", "tfidf") if job_kinds(sweep)[0][0] == k)
    again = run_cli(f"retriever={winner}", "chunking.max_words=40,120", f"hydra.sweep.dir={sweep}",
                    "cache_dir=null", "-m", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "receval: 0 jobs ran, 2 skipped" in again.stdout


def test_another_sweeper_s_folder_is_claimed_when_the_multirun_starts(tmp_path):
    """receval's sweeper claims its folder once its jobs are checked; for any other
    (Optuna) the preflight callback claims it as the multirun starts."""
    from omegaconf import OmegaConf

    from receval.cli.preflight import OutputFolder

    def master(folder: Path, target: str, overrides: list[str]):
        return OmegaConf.create({"hydra": {
            "run": {"dir": str(folder)}, "sweep": {"dir": str(folder)}, "job": {"config_name": "config"},
            "overrides": {"task": overrides}, "sweeper": {"_target_": target, "params": {"x": "1,2"}},
        }})

    optuna = "hydra_plugins.hydra_optuna_sweeper.optuna_sweeper.OptunaSweeper"
    OutputFolder().on_multirun_start(master(tmp_path / "o", optuna, ["+search=bm25"]))
    assert json.loads((tmp_path / "o" / SWEEP_MARKER).read_text())["params"] == {"x": "1,2"}
    with pytest.raises(SystemExit) as stop:
        OutputFolder().on_multirun_start(master(tmp_path / "o", optuna, ["+search=full"]))
    assert stop.value.code == 2
    OutputFolder().on_multirun_start(master(tmp_path / "r", "hydra_plugins.receval_sweeper.RecevalSweeper", []))
    assert not (tmp_path / "r").exists()  # receval's own sweeper claims it after checking its jobs
