"""Judgment holes (issue 25): judged@k against trec_eval's judged-only view on Cranfield,
and the report's notes on runs scored mostly on unlabelled units."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import SHARED, run_of
from receval.analysis.holes import LOW_JUDGED, judged_cautions
from receval.results import read_run
from receval.results.external import read_labels

pytrec_eval = pytest.importorskip("pytrec_eval")
CRANFIELD = SHARED / "datasets" / "cranfield"


@pytest.mark.slow  # a whole collection
@pytest.mark.skipif(not CRANFIELD.is_dir(), reason=f"shared test collection absent: {CRANFIELD}")
def test_judged_at_k_equals_trec_eval_judged_view_on_cranfield(tmp_path_factory):
    run_dir = run_of(
        tmp_path_factory, "dataset=beir", f"dataset.path={CRANFIELD}", "dataset.split=test", "retriever=bm25",
        "chunking.max_words=null", "depth=10", "metrics.ks=[1,3,5,10]",
    )
    table = read_run(run_dir).table.to_pydict()
    qrels = read_labels(CRANFIELD / "qrels" / "test.tsv")
    qids = table["question_id"]
    assert len(qids) == 225
    for k in (1, 3, 5, 10):
        # trec_eval -J: only judged documents are kept; num_ret of the top k is then the judged count
        cut = {q: {d: float(k - i) for i, d in enumerate(r[:k])} for q, r in zip(qids, table["retrieved"])}
        theirs = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in qids}, {"num_ret"},
                                                judged_docs_only_flag=True).evaluate(cut)
        expected = [theirs.get(q, {}).get("num_ret", 0) / k for q in qids]
        np.testing.assert_allclose(table[f"judged@{k}"], expected, rtol=0, atol=1e-12, err_msg=f"judged@{k}")
    # about 7 judged documents per query: BM25's top 10 is roughly a quarter judged
    assert 0.15 < np.mean(table["judged@10"]) < 0.5


def test_report_notes_low_and_uneven_judged(tmp_path_factory):
    """The built-in questions label one or two sections each: judged@10 is at most their
    count / 10."""
    run = read_run(run_of(tmp_path_factory, "depth=10", "metrics.ks=[1,10]"))
    n_labels = np.asarray([len(r) for r in run.strings("relevant")], dtype=float)
    judged = run.values("judged@10")
    assert (judged[n_labels > 0] <= n_labels[n_labels > 0] / 10 + 1e-12).all() and np.nanmean(judged) < 0.15
    notes = judged_cautions([run], ["bm25"])
    assert len(notes) == 1 and notes[0].startswith(f"judged@10 below {LOW_JUDGED} (#0 bm25 0.")
    # a second run whose top 10 is all labelled: far fewer unlabelled units
    import pyarrow as pa

    full = run.filtered(run.table.set_column(run.table.column_names.index("judged@10"), "judged@10",
                                             pa.array([1.0] * run.table.num_rows)))
    notes = judged_cautions([run, full], ["a", "b"])
    assert any(n.startswith("#0 a retrieved far more unlabelled units than #1 b") for n in notes)
    assert judged_cautions([full], ["b"]) == []
