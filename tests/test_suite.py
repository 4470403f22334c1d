"""report --suite: runs of the same configurations over several collections, grouped by
dataset fingerprint; per-collection and pooled differences, two-level bootstrap standing."""

from __future__ import annotations

import json

import numpy as np
import pytest

from receval import analysis
from receval.analysis.suite import suite
from receval.cli import report as report_cli
from receval.run.config import BootstrapConfig
from receval.core.errors import RecevalError
from receval.stats.bootstrap import bootstrap_means, percentile_bounds
from receval.stats.meta import pool
from receval.stats.suite import borda_points, suite_standing
from conftest import FIXTURES, exit_code, sweep_in_process

COLLECTIONS = {
    "library": [],
    "site": ["dataset=folder", f"dataset.path={FIXTURES / 'site'}"],
    "beir-splits": ["dataset=beir", f"dataset.path={FIXTURES / 'beir-splits'}"],
}


@pytest.fixture(scope="module")
def suite_root(tmp_path_factory):
    """bm25 and tfidf, 20 and 120 words, on three collections, made in-process: one sweep
    folder per collection."""
    root = tmp_path_factory.mktemp("suite")
    for name, overrides in COLLECTIONS.items():
        sweep_in_process(root / name, ["retriever=bm25", "retriever=tfidf"],
                         ["chunking.max_words=120", "chunking.max_words=20"], *([o] for o in overrides))
    return root


@pytest.fixture(scope="module")
def runs(suite_root):
    return analysis.load(suite_root)


@pytest.mark.slow
def test_runs_are_grouped_by_collection_and_configuration(runs):
    s = suite(runs, "rr", BootstrapConfig(n_resamples=400))
    assert s.labels == ["bm25 max_words=120", "bm25 max_words=20", "tfidf max_words=120", "tfidf max_words=20"]
    assert sorted(c.name for c in s.collections) == sorted(COLLECTIONS)
    assert len({c.fingerprint for c in s.collections}) == 3
    assert s.baseline == 0 and s.pooled[0] is None


@pytest.mark.slow
def test_differences_are_the_mean_paired_differences_and_pool_them(runs):
    s = suite(runs, "rr", BootstrapConfig(n_resamples=400))
    diffs = []
    for c in s.collections:
        base, other = (analysis.load(d)[0] for d in c.run_dirs[:2])
        a, b = base.values("rr"), other.values("rr")
        keep = ~np.isnan(a) & ~np.isnan(b)
        assert c.means[0].mean == pytest.approx(a[keep].mean(), abs=1e-12)
        diffs.append(b[keep] - a[keep])
    # tfidf and bm25 rank the fixture's BEIR documents alike: a variance of 0, floored at
    # the smallest positive per-question variance of the other collections
    per_question = [d.var(ddof=1) for d in diffs]
    assert per_question.count(0.0) == 1 and any("score every question alike" in n for n in s.notes)
    floor = min(v for v in per_question if v > 0)
    variances = [max(v, 0.0) if v > 0 else floor for v in per_question]
    for c, d, v in zip(s.collections, diffs, variances):
        assert c.diffs[1].mean == pytest.approx(d.mean(), abs=1e-12)
        assert c.diffs[1].se == pytest.approx(np.sqrt(v / d.size), abs=1e-12)
    assert s.pooled[1] == pool([d.mean() for d in diffs], [v / d.size for d, v in zip(diffs, variances)], 0.95)
    mean_over = np.mean([[m.mean for m in c.means] for c in s.collections], axis=0)
    assert [m.mean for m in s.standing.mean] == pytest.approx(list(mean_over), abs=1e-12)
    assert analysis.suite_report(runs, "MRR").to_dict()["configurations"][1]["pooled_vs_baseline"]["estimate"] == (
        pytest.approx(s.pooled[1].estimate, abs=1e-12))


@pytest.mark.slow
def test_baseline_picks_a_configuration_and_an_incomplete_grid_is_named(runs, suite_root):
    s = suite(runs, "rr", BootstrapConfig(n_resamples=200), baseline="retriever=tfidf,max_words=120")
    assert s.baseline == 2 and s.pooled[2] is None and s.pooled[0] is not None
    with pytest.raises(RecevalError, match="matches 2 configurations"):
        suite(runs, "rr", BootstrapConfig(n_resamples=200), baseline="retriever=tfidf")
    with pytest.raises(RecevalError, match="matches no configuration"):
        suite(runs, "rr", BootstrapConfig(n_resamples=200), baseline="retriever=dense")
    without = [r for r in runs if not (r.run_dir.parent.name == "site" and r.run_dir.name == "2")]
    with pytest.raises(RecevalError, match="needs one run on every collection; site has no run like"):
        suite(without, "rr", BootstrapConfig(n_resamples=200))
    one = [r for r in runs if r.run_dir.parent.name == "site"]
    with pytest.raises(RecevalError, match="all on one collection"):
        suite(one, "rr", BootstrapConfig(n_resamples=200))


@pytest.mark.slow
def test_the_command_prints_json_and_draws_the_forest_plot(suite_root, tmp_path, capsys):
    out, plot = tmp_path / "suite.json", tmp_path / "forest.png"
    code = report_cli.main([str(suite_root), "--suite", "--format", "json", "--out", str(out), "--plot", str(plot),
                            "--n-resamples", "300"])
    assert code == 0
    data = json.loads(out.read_text())
    assert [c["label"] for c in data["configurations"]][::2] == ["bm25 max_words=120", "tfidf max_words=120"]
    pooled = data["configurations"][1]["pooled_vs_baseline"]
    assert pooled["k"] == 3 and 0 <= pooled["i2"] <= 1 and pooled["lo"] <= pooled["estimate"] <= pooled["hi"]
    assert {c["name"] for c in data["collections"]} == set(COLLECTIONS)
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = tmp_path / "suite.html"
    assert report_cli.main([str(suite_root), "--suite", "--format", "html", "--out", str(html), "--n-resamples", "300"]) == 0
    page = html.read_text()
    assert "pooled (random" in page and "<svg" in page
    assert report_cli.main([str(suite_root), "--suite", "--n-resamples", "300"]) == 0
    printed = capsys.readouterr().out
    assert "pooled, random (k=3)" in printed and "Borda" in printed
    csv = tmp_path / "suite.csv"
    assert report_cli.main([str(suite_root), "--suite", "--format", "csv", "--out", str(csv), "--n-resamples", "300"]) == 0
    rows = csv.read_text().splitlines()
    assert rows[0].startswith("configuration,collection,dataset_fingerprint") and sum("pooled_random" in r for r in rows) == 3


@pytest.mark.slow
def test_suite_refuses_flags_it_does_not_take(suite_root, capsys):
    assert exit_code(report_cli.main, [str(suite_root), "--suite", "--chain"]) == 2
    assert "--chain is not taken with --suite" in capsys.readouterr().err


# ---------------------------------------------------------------- the two-level bootstrap


def test_borda_points_count_runs_beaten_and_half_ties():
    assert borda_points([0.3, 0.1, 0.3, 0.0]).tolist() == [2.5, 1.0, 2.5, 0.0]


def test_one_collection_is_the_bootstrap_over_its_questions():
    rng = np.random.default_rng(3)
    mat = rng.random((40, 3))
    st = suite_standing([mat], n_resamples=500, seed=7)
    from receval.stats.suite import _seed

    inner = bootstrap_means(mat, n_resamples=500, seed=_seed(7, 0))
    assert [(m.lo, m.hi) for m in st.mean] == percentile_bounds(inner, 0.95)


def test_two_level_resamples_match_a_loop_over_copies():
    """Per resample: the copies drawn of each collection, each its own question draw."""
    from receval.stats.suite import _seed

    rng = np.random.default_rng(5)
    mats = [rng.random((n, 3)) + shift for n, shift in ((15, 0.0), (25, 0.2), (9, -0.1))]
    B, seed, k = 60, 11, 3
    st = suite_standing(mats, n_resamples=B, seed=seed)
    draw = np.random.default_rng(np.random.SeedSequence([seed, k])).integers(0, k, size=(B, k))
    copies = np.stack([(draw == c).sum(axis=1) for c in range(k)], axis=1)
    inner = [bootstrap_means(m, n_resamples=B * max(1, copies[:, c].max()), seed=_seed(seed, c))
             .reshape(B, max(1, copies[:, c].max()), 3) for c, m in enumerate(mats)]
    means, borda = np.zeros((B, 3)), np.zeros((B, 3))
    for b in range(B):
        for c in range(k):
            for j in range(copies[b, c]):
                means[b] += inner[c][b, j] / k
                borda[b] += borda_points(inner[c][b, j])
    ours = np.array([(m.lo, m.hi) for m in st.mean])
    assert np.allclose(ours, percentile_bounds(means, 0.95), rtol=0, atol=1e-12)
    assert [(m.lo, m.hi) for m in st.borda] == percentile_bounds(borda, 0.95)


def test_a_run_better_on_every_question_everywhere_ranks_first_surely():
    rng = np.random.default_rng(1)
    mats = []
    for n in (30, 50, 20):
        base = rng.random((n, 1))
        mats.append(np.hstack([base, base + 0.2, base + 0.1]))
    st = suite_standing(mats, n_resamples=300)
    assert [(r.rank, r.lo, r.hi) for r in st.borda_rank] == [(3, 3, 3), (1, 1, 1), (2, 2, 2)]
    assert st.borda[1].mean == 6.0 and (st.borda[1].lo, st.borda[1].hi) == (6.0, 6.0)


# ---------------------------------------------------------------- select --suite


@pytest.mark.slow
def test_select_on_a_suite_chooses_on_the_pooled_effect_and_says_so(runs, suite_root, capsys):
    from receval.analysis.suite_choice import choose_on_suite
    from receval.cli import select as select_cli

    boot = BootstrapConfig(n_resamples=300)
    sel = choose_on_suite(runs, "rr", "chunks", None, boot)
    first = suite(runs, "rr", boot)
    effects = [0.0 if p is None else p.estimate for p in first.pooled]
    assert sel.leader == int(np.argmax(effects)) and sel.chosen == sel.leader  # no margin: the leader
    assert sel.suite.baseline == sel.leader
    for c in sel.candidates:
        if c.index != sel.leader:  # each configuration against the leader, pooled
            assert c.pooled == suite(runs, "rr", boot, baseline=sel.leader).pooled[c.index]
    # a margin as wide as the metric: every cheaper configuration is shown not worse, the cheapest chosen
    wide = choose_on_suite(runs, "rr", "chunks", 1.0, boot)
    lead = wide.candidates[wide.leader]
    assert [c.cheaper for c in wide.candidates] == [c.cost < lead.cost for c in wide.candidates]
    cheaper = [c for c in wide.candidates if c.cheaper]
    assert all(c.qualifies and c.contender for c in cheaper)
    assert wide.candidates[wide.chosen].cost == min(c.cost for c in [lead, *cheaper])
    best = suite_root.parent / "best.yaml"
    assert select_cli.main([str(suite_root), "--suite", "--prefer", "chunks", "--n-resamples", "300",
                            "--out", str(best)]) == 0
    printed = capsys.readouterr().out
    assert "the choice is made on the pooled effect" in printed and "chosen on the pooled effect over 3 collections" in printed
    chosen = sel.candidates[sel.chosen].label
    assert f"chosen: {chosen}" in printed
    assert f"kind: {chosen.split()[0]}" in best.read_text()  # the chosen configuration's complete config


def test_the_smallest_qualifying_margin_is_where_holm_starts_to_reject():
    from receval.analysis.suite_choice import _margin_needed, _verdicts

    pooled = [pool([-0.02, 0.01, -0.05], [0.0004, 0.0002, 0.0009]), pool([-0.10, -0.04, -0.07], [0.0003, 0.0004, 0.0002])]
    for j in range(2):
        m = _margin_needed(pooled, j, 0.05)
        assert m > 0
        assert _verdicts(pooled, m + 1e-7, 0.05)[j].rejected
        assert not _verdicts(pooled, m - 1e-7, 0.05)[j].rejected


@pytest.mark.slow
def test_a_collection_whose_pair_changes_too_few_questions_is_named(runs):
    """tfidf and bm25 rank the fixture's BEIR documents alike: no question changes, so that
    collection's verdict rests on nothing, and the differences table says so."""
    from receval.render.suite import differences_table

    s = suite(runs, "rr", BootstrapConfig(n_resamples=400))
    table = differences_table(s)
    assert "changed questions too few to show any difference at 95%" in table.note
    assert "tfidf max_words=120 on beir-splits 0" in table.note
