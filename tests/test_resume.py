"""Sweeps that survive: resume after SIGKILL, skip finished jobs, joblib in parallel."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from receval.results.manifest import MANIFEST
from conftest import run_cli

from receval.run.pipeline import config_hash_of, run
from receval.cli.resume import finished
from receval.results.format import RESULTS, RUN_JSON

SWEEP = ["retriever=bm25,tfidf", "chunking.max_words=20,40,120"]


def big_site(root: Path, n_pages: int = 150, sections: int = 12, n_questions: int = 400) -> Path:
    """A generated folder dataset large enough that one job takes a noticeable moment."""
    rng = np.random.default_rng(7)
    vocab = [f"w{i}" for i in range(3000)]
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    weights /= weights.sum()
    (root / "pages").mkdir(parents=True)
    ids = []
    for p in range(n_pages):
        lines = [f"# Page {p}"]
        for s in range(sections):
            lines += [f"## Part {s}", " ".join(rng.choice(vocab, size=150, p=weights))]
            ids.append(f"page{p}#part-{s}")
        (root / "pages" / f"page{p}.md").write_text("\n\n".join(lines))
    with open(root / "questions.jsonl", "w") as out:
        for q in range(n_questions):
            words = " ".join(rng.choice(vocab, size=8, p=weights))
            out.write(json.dumps({"id": f"q{q}", "question": words, "relevant": [ids[q % len(ids)]]}) + "\n")
    return root


def snapshot(sweep: Path) -> dict[str, tuple[bytes, float]]:
    return {
        str(p.relative_to(sweep)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sweep.glob("*/*") if p.name in (RESULTS, RUN_JSON)
    }


def test_finished_means_complete_results_of_the_same_config(make_config, tmp_path):
    cfg = make_config("retriever=tfidf")
    assert not finished(tmp_path, config_hash_of(cfg))
    run(cfg, tmp_path)
    assert finished(tmp_path, config_hash_of(cfg))
    assert not finished(tmp_path, config_hash_of(make_config("retriever=bm25")))
    (tmp_path / RUN_JSON).write_text("{")  # killed while writing run.json
    assert not finished(tmp_path, config_hash_of(cfg))


@pytest.mark.slow
def test_sigkill_midway_then_rerun_finishes_only_missing_jobs(tmp_path):
    site = big_site(tmp_path / "site")
    args = ["-m", "receval", *SWEEP, "dataset=folder", f"dataset.path={site}",
            f"hydra.sweep.dir={tmp_path}/s", "cache_dir=null", "-m"]
    sweep = tmp_path / "s"
    proc = subprocess.Popen([sys.executable, *args], cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while len(list(sweep.glob(f"*/{MANIFEST}"))) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = snapshot(sweep)
    # a job is finished once its manifest is written (last); one killed between its run.json
    # and its manifest is not, and runs again
    done_before = {p.parent.name for p in sweep.glob(f"*/{MANIFEST}")}
    if len(done_before) == 6:
        pytest.skip("the sweep finished before it could be killed; machine too fast for this data")
    assert len(done_before) >= 2
    again = run_cli(*args[2:], cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    ran = 6 - len(done_before)
    assert f"receval: {ran} jobs ran, {len(done_before)} skipped" in again.stdout
    after = snapshot(sweep)
    for name, value in before.items():
        if name.split("/")[0] in done_before:
            assert after[name] == value  # finished files untouched: same bytes, same mtime
    assert len(list(sweep.glob(f"*/{RUN_JSON}"))) == 6 == len(list(sweep.glob(f"*/{MANIFEST}")))
    assert not list(sweep.glob("*/.*.tmp"))  # no half-written temporary files survive


@pytest.mark.slow
def test_changed_data_reruns_the_job_and_another_sweep_is_refused(site, tmp_path):
    """The same sweep again re-runs the job whose data changed and skips the other; a
    different sweep into the same folder is refused (it would mix two sweeps' jobs)."""
    questions = site / "questions.jsonl"
    other = site / "other.jsonl"
    other.write_text(questions.read_text())
    args = ["dataset=folder", f"dataset.path={site}", f"dataset.questions={questions},{other}",
            f"hydra.sweep.dir={tmp_path}/s", "-m"]
    first = run_cli(*args, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    lines = [line for line in other.read_text().splitlines() if line.strip()]
    other.write_text("\n".join(lines[:-1]) + "\n")  # one question fewer: job 1's dataset changed
    second = run_cli(*args, cwd=tmp_path)
    assert "receval: 1 jobs ran, 1 skipped" in second.stdout, second.stderr
    info = json.loads((tmp_path / "s" / "1" / RUN_JSON).read_text())
    assert info["n_questions"] == len(lines) - 1
    before = snapshot(tmp_path / "s")
    third = run_cli(*args[:-2], "chunking.max_words=41", *args[-2:], cwd=tmp_path)
    assert third.returncode == 2 and "holds another sweep" in third.stderr, third.stderr
    assert snapshot(tmp_path / "s") == before


@pytest.mark.slow
def test_joblib_launcher_gives_the_basic_launchers_results(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher", reason="needs the parallel extra")
    basic = run_cli(*SWEEP, f"hydra.sweep.dir={tmp_path}/basic", "-m", cwd=tmp_path)
    joblib = run_cli(*SWEEP, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
                     f"hydra.sweep.dir={tmp_path}/joblib", "-m", cwd=tmp_path)
    assert basic.returncode == 0 and joblib.returncode == 0, joblib.stderr
    assert "receval: 6 jobs ran, 0 skipped" in joblib.stdout
    for job in range(6):
        a = pq.read_table(tmp_path / "basic" / str(job) / RESULTS).drop_columns(
            [c for c in pq.read_schema(tmp_path / "basic" / str(job) / RESULTS).names if c.startswith("latency_ms")])
        b = pq.read_table(tmp_path / "joblib" / str(job) / RESULTS).select(a.column_names)
        assert a.equals(b)


def test_two_commands_reading_the_same_microsecond_get_distinct_folders(monkeypatch):
    """Default folder names carry the process id after the time: two processes whose
    clocks read the same microsecond (it happened in CI) still write apart."""
    from datetime import datetime

    import hydra.core.utils
    from hydra import compose, initialize_config_dir

    from receval.run.config import config_dir

    class Frozen(datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime(2026, 12, 1, 9, 46, 46, 175310)

    monkeypatch.setattr(hydra.core.utils, "datetime", Frozen)
    folders = []
    for pid in (4242, 4243):
        monkeypatch.setattr(os, "getpid", lambda pid=pid: pid)
        with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
            cfg = compose("config", return_hydra_config=True)
            folders.append((cfg.hydra.run.dir, cfg.hydra.sweep.dir))
    assert folders == [("runs/2026-12-01/09-46-46-175310-4242",) * 2, ("runs/2026-12-01/09-46-46-175310-4243",) * 2]


@pytest.mark.slow
def test_two_sweeps_started_together_write_distinct_folders(tmp_path):
    """Default output folders carry the time and the process id: simultaneous commands never share one."""
    args = [sys.executable, "-m", "receval", "retriever=bm25,tfidf", "chunking.max_words=40", "-m"]
    procs = [subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for _ in range(2)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    sweeps = [p for p in (tmp_path / "runs").glob("*/*") if p.is_dir()]
    assert len(sweeps) == 2
    for sweep in sweeps:
        assert sorted(p.name for p in sweep.iterdir() if p.is_dir()) == ["0", "1"]
        assert all((sweep / job / RUN_JSON).is_file() for job in ("0", "1"))
