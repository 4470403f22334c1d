"""receval.stats.corrections: Holm and BH equal statsmodels' multipletests, and the levels
their intervals are drawn at agree with the adjusted p-values."""

from __future__ import annotations

import numpy as np
import pytest

from receval.stats.holm import holm as holm_steps
from receval.stats import corrections

from conftest import lazy_import

multitest = lazy_import("statsmodels.stats.multitest")

P_SETS = [
    [0.01, 0.04, 0.03, 0.2, 0.5],
    [0.001, 0.001, 0.02, 0.02, 0.049, 0.9, 1.0],  # ties
    [0.5],
    list(np.random.default_rng(0).random(40) ** 3),
    [0.0, 0.3, 0.012, 0.0125, 0.05],
]


@pytest.mark.parametrize("p", P_SETS)
@pytest.mark.parametrize("ours, theirs", [("holm", "holm"), ("bh", "fdr_bh")])
@pytest.mark.slow
def test_agrees_with_statsmodels_multipletests(p, ours, theirs):
    result = getattr(corrections, ours)(p)
    rejected, adjusted, _, _ = multitest.multipletests(p, alpha=0.05, method=theirs)
    np.testing.assert_allclose(result.p_adjusted, adjusted, rtol=1e-12, atol=1e-15)
    assert result.rejected(0.05) == tuple(rejected)
    assert result.p == tuple(float(x) for x in p)
    assert result.method == ours


@pytest.mark.parametrize("p", P_SETS)
def test_select_holm_verdicts_read_the_same_rule(p):
    """receval.stats.holm's step-down verdicts are the adjusted p-values <= alpha."""
    for alpha in (0.05, 0.0125):
        steps = holm_steps(list(p), alpha)
        assert [s.rejected for s in steps] == list(corrections.holm(p).rejected(alpha))


def test_bh_rejects_at_least_what_holm_rejects():
    rng = np.random.default_rng(1)
    for _ in range(50):
        p = rng.random(12) ** 4
        holm, bh = corrections.holm(p), corrections.bh(p)
        assert (np.asarray(bh.p_adjusted) <= np.asarray(holm.p_adjusted) + 1e-15).all()
        assert all(b for h, b in zip(holm.rejected(0.05), bh.rejected(0.05)) if h)


def test_bad_p_values_and_methods_are_refused():
    with pytest.raises(ValueError, match=r"p-values must lie in \[0, 1\]"):
        corrections.holm([0.1, 1.5])
    with pytest.raises(ValueError, match="unknown correction 'maxt': use holm, bh"):
        corrections.correct("maxt", [0.1])
    with pytest.raises(ValueError, match="unknown correction 'sidak': use holm, bh"):
        corrections.adjusted_levels("sidak", [0.1], 0.05)


@pytest.mark.parametrize("p", P_SETS)
@pytest.mark.parametrize("method", ["holm", "bh"])
def test_each_comparison_is_rejected_exactly_when_its_p_is_within_its_level(p, method):
    """The level an interval is drawn at agrees with the adjusted p: p <= level exactly
    for the comparisons the correction rejects (so the interval excludes 0 exactly then)."""
    for alpha in (0.05, 0.2):
        levels = corrections.adjusted_levels(method, p, alpha)
        rejected = corrections.correct(method, p).rejected(alpha)
        assert [q <= a * (1 + 1e-9) for q, a in zip(p, levels)] == list(rejected)
    if method == "bh":
        assert len(set(corrections.adjusted_levels("bh", p, 0.05))) == 1  # one FCR level for all
