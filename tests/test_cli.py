"""The Hydra entry point end to end: a real sweep, exit codes, and an installed wheel."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import ROOT, run_cli

from receval.results.format import RESULTS, RUN_JSON
from receval.results import open_run


@pytest.fixture(scope="module")
def sweep(readme_sweep) -> Path:
    """The README's sweep, run once as a user runs it: 2 retrievers x 3 chunk sizes."""
    return readme_sweep


@pytest.mark.slow
def test_sweep_writes_six_runs_with_distinct_rankings(sweep):
    runs = sorted(p for p in sweep.iterdir() if p.is_dir())
    assert [p.name for p in runs] == ["0", "1", "2", "3", "4", "5"]
    rankings = set()
    for run_dir in runs:
        assert (run_dir / ".hydra" / "config.yaml").is_file()
        assert (run_dir / "receval.log").exists()  # job name is receval, not __main__
        stored = open_run(run_dir, skip=frozenset())
        rankings.add(json.dumps(stored.table.column("retrieved").to_pylist()))
    assert len(rankings) == 6


@pytest.mark.slow
def test_stored_metrics_match_their_own_retrieved_lists(sweep):
    """rr, hit@k, recall@k and first_relevant_rank recomputed from the stored lists."""
    checked = 0
    for path in sweep.glob(f"*/{RESULTS}"):
        for row in pq.read_table(path).to_pylist():
            relevant, retrieved = set(row["relevant"]), row["retrieved"]
            if not relevant:
                assert row["rr"] is None and row["hit@3"] is None
                continue
            ranks = [i + 1 for i, s in enumerate(retrieved) if s in relevant]
            assert row["first_relevant_rank"] == (ranks[0] if ranks else None)
            assert row["rr"] == pytest.approx(1 / ranks[0] if ranks else 0.0, abs=1e-12)
            for k in (1, 3, 5, 10):
                found = sum(r <= k for r in ranks)
                assert row[f"hit@{k}"] == float(found > 0)
                assert row[f"recall@{k}"] == pytest.approx(found / len(relevant))
            assert len(retrieved) == len(set(retrieved)) <= 10
            checked += 1
    assert checked == 6 * 47


@pytest.mark.slow
def test_each_run_prints_one_line_and_records_its_facts(sweep):
    info = json.loads((sweep / "2" / RUN_JSON).read_text())
    assert info["config"]["retriever"] == {"kind": "bm25", "k1": 1.2, "b": 0.75}
    assert info["config"]["chunking"]["max_words"] == 120
    assert set(info["timings"]) == {"load_s", "chunk_s", "index_s", "warmup_s", "search_s", "evaluate_s", "write_s"}
    assert info["n_questions"] == 49 and info["n_unanswerable"] == 2
    meta = open_run(sweep / "2", skip=frozenset()).metadata
    for key in ("receval_version", "schema_version", "config_hash", "dataset_fingerprint", "n_chunks"):
        assert meta[key] == info[key]
    table = open_run(sweep / "2", skip=frozenset()).table
    assert str(table.schema.field("first_relevant_rank").type) == "int32"
    import pyarrow as pa

    assert table.schema.field("retrieved").type.equals(pa.list_(pa.string()))


@pytest.mark.slow
def test_a_single_run_from_any_directory(tmp_path):
    done = run_cli("retriever=tfidf", "chunking.max_words=40", "hydra.run.dir=out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("tfidf") and "hit@3" in lines[0]
    assert (tmp_path / "out" / RESULTS).is_file()


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("chunking.max_word=40", "chunking.max_word is not a key of chunking (words); did you mean chunking.max_words?"),
        ("depth=abc", "could not be converted to Integer"),
        ("depth=-1", "depth=-1: out of range; use an integer in [1, 2147483647]"),
        ("retriever.k1=-1", "retriever.k1=-1.0: out of range; use a number in [0, 1000]"),
        ("retriever.b=2", "retriever.b=2.0: out of range; use a number in [0, 1]"),
        ("retriever=bm26", "retriever=bm26: no such option; did you mean bm25? (options: bm25, dense, "),
        ("chunking.overlap=200", "chunking.overlap=200 must be smaller than chunking.max_words=120"),
        ("metrics.ks=[1,20]", "raise depth or drop that cutoff"),
        ("dataset=folder", "dataset.path is required"),
        ("dataset.path=/no/such/site", "is not a folder"),
    ],
)
@pytest.mark.slow
def test_bad_config_exits_2_with_one_clear_message(tmp_path, override, message):
    done = run_cli(override, "hydra.run.dir=out", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert not list(tmp_path.rglob(RESULTS)) and not list(tmp_path.rglob(RUN_JSON))


@pytest.mark.slow
def test_bad_labels_exit_2_listing_every_problem(tmp_path, site):
    (site / "questions.jsonl").write_text(
        '{"id": "a", "question": "Helmets?", "relevant": ["safety#helmet"]}\n{"id": "b"\n'
    )
    done = run_cli("dataset=folder", f"dataset.path={site}", "hydra.run.dir=out", cwd=tmp_path)
    assert done.returncode == 2
    assert "2 problems" in done.stderr and "closest: safety#helmets" in done.stderr
    assert "questions.jsonl:2: not valid JSON" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out" / RESULTS).exists()


@pytest.mark.slow
def test_installed_wheel_finds_its_configs_from_anywhere(tmp_path):
    """A normal (non-editable) install ships conf/ and the built-in pages inside the package."""
    wheels = tmp_path / "wheels"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("receval-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"receval/conf/config.yaml", "receval/conf/retriever/bm25.yaml", "receval/conf/hydra/launcher/receval_ray.yaml"} <= names
    assert "receval/datasets/library/questions.jsonl" in names
    assert "hydra_plugins/receval_sweeper/__init__.py" in names  # the default sweeper
    (points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    assert "receval = receval.cli.main:entry" in zipfile.ZipFile(wheel).read(points).decode()  # the receval command
    target = tmp_path / "site-packages"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        check=True, capture_output=True, timeout=300,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = run_cli("hydra.run.dir=out", cwd=elsewhere, env={"PYTHONPATH": str(target)})
    assert done.returncode == 0, done.stderr
    assert (elsewhere / "out" / RESULTS).is_file()
    config = (elsewhere / "out" / ".hydra" / "hydra.yaml").read_text()
    assert str(target / "receval" / "conf") in config  # configs came from the wheel
    swept = run_cli("retriever=bm25,tfidf", "hydra.sweep.dir=sweep", "-m", cwd=elsewhere, env={"PYTHONPATH": str(target)})
    assert swept.returncode == 0, swept.stderr
    assert "receval: 2 jobs ran, 0 skipped" in swept.stdout
