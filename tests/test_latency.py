"""Latency and money with their spread in the report (issue 44): the order-statistic
interval of a quantile against scipy's, the report's latency verdicts by select's one
rule (a pipeline never faster than one it contains, said so when the clock disagrees),
the same verdicts on an identical sweep, and unanswerable questions left out of every
mean, latency and cost the header says they are left out of."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
import yaml
from scipy.stats import binom, quantile_test

from receval.analysis.latency import WITHIN_NOISE, latency_order
from receval.cli.report import report_for
from receval.core.settings import BootstrapConfig
from receval.render import report as rendered
from receval.render.costs import cost_table, latency_table
from receval.results import load_runs
from receval.results.manifest import seal
from receval.results.write import write_results, write_run_json
from receval.stats.bootstrap import confidence_interval
from receval.stats.quantiles import fewest_values, order_ranks, quantile_interval
from receval.run.written import label_facts

# ----------------------------------------------------------------- the interval of a quantile


@pytest.mark.parametrize("q", [0.5, 0.95, 0.1, 0.75])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_the_quantile_interval_is_scipy_quantile_test_s(q, level):
    rng = np.random.default_rng(7)
    for n in [*range(1, 90, 7), 250, 1000]:
        values = rng.lognormal(0.0, 1.0, n)
        found = quantile_interval(values, q, level)
        ci = quantile_test(values, q=0.0, p=q).confidence_interval(level)
        assert (found.lo, found.hi) == (None if np.isnan(ci.low) else ci.low, None if np.isnan(ci.high) else ci.high)
        assert found.value == pytest.approx(np.percentile(values, 100 * q))
        assert found.n == n


def test_the_median_of_ten_at_95_percent_is_between_the_2nd_and_9th_values():
    """Conover's table: for n = 10 the 95% interval of the median is [x(2), x(9)], its
    coverage 1 - 2 * P(Binomial(10, 0.5) <= 1) = 0.9785."""
    low, high = order_ranks(10, 0.5, 0.95)
    assert (low, high) == (1, 8)  # 0-based: the 2nd and the 9th smallest
    coverage = binom.cdf(high, 10, 0.5) - binom.cdf(low, 10, 0.5)
    assert coverage == pytest.approx(1 - 2 * binom.cdf(1, 10, 0.5)) and coverage == pytest.approx(0.978515625)
    found = quantile_interval(np.arange(10.0, 0.0, -1.0), 0.5, 0.95)  # any order: sorted first
    assert (found.value, found.lo, found.hi) == (5.5, 2.0, 9.0)


def test_the_coverage_is_at_least_the_level_and_an_end_needs_enough_values():
    for n in (6, 20, 72, 300):
        for q in (0.5, 0.95):
            low, high = order_ranks(n, q, 0.95)
            below = 0.0 if low is None else binom.cdf(low, n, q)  # P(the low end lies above the quantile)
            above = 1.0 if high is None else binom.cdf(high, n, q)
            assert above - below >= 0.95 - 1e-12
    assert fewest_values(0.95, 0.95) == 72 and fewest_values(0.5, 0.95) == 6
    assert order_ranks(71, 0.95, 0.95)[1] is None and order_ranks(72, 0.95, 0.95)[1] == 71
    assert order_ranks(5, 0.5, 0.95) == (None, None)
    assert quantile_interval([np.nan, np.inf], 0.5, 0.95) is None  # nothing timed


# ----------------------------------------------------------------- stored runs, written by hand

BM25 = {"kind": "bm25"}
TFIDF = {"kind": "tfidf"}
FUSED = {"kind": "fused", "members": [TFIDF, BM25], "fusion": {"kind": "rrf"}}
N = 40


def write_run(folder, retriever: dict, latency, *, rr=None, cost=None, n_calls=None, pairs=None):
    """A stored run of ``N`` questions (the last unanswerable: no rr) with these latencies
    and, optionally, per-question costs, search calls and pairs scored."""
    folder.mkdir(parents=True)
    n = len(latency)
    rr = [1.0] * (n - 1) + [None] if rr is None else rr
    columns = {
        "question_id": [f"q{i:02d}" for i in range(n)], "kind": ["direct"] * (n - 1) + ["unanswerable"],
        "split": ["dev"] * n, "question": [f"question {i}" for i in range(n)],
        "relevant": [["s1"]] * (n - 1) + [[]], "grades": [[1]] * (n - 1) + [[]],
        "retrieved": [["s1"]] * n, "scores": [[1.0]] * n,
        "first_relevant_rank": [1 if r else None for r in rr], "rr": rr, "hit@3": rr,
        "latency_ms": list(latency),
    }
    extra = {}
    if cost is not None:
        extra["cost_usd"] = list(cost)
    if pairs is not None:
        extra["pairs_scored"] = list(pairs)
    if n_calls is not None:
        columns["n_calls"] = list(n_calls)
    columns.update(extra)
    write_results(folder, columns, ["rr", "hit@3"], {"n_chunks": 100}, extra=list(extra))
    label = label_facts({"retriever": retriever})  # as the run writes it: members filled
    write_run_json(folder, {"n_chunks": 100, "n_questions": n, "stages": {"retrieve": {}}, "label": label})
    (folder / ".hydra").mkdir()
    (folder / ".hydra" / "config.yaml").write_text(yaml.safe_dump({"retriever": retriever}))
    seal(folder)
    return folder


def test_a_pipeline_is_never_shown_faster_than_one_it_contains(tmp_path):
    """The fusion of tfidf and bm25 measured faster than bm25 alone (the clock's noise):
    bm25 is shown faster than it all the same, the report says why in its header, the
    latency table's "faster than" and "vs" columns and the JSON agree."""
    rng = np.random.default_rng(0)
    write_run(tmp_path / "s" / "0", BM25, 0.40 * rng.lognormal(0, 0.1, N))
    write_run(tmp_path / "s" / "1", FUSED, 0.30 * rng.lognormal(0, 0.1, N))  # measured faster
    write_run(tmp_path / "s" / "2", TFIDF, 4.0 * rng.lognormal(0, 0.1, N))  # ten times slower than bm25
    report = report_for([str(tmp_path / "s"), "--baseline", "retriever=bm25", "--n-resamples", "400"])
    data = report.to_dict()
    verdicts = {(p["a"], p["b"]): (p["verdict"], p["step"]) for p in data["latency"]["pairs"]}
    # each member is part of the fusion; bm25 against tfidf is the clock's (ten times)
    assert verdicts == {(0, 1): ("faster", "stages"), (0, 2): ("faster", "clock"), (1, 2): ("slower", "stages")}
    assert report.latency.faster_than(0) == [1, 2] and report.latency.faster_than(1) == []
    conflicts = data["latency"]["conflicts"]  # the fusion measured faster than each of its members
    assert [c.split("'s p50")[0] for c in conflicts] == ["#1 rrf(tfidf+bm25)"] * 2
    assert ["is below #0 bm25's" in c for c in conflicts] == [True, False]
    assert "runs every stage of #0 and more: it is not faster, the difference is the clock's noise" in conflicts[0]
    assert "is below #2 tfidf's" in conflicts[1] and "runs every stage of #2 and more" in conflicts[1]
    text = rendered.render(report, "table")
    assert all(f"latency: {conflict}" in text.splitlines() for conflict in conflicts)
    table = latency_table(report)
    assert table.columns[-2:] == ["faster than", "vs #0"]
    assert [row[-2:] for row in table.rows] == [["#1 #2", "baseline"], ["-", "slower"], ["#1", "slower"]]
    assert "faster by select's latency rule: p50_ms: a run whose stages are part of another's" in table.note
    rows = list(csv.DictReader(io.StringIO(rendered.to_csv(report))))
    assert [r["latency_faster_than"] for r in rows] == ["1 2", "", "1"]
    assert [r["latency_vs_baseline"] for r in rows] == ["baseline", "slower", "slower"]


def test_an_identical_sweep_gives_the_same_latency_verdicts(tmp_path):
    """The sweep written five times, each with its own drift and jitter (a rerun on a
    busy machine): the verdicts are the same every time, whatever the clock said."""
    found = set()
    for seed in range(5):
        rng = np.random.default_rng(seed)
        centres = {"0": (BM25, 0.4), "1": ({**BM25, "k1": 0.9}, 0.4), "2": (FUSED, 0.45), "3": (TFIDF, 4.0)}
        for name, (retriever, centre) in centres.items():
            latency = centre * rng.lognormal(0, 0.15) * rng.lognormal(0, 0.2, N)  # the run's drift, each question's
            write_run(tmp_path / f"s{seed}" / name, retriever, latency)
        order = latency_order(load_runs([tmp_path / f"s{seed}"]), list("abcd"), "rr", BootstrapConfig(n_resamples=500))
        found.add(tuple((p.a, p.b, p.verdict) for p in order.pairs))
    (verdicts,) = found
    assert dict(((a, b), v) for a, b, v in verdicts) == {
        (0, 1): "within noise",  # the same stages (k1 changes no work)
        (0, 2): "faster", (1, 2): "faster",  # bm25 is part of the fusion
        (0, 3): "faster", (1, 3): "faster",  # ten times faster than tfidf by the clock
        (2, 3): "slower",  # the fusion holds tfidf: never faster than it, though this clock says so by far
    }


# ----------------------------------------------------------------- unanswerable questions left out


def test_unanswerable_questions_are_left_out_of_every_mean_latency_and_cost(tmp_path):
    """The last question is unanswerable (no rr) and costs a fortune, calls the search
    100 times and takes a second: the header leaves it out, and so do n_calls, the
    latency quantiles, pairs per question and money per 1,000 questions."""
    rng = np.random.default_rng(3)
    latency = np.append(rng.uniform(1.0, 2.0, N - 1), 1000.0)
    cost = np.append(rng.uniform(0.001, 0.002, N - 1), 5.0)
    n_calls = [2] * (N - 1) + [100]
    pairs = [10.0] * (N - 1) + [100.0]
    run = write_run(tmp_path / "r", BM25, latency, cost=cost, n_calls=n_calls, pairs=pairs)
    report = report_for([str(run), "--metrics", "rr,n_calls"])
    (summary,) = report.runs
    assert report.questions["n_unanswerable"] == 1 and summary.n_unanswerable == 1
    assert summary.metrics["n_calls"].mean == 2.0
    assert summary.latency["p95"].value == pytest.approx(np.percentile(latency[:-1], 95))
    assert summary.latency_p50 == pytest.approx(np.median(latency[:-1]))
    assert summary.costs["pairs_per_question"] == 10.0
    assert summary.costs["usd_per_1000"] == pytest.approx(1000 * cost[:-1].mean())
    boot = report.boot
    expected = confidence_interval(1000 * cost[:-1], **boot.kwargs())
    assert summary.costs["usd_per_1000_ci"] == pytest.approx([expected.lo, expected.hi], rel=1e-9)
    lo, hi = summary.costs["usd_per_1000_ci"]
    assert lo < summary.costs["usd_per_1000"] < hi
    data = json.loads(rendered.render(report, "json"))["runs"][0]
    assert data["latency_ms"]["n"] == N - 1 and data["latency_ms"]["repeats"] == 1
    assert data["latency_ms"]["p50_ci"] == [summary.latency["p50"].lo, summary.latency["p50"].hi]
    table = cost_table(report)
    assert table.columns[-3:] == ["pairs / q", "$ / 1k q", "$ 95% CI"] and table.rows[0][-3] == "10.0"


# ----------------------------------------------------------------- a real sweep, twice

PIPELINES = [["retriever=bm25"], ["retriever=bm25", "retriever.k1=0.9"], ["retriever=fused"],
             ["retriever=bm25", "transform=rm3"]]


@pytest.mark.slow  # eight runs composed through Hydra and timed
def test_two_identical_sweeps_give_the_same_latency_verdicts_and_no_container_is_faster(tmp_path):
    """A fast stand-in for ``+experiment=stages`` (no model): bm25, bm25 at another k1
    (the same stages), their fusion with tfidf (holds bm25, as hybrid holds keyword) and
    RM3 over bm25 (holds it too), swept twice in-process. The reports' latency verdicts
    agree where the stages decide, a clock verdict never reverses, and no pipeline is ever
    shown faster than one whose stages are part of its own."""
    from hydra import compose, initialize_config_dir

    from receval.analysis.choice import stage_tree
    from receval.run.config import config_dir
    from receval.run.pipeline import run
    from receval.stats.cheaper import part_of

    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        for sweep in ("a", "b"):
            for job, overrides in enumerate(PIPELINES):
                run(compose("config", overrides=overrides), tmp_path / sweep / str(job))
    found = []
    for sweep in ("a", "b"):
        report = report_for([str(tmp_path / sweep)])
        labels = [run.label for run in report.runs]
        verdicts = {(labels[p.a], labels[p.b]): p.verdict for p in report.latency.pairs}
        found.append(verdicts)
        trees = [stage_tree(run) for run in load_runs([tmp_path / sweep])]
        for i, j in ((i, j) for i in range(len(trees)) for j in range(len(trees)) if i != j):
            if part_of(trees[i], trees[j]):  # j holds i's stages: i is faster, j never is
                assert report.latency.verdict(i, j) == "faster" and report.latency.verdict(j, i) == "slower"
                assert j in report.latency.faster_than(i) and i not in report.latency.faster_than(j)
    # what the stages decide agrees exactly (above); a clock verdict (fused against RM3 over bm25,
    # 2.4x apart when quiet) never reverses, though a sweep timed under other load may not show it
    for pair, verdict in found[0].items():
        assert verdict == found[1][pair] or WITHIN_NOISE in (verdict, found[1][pair]), (pair, found)
    bm25, other_k1, fused, rm3 = labels
    assert found[0][(bm25, other_k1)] == "within noise"  # k1 changes no work: the same stages tie
    assert found[0][(bm25, fused)] == found[0][(bm25, rm3)] == "faster"  # part of each


def test_by_kind_leaves_the_unanswerable_question_out_of_n_calls_too(tmp_path):
    n_calls = [2] * (N - 1) + [100]
    run = write_run(tmp_path / "r", BM25, np.ones(N), n_calls=n_calls)
    by = report_for([str(run), "--by", "split", "--by-metric", "n_calls"]).by
    assert by.counts == [N - 1] and by.cells[0][0].mean == 2.0
