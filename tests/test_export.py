"""TREC files (receval.results.trec) and exporting stored runs (receval export)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import run_cli, run_of
from receval.results import trec
from receval.core.errors import RecevalError
from receval.cli.export import main
from receval.results.external import export
from receval.results import open_run

# --------------------------------------------------------------------------- scores


def below(value: float) -> float:
    """The next float32 below ``value``."""
    return float(np.nextafter(np.float32(value), np.float32(-np.inf)))


def test_strictly_decreasing_keeps_real_scores_and_nudges_ties():
    out = trec.strictly_decreasing(iter([3.0, 2.5, 2.5, 2.5, 1.0, 1.0, 2.0]))
    assert out[:2] == [3.0, 2.5] and out[4] == 1.0
    assert out[2] == below(2.5) and out[3] == below(out[2])
    assert out[5] == below(1.0)
    assert out[6] == below(out[5])  # a rise (not sorted) is pushed below too
    assert all(np.float32(a) > np.float32(b) for a, b in zip(out, out[1:]))
    assert trec.strictly_decreasing([]) == [] and trec.strictly_decreasing([0.5]) == [0.5]


def test_scores_equal_in_float32_are_ties_to_trec_eval():
    """trec_eval holds scores as float32: 3.0 and the double just below are a tie."""
    out = trec.strictly_decreasing([3.0, 2.9999999999999996, 2.0])
    assert out == [3.0, below(3.0), 2.0]
    assert trec.trec_order([("b", 1.0), ("a", 1.0000000001)]) == [("b", 1.0), ("a", 1.0)]


def test_strictly_decreasing_keeps_float32_scores_exactly():
    scores = np.array([7.1, 3.3, 0.2], dtype=np.float32)
    assert trec.strictly_decreasing(scores) == [float(s) for s in scores]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 1e39])
def test_non_finite_scores_are_refused(bad):
    with pytest.raises(RecevalError, match="is not a finite single-precision number"):
        trec.strictly_decreasing([1.0, bad])


def test_trec_order_is_score_then_docid_descending():
    assert trec.trec_order([("a", 1.0), ("c", 1.0), ("b", 2.0), ("b2", 1.0)]) == [
        ("b", 2.0), ("c", 1.0), ("b2", 1.0), ("a", 1.0),
    ]


# --------------------------------------------------------------------------- run files


def test_run_round_trip_keeps_receval_order_through_ties(tmp_path):
    ranking = {
        "q1": [("a", 2.0), ("b", 2.0), ("c", 2.0), ("d", 1.0)],  # receval: ties by id ascending
        "q2": [("z", 0.5), ("y", 0.5)],
        "q3": [],
    }
    path = trec.write_run(tmp_path / "run.txt", ranking, tag="mine")
    lines = path.read_text().splitlines()
    assert lines[0] == "q1 Q0 a 1 2.0 mine"
    assert [line.split()[3] for line in lines] == ["1", "2", "3", "4", "1", "2"]
    back = trec.read_run(path)
    assert list(back) == ["q1", "q2"]  # q3 retrieved nothing: no lines
    for qid in back:
        assert [doc for doc, _ in back[qid]] == [doc for doc, _ in ranking[qid]]
    assert trec.run_tags(path) == ["mine"]
    assert list(tmp_path.iterdir()) == [path]  # atomic write left no temporary file


def test_read_run_sorts_as_trec_eval_whatever_the_line_order(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("q 0 a 1 1.5 t\nq 0 b 2 1.5 t\n\nq 0 c 3 9 t\nq 0 d 1 -2e-3 t\n")
    assert trec.read_run(path) == {"q": [("c", 9.0), ("b", 1.5), ("a", 1.5), ("d", trec.single(-0.002))]}


def test_bad_run_lines_are_named_by_file_and_line(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("q Q0 a 1 1.0 t\nq Q0 b 2 1.0\nq Q0 c x 1.0 t\nq Q0 d 4 nan t\nq Q0 a 5 0.5 t\n")
    with pytest.raises(RecevalError) as excinfo:
        trec.read_run(path)
    assert excinfo.value.problems == [
        f"{path}:2: expected 6 columns 'qid Q0 docid rank score tag', got 5",
        f"{path}:3: rank must be an integer and score a finite number, got 'x' and '1.0'",
        f"{path}:4: rank must be an integer and score a finite number, got '4' and 'nan'",
        f"{path}:5: question 'q' lists document 'a' again (first at {path}:1)",
    ]


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(RecevalError, match=r"nothing\.txt: run file not found"):
        trec.read_run(tmp_path / "nothing.txt")
    (tmp_path / "empty.txt").write_text("\n")
    with pytest.raises(RecevalError, match="holds no run lines"):
        trec.read_run(tmp_path / "empty.txt")
    with pytest.raises(RecevalError, match="holds no judgements"):
        trec.read_qrels(tmp_path / "empty.txt")


def test_ids_with_whitespace_or_repeats_cannot_be_written(tmp_path):
    with pytest.raises(RecevalError) as excinfo:
        trec.write_run(tmp_path / "run.txt", {"my q": [("a b", 1.0), ("c", 0.5), ("c", 0.1)]}, tag="t")
    assert excinfo.value.problems == [
        "question id 'my q' cannot be written to a TREC file: ids must be non-empty and hold no whitespace",
        "document id (question 'my q') 'a b' cannot be written to a TREC file: ids must be non-empty "
        "and hold no whitespace",
        "question 'my q' ranks document 'c' twice; trec_eval refuses that",
    ]
    assert not (tmp_path / "run.txt").exists()
    with pytest.raises(RecevalError, match="run tag 'my tag'"):
        trec.write_run(tmp_path / "run.txt", {"q": [("a", 1.0)]}, tag="my tag")


# --------------------------------------------------------------------------- qrels files


def test_qrels_round_trip(tmp_path):
    qrels = {"q1": {"a": 3, "b": 0, "c": -1}, "q2": {"x": 1}}
    path = trec.write_qrels(tmp_path / "qrels.txt", qrels)
    assert path.read_text().splitlines()[0] == "q1 0 a 3"
    assert trec.read_qrels(path) == qrels


def test_bad_qrels_lines_are_named_by_file_and_line(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("q 0 a 1\nq 0 b\nq 0 c 1.5\nq 0 a 2\nq 0 a 1\n")
    path.write_bytes(path.read_bytes() + b"q 0 \xff 1\n")
    with pytest.raises(RecevalError) as excinfo:
        trec.read_qrels(path)
    assert excinfo.value.problems == [
        f"{path}:2: expected 4 columns 'qid 0 docid relevance', got 3",
        f"{path}:3: relevance must be an integer, got '1.5'",
        f"{path}:4: question 'q' judges document 'a' 2, but {path}:1 judges it 1; keep one judgement",
        f"{path}:6: not UTF-8 text (invalid start byte)",
    ]


# --------------------------------------------------------------------------- export


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A stored run on the built-in library (with unanswerable questions)."""
    return run_of(tmp_path_factory, "depth=10")


def test_export_writes_the_stored_order_and_labels(stored, tmp_path):
    run_file, qrels_file = export(stored, tmp_path / "run.txt", tmp_path / "qrels.txt", tag="lib")
    table = open_run(stored, skip=frozenset()).table.to_pydict()
    back = trec.read_run(run_file)
    for qid, retrieved, scores in zip(table["question_id"], table["retrieved"], table["scores"]):
        assert [doc for doc, _ in back.get(qid, [])] == retrieved
        got = [score for _, score in back.get(qid, [])]
        assert got == pytest.approx(scores, rel=1e-6)  # real scores kept, ties barely nudged
        single = [float(np.float32(s)) for s in scores]  # trec_eval reads float32
        assert sum(a != b for a, b in zip(got, single)) <= len(single) - len(set(single))
    qrels = trec.read_qrels(qrels_file)
    labelled = {q: dict(zip(r, g)) for q, r, g in zip(table["question_id"], table["relevant"], table["grades"]) if r}
    assert qrels == labelled
    assert len(labelled) < len(table["question_id"])  # unanswerable questions have no judgements


def test_export_default_tag_names_the_config(stored, tmp_path):
    run_file, qrels_file = export(stored, tmp_path / "run.txt")
    digest = open_run(stored, skip=frozenset()).metadata["config_hash"][:8]
    assert trec.run_tags(run_file) == [f"receval-{digest}"] and qrels_file is None


def test_export_command(stored, tmp_path):
    assert main([str(stored), "--trec", str(tmp_path / "r.txt"), "--qrels", str(tmp_path / "q.txt")]) == 0
    assert (tmp_path / "r.txt").is_file() and (tmp_path / "q.txt").is_file()


@pytest.mark.slow
def test_export_command_errors_exit_2_with_one_line(tmp_path):
    result = run_cli(str(tmp_path), "--trec", str(tmp_path / "r.txt"), cwd=tmp_path, command="export")
    assert result.returncode == 2
    assert result.stderr.startswith(f"receval: error: {tmp_path}: no results.parquet here")
    assert "Traceback" not in result.stderr
    with pytest.raises(SystemExit) as excinfo:
        main([str(tmp_path)])
    assert excinfo.value.code == 2
