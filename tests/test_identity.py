"""What a stored run's numbers depend on: resume runs a job again when its data changed
(one label edited) and not for settings that change no number (cache folder, batching,
bootstrap, objective); the report warns when runs read different datasets."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import run_cli

from receval.run.pipeline import config_hash_of, run
from receval.results.labels import naming
from receval.results.format import RESULTS, RUN_JSON


def _relabel(site: Path) -> None:
    """Point question b1 at another section: one label changed, nothing else."""
    path = site / "questions.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    assert first["relevant"] == ["bikes#prices"]
    first["relevant"] = ["bikes#returning-a-bike"]
    lines[0] = json.dumps(first)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _relevant_of(run_dir: Path, qid: str) -> list[str]:
    table = pq.read_table(run_dir / RESULTS, columns=["question_id", "relevant"]).to_pydict()
    return table["relevant"][table["question_id"].index(qid)]



@pytest.mark.slow
def test_resume_reruns_when_a_label_changed_not_for_non_result_settings(site, tmp_path):
    out = tmp_path / "run"
    base = ["dataset=folder", f"dataset.path={site}", f"hydra.run.dir={out}"]
    first = run_cli(*base, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert _relevant_of(out, "b1") == ["bikes#prices"]
    fingerprint = json.loads((out / RUN_JSON).read_text())["dataset_fingerprint"]

    # cache, batching and bootstrap settings do not change results: skipped
    same = run_cli(
        *base, "search_batch=4", f"cache_dir={tmp_path / 'other-cache'}",
        "bootstrap.n_resamples=50", "bootstrap.seed=3", cwd=tmp_path,
    )
    assert same.returncode == 0, same.stderr
    assert "skipped:" in same.stdout

    # one label edited -> the job runs again and stores the new label
    _relabel(site)
    again = run_cli(*base, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "skipped:" not in again.stdout
    assert _relevant_of(out, "b1") == ["bikes#returning-a-bike"]
    assert json.loads((out / RUN_JSON).read_text())["dataset_fingerprint"] != fingerprint


@pytest.mark.slow
def test_report_warns_once_naming_runs_over_different_datasets(site, make_config, tmp_path, capsys):
    from receval.cli.report import main

    cfg = make_config("dataset=folder", f"dataset.path={site}")
    old, new, twin = tmp_path / "old", tmp_path / "new", tmp_path / "twin"
    run(cfg, old)
    run(cfg, twin)
    capsys.readouterr()
    assert main([str(old), str(twin)]) == 0
    assert "fingerprints differ" not in capsys.readouterr().err
    _relabel(site)
    run(cfg, new)
    capsys.readouterr()
    assert main([str(old), str(new)]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "fingerprints differ" in line]
    assert len(warnings) == 1
    assert str(old) in warnings[0] and str(new) in warnings[0]


@pytest.mark.slow
def test_identity_ignores_non_result_settings(make_config):
    plain = make_config()
    for override in ("cache_dir=/elsewhere", "search_batch=8", "timing.repeats=5", "bootstrap.n_resamples=100",
                     "bootstrap.level=0.9", "bootstrap.method=bca", "bootstrap.seed=5",
                     "objective.metric=hit@3", "objective.split=null"):
        assert config_hash_of(make_config(override)) == config_hash_of(plain), override
    assert config_hash_of(make_config("chunking.max_words=40")) != config_hash_of(plain)
    assert config_hash_of(make_config("depth=20")) != config_hash_of(plain)


def test_non_result_settings_are_no_differing_parameter():
    configs = [
        {"retriever": {"kind": "bm25"}, "cache_dir": "a", "search_batch": 1, "bootstrap": {"seed": 0},
         "objective": {"metric": "rr"}, "timing": {"repeats": 1}},
        {"retriever": {"kind": "tfidf"}, "cache_dir": "b", "search_batch": 8, "bootstrap": {"seed": 1},
         "objective": {"metric": "hit@3"}, "timing": {"repeats": 5}},
    ]
    assert naming(configs).keys == {"retriever": "retriever"}

