"""Warnings that mean something (issue 37): the report header's counts add up, and
``report --plot`` keeps the sweep's or experiment's order (never alphabetical)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from conftest import run_of

from receval.analysis.summary import question_counts
from receval.render.plots import axis_values
from receval.results import open_run


@pytest.mark.slow  # one run, in-process
def test_header_counts_by_kind_and_by_split_add_up_to_the_questions_scored(tmp_path_factory):
    run = open_run(run_of(tmp_path_factory, "depth=10"), skip=frozenset())
    counts = question_counts([run], "hit@3")
    assert counts["n_unanswerable"] > 0  # the built-in set has unanswerable questions, left out
    assert sum(counts["kinds"].values()) == sum(counts["splits"].values()) == counts["n_scored"]
    assert counts["n_scored"] + counts["n_unanswerable"] == counts["n_questions"]


def test_plot_axes_keep_the_runs_order_and_sort_numbers():
    runs = [SimpleNamespace(params={"stage": s, "chunking.max_words": w})
            for s, w in (("keyword", 120), ("vector", 40), ("hybrid", 120), ("hybrid_rerank", 3), ("vector", 3))]
    assert axis_values(runs, "stage") == ["keyword", "vector", "hybrid", "hybrid_rerank"]  # the experiment's order
    assert axis_values(runs, "chunking.max_words") == [3, 40, 120]  # a number axis ascends
    mixed = [SimpleNamespace(params={"k1": 1.2}), SimpleNamespace(params={}), SimpleNamespace(params={"k1": 0.9})]
    assert axis_values(mixed, "k1") == [1.2, "-", 0.9]  # a run without the setting: the runs' order
