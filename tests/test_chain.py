"""report --chain (each run against the one before it) and fixed@k / broken@k following the metric."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import exit_code, run_of

from receval.cli.report import main, report_for
from receval.results.format import RESULTS


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    return [run_of(tmp_path_factory, f"retriever={kind}") for kind in ("tfidf", "bm25", "fused")]


def rows_of(run_dir):
    return {row["question_id"]: row for row in pq.read_table(run_dir / RESULTS).to_pylist()}


@pytest.mark.slow
def test_chain_pairs_each_run_with_the_one_before(three):
    report = report_for([*map(str, three), "--metric", "hit@3", "--chain"])
    assert [(step.a, step.b) for step in report.chain] == [(str(three[0]), str(three[1])), (str(three[1]), str(three[2]))]
    for step, (before, after) in zip(report.chain, zip(three, three[1:])):
        a, b = rows_of(before), rows_of(after)
        scored = [q for q in a if a[q]["hit@3"] is not None]
        diff = [b[q]["hit@3"] - a[q]["hit@3"] for q in scored]
        assert step.diff.mean == pytest.approx(np.mean(diff))
        assert step.diff.lo <= step.diff.mean <= step.diff.hi
        # fixed@3: hit@3 0 before, 1 after; broken@3 the reverse (so fixed are "up", broken "down")
        assert step.fixed == [q for q in scored if a[q]["hit@3"] == 0 and b[q]["hit@3"] > 0]
        assert step.broken == [q for q in scored if a[q]["hit@3"] > 0 and b[q]["hit@3"] == 0]
        assert len(step.fixed) <= step.up and len(step.broken) <= step.down
    assert report.to_dict()["chain"][0]["fixed_at"] == 3


@pytest.mark.slow
def test_rr_fixed_means_first_at_rank_1(three):
    step = report_for([*map(str, three[:2]), "--chain"]).chain[0]
    a, b = rows_of(three[0]), rows_of(three[1])
    scored = [q for q in a if a[q]["rr"] is not None]
    assert step.fixed == [q for q in scored if b[q]["first_relevant_rank"] == 1 and a[q]["first_relevant_rank"] != 1]


@pytest.mark.slow
def test_chain_table_names_fixed_at_k(three, capsys):
    assert exit_code(main, [*three, "--chain", "--metric", "hit@3"]) == 0
    out = capsys.readouterr().out
    assert "Stage by stage" in out and "fixed@3" in out and "broken@3" in out
    assert "#0 -> #1" in out and "#1 -> #2" in out
