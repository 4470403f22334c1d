"""The one writer (receval.results.run_writer): a RunRecord written into a held folder is one
sealed run, every file carrying the folder's run id; a write that fails leaves no results
or chunks behind; chunks.json keeps fewer ranks rather than pass the door's bound."""

from __future__ import annotations

import json

import pytest

import receval.results.door as door
from receval.core.io import WriteError
from receval.results import run_writer
from receval.results.claim import taken
from receval.results.door import open_run
from receval.results.format import CHUNKS, MANIFEST, RESULTS, RUN_JSON
from receval.results.run_writer import RunRecord, write_run

N = 4


def shown(top: int) -> dict:
    """chunks.json keeping ``top`` ranks: one 1,000-character chunk a rank."""
    return {"chunks": {f"c{i}": [f"s{i}", 0, 1000, "x" * 1000] for i in range(top)}, "sections": {}, "evidence": {}}


def record() -> RunRecord:
    rr = [1.0, 0.5, 0.0, 1.0]
    columns = {
        "question_id": [f"q{i}" for i in range(N)], "kind": ["direct"] * N, "split": ["dev"] * N,
        "question": [f"question {i}" for i in range(N)], "relevant": [["s1"]] * N, "grades": [[1]] * N,
        "retrieved": [["s1"]] * N, "scores": [[1.0]] * N, "first_relevant_rank": [1, 2, None, 1], "rr": rr,
        "latency_ms": [1.0] * N,
    }
    facts = {"n_chunks": 10, "n_questions": N, "n_unanswerable": 0, "stages": {}}
    return RunRecord(columns=columns, measures=("rr",), facts=facts, written={"config": {"depth": 10}},
                     means={"rr": sum(rr) / N}, timings={"search_s": 0.5}, shown=shown)


def test_a_record_is_one_sealed_run_whose_files_carry_the_folders_run_id(tmp_path):
    with taken(tmp_path / "run") as claim:
        written = write_run(claim.start(), record())
    run = open_run(tmp_path / "run", chunks=True)
    assert run.run_id == claim.run_id and run.info["run_id"] == run.metadata["run_id"] == claim.run_id
    assert run.info["means"] == {"rr": 0.625} and run.info["config"] == {"depth": 10} and len(run.chunks) == 10
    assert json.loads((tmp_path / "run" / CHUNKS).read_text())["top"] == 10
    assert set(written.timings) == {"search_s", "write_s"} and run.info["timings"] == written.timings
    assert (written.n_questions, written.n_chunks, written.n_unanswerable) == (N, 10, 0)


def test_chunks_json_keeps_fewer_ranks_rather_than_pass_the_doors_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(door, "MAX_CHUNKS_BYTES", 4_000)  # room for 3 chunks of 1,000 characters, not 5
    with taken(tmp_path / "run") as claim:
        write_run(claim.start(), record())
    stored = json.loads((tmp_path / "run" / CHUNKS).read_text())
    assert stored["top"] == 3 and sorted(stored["chunks"]) == ["c0", "c1", "c2"]


def test_a_failed_write_leaves_no_results_or_chunks_and_no_seal(tmp_path, monkeypatch):
    def full(run_dir, info):
        raise WriteError(f"{run_dir / RUN_JSON}: cannot write it, No space left on device")

    monkeypatch.setattr(run_writer, "write_run_json", full)
    with taken(tmp_path / "run") as claim, pytest.raises(WriteError):
        write_run(claim.start(), record())
    assert not any((tmp_path / "run" / name).exists() for name in (RESULTS, CHUNKS, RUN_JSON, MANIFEST))
