"""conf/suite/ and conf/collection/: a named suite expands to a sweep over collections,
the shared datasets' folder taken from $RECEVAL_SHARED."""

from __future__ import annotations

import json
import shutil

import pytest
from hydra import compose, initialize_config_dir

from receval.run.config import config_dir
from conftest import FIXTURES, run_cli


def compose_with(*overrides: str, hydra: bool = False):
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        return compose("config", overrides=list(overrides), return_hydra_config=hydra)


@pytest.mark.slow
def test_a_collection_sets_the_dataset_and_reads_the_shared_folder_from_the_environment(monkeypatch):
    monkeypatch.setenv("RECEVAL_SHARED", "/data/shared")
    cfg = compose_with("+collection=scifact")
    assert (cfg.dataset.format, cfg.dataset.path) == ("beir", "/data/shared/datasets/scifact")
    monkeypatch.delenv("RECEVAL_SHARED")
    assert compose_with("+collection=cranfield").dataset.path == "../shared/datasets/cranfield"
    library = compose_with("+collection=library", "retriever=tfidf")
    assert (library.dataset.format, library.dataset.path, library.retriever.kind) == ("folder", None, "tfidf")


def test_the_local_suite_sweeps_the_three_collections():
    cfg = compose_with("+suite=local", hydra=True)
    assert cfg.hydra.sweeper.params == {"+collection": "library,cranfield,scifact"}


@pytest.mark.slow
def test_suite_local_runs_every_collection_and_reports_them_together(tmp_path):
    """``+suite=local retriever=bm25,tfidf -m`` as a user runs it, over a shared folder
    holding two small BEIR collections, then ``report --suite`` over the sweep."""
    shared = tmp_path / "shared" / "datasets"
    shutil.copytree(FIXTURES / "beir-splits", shared / "cranfield")
    shutil.copytree(FIXTURES / "beir-splits", shared / "scifact")
    with (shared / "scifact" / "corpus.jsonl").open("a") as extra:  # other files: another collection
        extra.write(json.dumps({"_id": "extra", "title": "", "text": "an unjudged document"}) + "\n")
    env = {"RECEVAL_SHARED": str(tmp_path / "shared"), "RECEVAL_CACHE_DIR": str(tmp_path / "cache")}
    done = run_cli("+suite=local", "retriever=bm25,tfidf", f"hydra.sweep.dir={tmp_path}/s", "-m", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert len(list((tmp_path / "s").glob("*/results.parquet"))) == 6
    report = run_cli(str(tmp_path / "s"), "--suite", "--format", "json", "--n-resamples", "200",
                     cwd=tmp_path, command="report", env=env)
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)
    assert [c["name"] for c in data["collections"]] == ["library", "cranfield", "scifact"]
    assert data["configurations"][1]["pooled_vs_baseline"]["k"] == 3
    # every job re-runs identically and pools, the shared folder's variable no longer set:
    # each run saved the dataset path it read, never the ${oc.env:...} to evaluate again
    stored = [json.loads((tmp_path / "s" / str(i) / "run.json").read_text()) for i in range(6)]
    paths = [r["config"]["dataset"]["path"] for r in stored]
    assert sorted(str(p) for p in paths if p) == sorted([str(shared / "cranfield")] * 2 + [str(shared / "scifact")] * 2)
    again = run_cli(str(tmp_path / "s"), "--format", "json", cwd=tmp_path, command="reproduce",
                    env={"RECEVAL_CACHE_DIR": str(tmp_path / "cache2")})
    assert again.returncode == 0, again.stderr
    assert [r["identical"] for r in json.loads(again.stdout)["runs"]] == [True] * 6
    cranfield = [str(tmp_path / "s" / str(i)) for i, p in enumerate(paths) if p and p.endswith("cranfield")]
    pooled = run_cli(*cranfield, "--out", str(tmp_path / "pool.jsonl"), cwd=tmp_path, command="pool")
    assert pooled.returncode == 0, pooled.stderr
    lines = [json.loads(line) for line in (tmp_path / "pool.jsonl").read_text().splitlines()]
    assert all(line["text"] for line in lines if line.get("role") != "run")  # a run line describes a run pooled
