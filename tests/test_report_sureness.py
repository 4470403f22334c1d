"""report's pairs, --correct/--effects/--detect/--ranks/--calibrate: the JSON numbers equal
the stats functions' (and statsmodels') on the stored per-question columns."""

from __future__ import annotations

import json

import numpy as np
import pytest

from receval.cli.report import report_for
from receval.core.errors import RecevalError
from receval.render import report as rendered
from receval.results import open_run
from receval.stats import corrections
from receval.stats.bootstrap import bootstrap_means
from receval.stats.calibration import type_one_rate
from receval.stats.paired import paired_tests
from receval.stats.detectable import minimum_detectable_difference, questions_for
from receval.stats.effects import hedges_correction, hedges_gz
from receval.stats.ranks import rank_intervals

METRIC = "ap"


def column(folder, metric=METRIC) -> np.ndarray:
    return open_run(folder, skip=frozenset()).values(metric)


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
def test_baseline_pairs_with_holm_read_the_paired_procedure(six_runs):
    runs = [six_runs / str(i) for i in range(6)]
    report, data = as_json([str(six_runs), "--metric", METRIC, "--baseline", str(runs[0]), "--correct", "holm",
                            "--effects"])
    boot = data["bootstrap"]
    matrix = scored(runs)
    diffs = np.column_stack([matrix[:, j] - matrix[:, 0] for j in range(1, 6)])
    want = paired_tests(diffs, boot["level"], boot["n_resamples"], boot["seed"])
    holm = corrections.holm([t.p for t in want])
    levels = corrections.adjusted_levels("holm", [t.p for t in want], 1 - boot["level"])
    assert [p["run_dir"] for p in data["pairs"]] == [str(r) for r in runs[1:]]
    for j, pair in enumerate(data["pairs"]):
        assert pair["p"] == pytest.approx(want[j].p, abs=1e-12) and pair["correction"] == "holm"
        assert pair["p_adjusted"] == pytest.approx(holm.p_adjusted[j], abs=1e-12)
        assert pair["level"] == pytest.approx(1 - levels[j])  # each interval at its Holm level
        (at_level,) = paired_tests(diffs[:, j], 1 - levels[j], boot["n_resamples"], boot["seed"])
        assert pair["ci"] == pytest.approx([at_level.lo, at_level.hi], abs=1e-12)
        assert pair["diff"] == pytest.approx(diffs[:, j].mean(), abs=1e-12)
        assert (pair["verdict"] != "not shown") == (pair["p_adjusted"] <= 1 - boot["level"])
        effect = hedges_gz(diffs[:, j], boot["level"])  # g_z; its interval: the pair's, over sd / J
        scale = hedges_correction(len(diffs) - 1) / diffs[:, j].std(ddof=1)
        assert pair["effect"]["hedges_gz"] == effect.hedges_gz
        assert pair["effect"]["ci"] == pytest.approx([at_level.lo * scale, at_level.hi * scale], abs=1e-12)
        mde = minimum_detectable_difference(diffs[:, j], 1 - boot["level"], 0.8)
        assert pair["mde"]["difference"] == pytest.approx(mde.difference, rel=1e-12)
    assert data["sureness"]["n_questions"] == matrix.shape[0]


@pytest.mark.slow
def test_all_pairs_with_bh_agree_with_statsmodels_and_read_as_their_verdicts(six_runs):
    from statsmodels.stats.multitest import multipletests

    runs = [six_runs / str(i) for i in range(6)]
    # alpha = 1 - level: at 0.6 some of these close runs are apart
    report, data = as_json([str(six_runs), "--metric", METRIC, "--all-pairs", "--correct", "bh", "--level", "0.4"])
    assert len(data["all_pairs"]) == 15
    matrix = scored(runs)
    index = {str(r): i for i, r in enumerate(runs)}
    p_values = []
    for pair in data["all_pairs"]:
        a, b = index[pair["baseline"]], index[pair["run_dir"]]
        (want,) = paired_tests(matrix[:, b] - matrix[:, a], 0.4, data["bootstrap"]["n_resamples"], 0)
        assert pair["p"] == pytest.approx(want.p, abs=1e-12)
        p_values.append(pair["p"])
    rejected, adjusted, _, _ = multipletests(p_values, alpha=0.6, method="fdr_bh")
    np.testing.assert_allclose([p["p_adjusted"] for p in data["all_pairs"]], adjusted, rtol=1e-12)
    assert [p["verdict"] != "not shown" for p in data["all_pairs"]] == list(rejected)
    assert 1 <= sum(rejected) < 15
    text = rendered.render(report, "markdown")
    assert "Every pair (MAP" in text and "p bh" in text
    assert "corrected: Benjamini-Hochberg's false discovery rate over 15 pairs" in text


@pytest.mark.slow
def test_chain_with_detect(six_runs):
    runs = [six_runs / str(i) for i in range(6)]
    _, data = as_json([str(six_runs), "--metric", METRIC, "--chain", "--detect", "0.05", "--n-resamples", "500",
                       "--seed", "7"])
    matrix = scored(runs)
    diffs = np.column_stack([matrix[:, j] - matrix[:, j - 1] for j in range(1, 6)])
    for j, step in enumerate(data["chain"]):
        (want,) = paired_tests(diffs[:, j], 0.95, 500, 7)
        assert step["p"] == pytest.approx(want.p, abs=1e-12) and step["p_adjusted"] is None
        assert step["mde"]["questions_needed"] == questions_for(0.05, diffs[:, j], 0.05, 0.8)
        assert step["mde"]["detect"] == 0.05


@pytest.mark.slow
def test_ranks_and_calibration(six_runs):
    runs = [six_runs / str(i) for i in range(6)]
    report, data = as_json([str(six_runs), "--metric", METRIC, "--ranks", "--calibrate", "--n-resamples", "300"])
    matrix = scored(runs)
    want = rank_intervals(matrix.mean(axis=0), bootstrap_means(matrix, n_resamples=300, seed=0), 0.95)
    assert [(r["rank"], r["rank_ci"]) for r in data["runs"]] == [(w.rank, [w.lo, w.hi]) for w in want]
    rates = [type_one_rate(matrix[:, a] - matrix[:, b], 0.95, 67, 300, 0) for b in range(6) for a in range(b + 1, 6)]
    (got,) = data["sureness"]["calibration"]
    assert (got["rejections"], got["n_null"]) == (sum(r.rejections for r in rates), 15 * 67)
    assert 0.01 <= got["rate"] <= 0.065  # at most about alpha on 1005 null pairs
    text = rendered.render(report, "table")
    assert "A/A calibration at alpha 0.05" in text and "rank 95% CI" in text


@pytest.mark.slow
def test_tests_need_pairs_and_a_positive_difference_and_test_is_gone(six_runs):
    with pytest.raises(RecevalError, match="--effects: no pair is shown; add --baseline RUN, --chain or --all-pairs"):
        report_for([str(six_runs), "--effects"])
    with pytest.raises(RecevalError, match="--test t: every pair shown now has its p-value and verdict"):
        report_for([str(six_runs), "--chain", "--test", "t"])
    with pytest.raises(RecevalError, match="--detect 0.0: give the difference to detect"):
        report_for([str(six_runs), "--chain", "--detect", "0"])


@pytest.mark.slow
def test_the_python_api_gives_the_report_s_numbers(six_runs):
    from receval import analysis

    runs = analysis.load(six_runs)
    shown, sure = analysis.how_sure(runs, "ap", all_pairs=True, correction="holm", ranks=True, detect=0.05)
    _, data = as_json([str(six_runs), "--metric", "ap", "--all-pairs", "--correct", "holm",
                       "--ranks", "--detect", "0.05"])
    assert isinstance(sure, analysis.Sureness) and all(isinstance(t, analysis.PairTest) for t in sure.pairs)
    assert shown == data["all_pairs"]
    assert [r.rank for r in sure.ranks] == [r["rank"] for r in data["runs"]]
    with pytest.raises(RecevalError, match="correction='sidak': use one of holm, bh"):
        analysis.how_sure(runs, "ap", all_pairs=True, correction="sidak")


def test_csv_latex_and_html_carry_the_same_figures(six_runs):
    import csv
    import io

    from receval.render import html

    report, data = as_json([str(six_runs), "--metric", "ap", "--baseline", str(six_runs / "0"), "--effects",
                            "--correct", "holm", "--ranks"])
    rows = list(csv.DictReader(io.StringIO(rendered.render(report, "csv"))))
    assert rows[0]["p"] == "" and rows[0]["rank"] == str(data["runs"][0]["rank"])
    for row, pair in zip(rows[1:], data["pairs"]):
        assert float(row["p_adjusted"]) == pytest.approx(pair["p_adjusted"], rel=1e-12)
        assert row["verdict"] == pair["verdict"]
        assert float(row["hedges_gz"]) == pytest.approx(pair["effect"]["hedges_gz"], rel=1e-12)
    latex = rendered.render(report, "latex")
    page = html.render(report)
    for text in (latex, page):
        assert "How large: MAP" in text and "Ranks by MAP" in text


def test_without_the_flags_the_report_is_unchanged_and_one_run_cannot_calibrate(six_runs):
    _, data = as_json([str(six_runs), "--metric", "ap", "--baseline", str(six_runs / "0")])
    assert "sureness" not in data and all("effect" not in p and p["p_adjusted"] is None for p in data["pairs"])
    assert all("rank" not in r for r in data["runs"])
    with pytest.raises(RecevalError, match="--calibrate needs two runs"):
        report_for([str(six_runs / "0"), "--calibrate"])
