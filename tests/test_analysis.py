"""The report's pieces, each on its own (receval.analysis): what ``receval
report`` composes is load -> questions kept -> derived measures -> measure
names and floors -> summaries -> pairs / chain / ``--by`` / per-question ranks / gate.
Each is checked here against numbers worked from the stored per-question columns."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import run_of

from receval import analysis
from receval.analysis import filters
from receval.analysis.breakdown import by_table, ranks_per_question
from receval.analysis.chain import chain_pairs
from receval.analysis.derived import rr_at, with_derived
from receval.analysis.gate import gate_runs, split_baseline
from receval.analysis.pairs import paired
from receval.analysis.settings import bootstrap_settings
from receval.analysis.summary import check_floors, failures, measure_names, question_counts, summaries
from receval.core.errors import RecevalError
from receval.results.labels import naming_of


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three stored runs over the built-in library: tfidf, bm25, bm25 at 120 words."""
    dirs = [
        run_of(tmp_path_factory, "retriever=tfidf"),
        run_of(tmp_path_factory, "retriever=bm25"),
        run_of(tmp_path_factory, "retriever=bm25", "chunking.max_words=120"),
    ]
    return analysis.load(*dirs)


def scored(run, name, split=None):
    values = run.values(name)
    keep = ~np.isnan(values)
    if split is not None:
        keep &= np.asarray([s == split for s in run.strings("split")])
    return values[keep]


@pytest.mark.slow
def test_filter_questions_keeps_the_rows_every_pair_names(runs):
    (test,) = filters.filter_questions(runs[:1], [("split", "test")])
    assert set(test.strings("split")) == {"test"}
    assert test.table.num_rows == sum(s == "test" for s in runs[0].strings("split"))
    (both,) = filters.filter_questions(runs[:1], [("split", "test"), ("kind", "direct")])
    assert both.table.num_rows == sum(
        (s, k) == ("test", "direct") for s, k in zip(runs[0].strings("split"), runs[0].strings("kind"))
    )
    with pytest.raises(RecevalError, match=r"^where colour=red: no column 'colour' in "):
        filters.filter_questions(runs[:1], [("colour", "red")])


def test_rr_at_k_is_rr_within_the_cutoff_and_zero_beyond():
    rr = np.array([1.0, 0.5, 0.25, np.nan, 0.0])
    rank = np.array([1, 2, 4, np.nan, np.nan])
    assert np.array_equal(rr_at(rr, rank, 3), np.array([1.0, 0.5, 0.0, np.nan, 0.0]), equal_nan=True)


@pytest.mark.slow
def test_derived_column_is_added_once_per_run(runs):
    (run,) = with_derived(runs[:1], ["rr@3"], option="metrics")
    expected = rr_at(runs[0].values("rr"), runs[0].values("first_relevant_rank"), 3)
    assert np.array_equal(run.values("rr@3"), expected, equal_nan=True)


@pytest.mark.slow
def test_measure_names_are_canonical_and_errors_name_the_option(runs):
    names, metric = measure_names(runs, ["MRR", "hit@3"], "MRR")
    assert (names, metric) == (["rr", "hit@3"], "rr")
    with pytest.raises(RecevalError, match=r"^--metrics: unknown measure 'nope'"):
        measure_names(runs, ["nope"], "rr", metrics_option="--metrics")


@pytest.mark.slow
def test_floors_are_checked_by_canonical_name(runs):
    assert check_floors({"MRR": 0.5, "hit@3": 0.7}, runs) == {"rr": 0.5, "hit@3": 0.7}
    with pytest.raises(RecevalError, match=r"^floors rr=0.6: rr is given twice"):
        check_floors({"MRR": 0.5, "rr": 0.6}, runs)


def test_summaries_hold_each_runs_means_and_intervals(runs):
    boot = bootstrap_settings(runs)
    found = summaries(runs, ["rr", "hit@3"], "rr", boot, naming_of(runs))
    assert [s.run_dir for s in found] == [str(r.run_dir) for r in runs]
    for run, summary in zip(runs, found):
        for name in ("rr", "hit@3"):
            interval = summary.metrics[name]
            assert interval.mean == pytest.approx(scored(run, name).mean(), abs=1e-12)
            assert interval.lo <= interval.mean <= interval.hi
        assert summary.n_questions == len(scored(run, "rr"))
    worst = min(range(len(runs)), key=lambda i: found[i].metrics["rr"].mean)
    lines = failures(found, {"rr": found[worst].metrics["rr"].mean + 1e-9})
    assert len(lines) == 1 and lines[0].startswith(f"#{worst} {found[worst].label}: rr ")
    counts = question_counts(runs, "rr")
    assert (counts["n_scored"], counts["same_questions"]) == (len(scored(runs[0], "rr")), True)


def test_pairs_and_the_chain_are_means_of_per_question_differences(runs):
    boot = bootstrap_settings(runs)
    pairs = paired(runs[0], runs[1:], "rr", boot)
    chain = chain_pairs(runs, "rr", boot)
    assert [(p.a, p.b) for p in chain] == [(str(runs[0].run_dir), str(runs[1].run_dir)),
                                           (str(runs[1].run_dir), str(runs[2].run_dir))]
    assert chain[0].diff.mean == pairs[0].diff.mean
    for pair, (a, b) in zip(chain, zip(runs, runs[1:])):
        diff = b.values("rr") - a.values("rr")  # same questions, same order
        diff = diff[~np.isnan(diff)]
        assert pair.diff.mean == pytest.approx(diff.mean(), abs=1e-12)
        assert (pair.up, pair.down, pair.same) == (int((diff > 0).sum()), int((diff < 0).sum()), int((diff == 0).sum()))
        assert pair.diff.lo <= pair.diff.mean <= pair.diff.hi


def test_by_table_has_one_interval_per_value_equal_to_that_values_mean(runs):
    table = by_table(runs, "split", "rr", bootstrap_settings(runs))
    assert sorted(table.values) == ["dev", "test"]
    for r, run in enumerate(runs):
        for j, value in enumerate(table.values):
            assert table.cells[r][j].mean == pytest.approx(scored(run, "rr", value).mean(), abs=1e-12)
    assert table.counts == [len(scored(runs[0], "rr", v)) for v in table.values]


def test_ranks_per_question_are_the_stored_first_relevant_ranks(runs):
    rows = ranks_per_question(runs)
    assert len(rows) == len(scored(runs[0], "rr"))
    rank_of = [dict(zip(run.ids, run.values("first_relevant_rank"))) for run in runs]
    for row in rows:
        for r, rank in enumerate(row.ranks):
            stored = rank_of[r][row.question_id]
            assert (rank is None) == np.isnan(stored) and (rank is None or rank == stored)
        assert row.missed_by_all == all(rank is None for rank in row.ranks)


def test_the_gate_pairs_one_run_with_its_baseline(runs):
    rest, baseline = split_baseline(runs[:2], "retriever=tfidf")
    assert baseline is runs[0] and rest == [runs[1]]
    gate = gate_runs(rest[0], baseline, "rr", bootstrap_settings(runs), margin=1.0)
    diff = runs[1].values("rr") - runs[0].values("rr")
    assert gate.diff.mean == pytest.approx(np.nanmean(diff), abs=1e-12) and gate.passed
    with pytest.raises(RecevalError, match=r"^baseline retriever=tfidf: gate one run against it, not 2"):
        split_baseline(runs, "retriever=tfidf")
