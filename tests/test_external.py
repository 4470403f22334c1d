"""An external TREC run beside stored runs: scored by receval's own measures."""

from __future__ import annotations

import pytest
from conftest import run_cli, run_of

from receval.core.errors import RecevalError
from receval.results.external import export
from receval.results.external import read_labels, trec_run_table
from receval.cli.report import report_for
from receval.render import report as rendered
from receval.results import open_run


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    return run_of(tmp_path_factory, "retriever=tfidf")


def test_our_own_exported_run_scores_identically(stored, tmp_path):
    run_file, qrels_file = export(stored, tmp_path / "run.trec", tmp_path / "qrels.txt", tag="mine")
    report = report_for([str(stored), str(run_file), "--qrels", str(qrels_file), "--baseline", str(stored)]).to_dict()
    ours, theirs = report["runs"]
    assert theirs["params"]["retriever"] == "mine (TREC run)"
    for name, value in ours["metrics"].items():
        assert theirs["metrics"][name] == value  # same mean, same interval
    (pair,) = report["pairs"]
    assert pair["diff"] == 0 and pair["fixed"] == [] and pair["broken"] == []


def test_a_reversed_run_is_scored_by_hand(stored, tmp_path):
    table = open_run(stored, skip=frozenset()).table.to_pylist()
    lines = []
    for row in table:
        for rank, doc in enumerate(reversed(row["retrieved"]), start=1):
            lines.append(f"{row['question_id']} Q0 {doc} {rank} {100 - rank} other")
    run_file = tmp_path / "other.trec"
    run_file.write_text("\n".join(lines) + "\n")
    _, qrels_file = export(stored, tmp_path / "ignored.trec", tmp_path / "qrels.txt")
    scored = trec_run_table(run_file, qrels_file, depth=10, measures=["rr", "hit@3"]).to_pylist()
    by_id = {r["question_id"]: r for r in table if r["relevant"]}
    assert {r["question_id"] for r in scored if r["rr"] is not None} == set(by_id)
    assert {r["question_id"] for r in scored if r["rr"] is None} == {r["question_id"] for r in table if not r["relevant"]}
    for row in (r for r in scored if r["rr"] is not None):
        reversed_list = list(reversed(by_id[row["question_id"]]["retrieved"]))
        ranks = [i + 1 for i, d in enumerate(reversed_list) if d in by_id[row["question_id"]]["relevant"]]
        assert row["rr"] == pytest.approx(1 / ranks[0] if ranks else 0.0)
        assert row["hit@3"] == float(bool(ranks) and ranks[0] <= 3)


def test_beir_tsv_qrels_and_errors(tmp_path):
    tsv = tmp_path / "test.tsv"
    tsv.write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\n")
    assert read_labels(tsv) == {"q1": {"d1": 2, "d2": 0}}
    tsv.write_text("query-id\tcorpus-id\tscore\nq1\td1\tlots\n")
    with pytest.raises(RecevalError, match=r"test.tsv:2: expected 3 tab-separated columns 'query-id corpus-id score'"):
        read_labels(tsv)
    with pytest.raises(RecevalError, match="file not found"):
        read_labels(tmp_path / "none.tsv")


@pytest.mark.parametrize("layout", ["beir", "trec"])
def test_conflicting_judgements_name_the_file_both_lines_and_the_pair(tmp_path, layout):
    """A pair judged 2 on one line and 0 on another is an error, not the last line silently winning."""
    if layout == "beir":
        path = tmp_path / "test.tsv"
        path.write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t1\nq1\td1\t0\n")
        expected = f"{path}:4: query 'q1' judges document 'd1' 0, but line 2 judges it 2; keep one judgement"
    else:
        path = tmp_path / "qrels.txt"
        path.write_text("q1 0 d1 2\nq1 0 d2 1\nq1 0 d1 0\n")
        expected = f"{path}:3: question 'q1' judges document 'd1' 0, but {path}:1 judges it 2; keep one judgement"
    with pytest.raises(RecevalError) as raised:
        read_labels(path)
    assert raised.value.problems == [expected]


@pytest.mark.slow
def test_a_run_file_without_qrels_is_a_clear_error(stored, tmp_path):
    run_file, _ = export(stored, tmp_path / "run.trec")
    done = run_cli(str(stored), str(run_file), cwd=tmp_path, command="report")
    assert done.returncode == 2 and "--qrels FILE" in done.stderr and "Traceback" not in done.stderr


def test_bpref_of_an_external_run_reads_the_score_zero_judgements(tmp_path):
    """Judged non-relevant documents, retrieved or not, enter bpref as trec_eval's."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels = {
        "q1": {"a": 1, "b": 0, "c": 2, "d": 0, "e": 0, "z": 1},
        "q2": {"a": 0, "f": 1, "g": 0},
        "q3": {"h": 1},
    }
    run = {"q1": ["b", "a", "x", "d", "c"], "q2": ["a", "g", "f"], "q3": ["y", "h"]}
    tsv = tmp_path / "qrels.tsv"
    tsv.write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{g}\n" for q, judged in qrels.items() for d, g in judged.items()
    ))
    run_file = tmp_path / "run.trec"
    run_file.write_text("".join(
        f"{q} Q0 {d} {rank} {10 - rank} sys\n" for q, docs in run.items() for rank, d in enumerate(docs, start=1)
    ))
    scored = {r["question_id"]: r for r in trec_run_table(run_file, tsv, depth=10, measures=["bpref", "ap", "rprec"]).to_pylist()}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"bpref", "map", "Rprec"}).evaluate(
        {q: {d: float(10 - rank) for rank, d in enumerate(docs, start=1)} for q, docs in run.items()}
    )
    for q in qrels:
        assert scored[q]["bpref"] == pytest.approx(theirs[q]["bpref"], abs=1e-12)
        assert scored[q]["ap"] == pytest.approx(theirs[q]["map"], abs=1e-12)
        assert scored[q]["rprec"] == pytest.approx(theirs[q]["Rprec"], abs=1e-12)
    # q1: a has 1 judged non-relevant above it, c has 2; R = 3, N = 3: (2/3 + 1/3) / 3
    assert scored["q1"]["bpref"] == pytest.approx(1 / 3)


def test_report_reads_map_rprec_and_bpref(stored):
    """``--metrics map`` is the stored ``ap`` (MAP as its mean); the table names it MAP."""
    report = report_for([str(stored), "--metrics", "map,rprec,bpref,ap@3"])
    data = report.to_dict()
    assert data["metrics"] == ["ap", "rprec", "bpref", "ap@3", "rr"]
    table = open_run(stored, skip=frozenset()).table.to_pydict()
    scored = [v for v in table["ap"] if v is not None]
    assert data["runs"][0]["metrics"]["ap"]["mean"] == pytest.approx(sum(scored) / len(scored))
    text = rendered.render(report, "markdown")
    assert "MAP" in text and "MAP@3" in text and "R-prec" in text
