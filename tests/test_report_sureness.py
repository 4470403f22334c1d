"""report --test/--correct/--detect/--ranks/--calibrate: the JSON numbers equal the
stats functions' (and scipy's / statsmodels') on the stored per-question columns."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from receval.cli.report import report_for
from receval.core.errors import RecevalError
from receval.render import report as rendered
from receval.results import read_run
from receval.stats import corrections, significance
from receval.stats.bootstrap import bootstrap_means
from receval.stats.calibration import type_one_rates
from receval.stats.detectable import minimum_detectable_difference, questions_for
from receval.stats.effects import hedges_gz
from receval.stats.ranks import rank_intervals

METRIC = "ap"


def column(folder, metric=METRIC) -> np.ndarray:
    return read_run(folder).values(metric)


def scored(folders, metric=METRIC) -> np.ndarray:
    """(questions every run scores, runs), in the first run's order (same ids here)."""
    matrix = np.column_stack([column(f, metric) for f in folders])
    return matrix[~np.isnan(matrix).any(axis=1)]


def as_json(argv):
    report = report_for(argv)
    data = json.loads(rendered.render(report, "json"))
    assert data == json.loads(json.dumps(report.to_dict()))
    return report, data


@pytest.mark.slow
def test_baseline_pairs_randomization_with_holm(six_runs):
    runs = [six_runs / str(i) for i in range(6)]
    report, data = as_json([str(six_runs), "--metric", METRIC, "--baseline", str(runs[0]),
                            "--test", "randomization", "--correct", "holm"])
    boot = data["bootstrap"]
    matrix = scored(runs)
    diffs = np.column_stack([matrix[:, j] - matrix[:, 0] for j in range(1, 6)])
    want = significance.randomization(diffs, boot["n_resamples"], boot["seed"])
    holm = corrections.holm([t.p for t in want])
    assert [p["run_dir"] for p in data["pairs"]] == [str(r) for r in runs[1:]]
    for j, pair in enumerate(data["pairs"]):
        assert pair["test"] == {"name": "randomization", "p": want[j].p, "p_adjusted": holm.p_adjusted[j],
                                "correction": "holm", "n_resamples": boot["n_resamples"]}
        assert pair["diff"] == pytest.approx(diffs[:, j].mean(), abs=1e-12)
        effect = hedges_gz(diffs[:, j], boot["level"])
        assert pair["effect"] == {"hedges_gz": effect.hedges_gz, "ci": [effect.lo, effect.hi]}
        mde = minimum_detectable_difference(diffs[:, j], 1 - boot["level"], 0.8)
        assert pair["mde"]["difference"] == pytest.approx(mde.difference, rel=1e-12)
    # Monte Carlo p within its error of scipy's exact-when-small permutation test
    d = diffs[:, 0]
    theirs = stats.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=20_000,
                                    random_state=1).pvalue
    assert data["pairs"][0]["test"]["p"] == pytest.approx(theirs, abs=4 * np.sqrt(0.25 / 2000) + 1e-3)
    assert data["sureness"]["n_questions"] == matrix.shape[0]


@pytest.mark.slow
def test_all_pairs_t_with_bh_and_the_markdown_dagger(six_runs):
    from statsmodels.stats.multitest import multipletests

    runs = [six_runs / str(i) for i in range(6)]
    # alpha = 1 - level: at 0.6 some of these close runs are apart, so the dagger shows
    report, data = as_json([str(six_runs), "--metric", METRIC, "--all-pairs", "--test", "t", "--correct", "bh",
                            "--level", "0.4"])
    assert len(data["all_pairs"]) == 15
    matrix = scored(runs)
    index = {str(r): i for i, r in enumerate(runs)}
    p_values = []
    for pair in data["all_pairs"]:
        a, b = index[pair["baseline"]], index[pair["run_dir"]]
        want = stats.ttest_rel(matrix[:, b], matrix[:, a]).pvalue
        assert pair["test"]["p"] == pytest.approx(want, rel=1e-9, abs=1e-15)
        assert pair["test"]["n_resamples"] is None
        p_values.append(pair["test"]["p"])
    adjusted = multipletests(p_values, method="fdr_bh")[1]
    np.testing.assert_allclose([p["test"]["p_adjusted"] for p in data["all_pairs"]], adjusted, rtol=1e-12)
    latex = rendered.render(report, "latex")
    text = rendered.render(report, "markdown")
    significant = sum(q <= 0.6 for q in adjusted)
    assert significant >= 1 and latex.count("\\dag{}") == significant
    assert text.count("†") == significant + 1  # each significant row, and the legend
    assert "† p <= 0.6 after bh over 15 pairs" in text
    assert "detectable: " in text


@pytest.mark.slow
def test_chain_bootstrap_maxt_and_detect(six_runs):
    runs = [six_runs / str(i) for i in range(6)]
    _, data = as_json([str(six_runs), "--metric", METRIC, "--chain", "--test", "bootstrap", "--correct", "maxt",
                       "--detect", "0.05", "--n-resamples", "500", "--seed", "7"])
    matrix = scored(runs)
    diffs = np.column_stack([matrix[:, j] - matrix[:, j - 1] for j in range(1, 6)])
    both = bootstrap_means(np.hstack([diffs, diffs**2]), n_resamples=500, seed=7)
    want = significance.bootstrap(diffs, both[:, :5], both[:, 5:])
    maxt = corrections.maxt(diffs, 500, 7)
    for j, step in enumerate(data["chain"]):
        assert step["test"]["p"] == pytest.approx(want[j].p, abs=1e-12)
        assert step["test"]["p_adjusted"] == pytest.approx(maxt.p_adjusted[j], abs=1e-12)
        assert step["mde"]["questions_needed"] == questions_for(0.05, diffs[:, j], 0.05, 0.8)
        assert step["mde"]["detect"] == 0.05


@pytest.mark.slow
def test_ranks_and_calibration(six_runs):
    runs = [six_runs / str(i) for i in range(6)]
    report, data = as_json([str(six_runs), "--metric", METRIC, "--ranks", "--calibrate", "--n-resamples", "300"])
    matrix = scored(runs)
    want = rank_intervals(matrix.mean(axis=0), bootstrap_means(matrix, n_resamples=300, seed=0), 0.95)
    assert [(r["rank"], r["rank_ci"]) for r in data["runs"]] == [(w.rank, [w.lo, w.hi]) for w in want]
    diffs = np.column_stack([matrix[:, a] - matrix[:, b] for b in range(6) for a in range(b + 1, 6)])
    rates = type_one_rates(diffs, 0.05, 67, 300, 0,
                           resample_means=lambda v: bootstrap_means(v, n_resamples=300, seed=0))
    got = data["sureness"]["calibration"]
    assert [(r["test"], r["rejections"], r["n_null"]) for r in got] == [(r.test, r.rejections, r.n_null) for r in rates]
    assert all(0.02 <= r["rate"] <= 0.08 for r in got)  # near alpha on 1005 null pairs
    text = rendered.render(report, "table")
    assert "A/A calibration at alpha 0.05" in text and "rank 95% CI" in text


@pytest.mark.slow
def test_tests_need_pairs_and_a_positive_difference(six_runs):
    with pytest.raises(RecevalError, match="no pair is shown; add --baseline RUN, --chain or --all-pairs"):
        report_for([str(six_runs), "--test", "t"])
    with pytest.raises(RecevalError, match="--detect 0.0: give the difference to detect"):
        report_for([str(six_runs), "--chain", "--detect", "0"])


@pytest.mark.slow
def test_the_python_api_gives_the_report_s_numbers(six_runs):
    from receval import analysis

    runs = analysis.load(six_runs)
    sure = analysis.how_sure(runs, "ap", all_pairs=True, test="t", correction="holm", ranks=True, detect=0.05)
    _, data = as_json([str(six_runs), "--metric", "ap", "--all-pairs", "--test", "t", "--correct", "holm",
                       "--ranks", "--detect", "0.05"])
    assert isinstance(sure, analysis.Sureness) and all(isinstance(t, analysis.PairTest) for t in sure.pairs)
    assert [t.as_dict() for t in sure.pairs] == [
        {k: p[k] for k in ("test", "effect", "mde")} for p in data["all_pairs"]
    ]
    assert [r.rank for r in sure.ranks] == [r["rank"] for r in data["runs"]]
    with pytest.raises(RecevalError, match="correction='sidak': use one of holm, bh, maxt"):
        analysis.how_sure(runs, "ap", all_pairs=True, correction="sidak")


def test_csv_latex_and_html_carry_the_same_figures(six_runs):
    import csv
    import io

    from receval.render import html

    report, data = as_json([str(six_runs), "--metric", "ap", "--baseline", str(six_runs / "0"), "--test", "t",
                            "--correct", "holm", "--ranks"])
    rows = list(csv.DictReader(io.StringIO(rendered.render(report, "csv"))))
    assert rows[0]["p"] == "" and rows[0]["rank"] == str(data["runs"][0]["rank"])
    for row, pair in zip(rows[1:], data["pairs"]):
        assert float(row["p_adjusted"]) == pytest.approx(pair["test"]["p_adjusted"], rel=1e-12)
        assert float(row["hedges_gz"]) == pytest.approx(pair["effect"]["hedges_gz"], rel=1e-12)
    latex = rendered.render(report, "latex")
    page = html.render(report)
    for text in (latex, page):
        assert "How sure: MAP" in text and "Ranks by MAP" in text


def test_without_the_flags_the_report_is_unchanged_and_one_run_cannot_calibrate(six_runs):
    _, data = as_json([str(six_runs), "--metric", "ap", "--baseline", str(six_runs / "0")])
    assert "sureness" not in data and all("test" not in p for p in data["pairs"])
    assert all("rank" not in r for r in data["runs"])
    with pytest.raises(RecevalError, match="--calibrate needs two runs"):
        report_for([str(six_runs / "0"), "--calibrate"])
