"""receval.stats.corrections: Holm and BH equal statsmodels' multipletests; maxT uses
the randomization test's flips and the correlation between pairs."""

from __future__ import annotations

import numpy as np
import pytest

from receval.stats.holm import holm as holm_steps
from receval.stats import corrections, significance

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
    with pytest.raises(ValueError, match="unknown correction 'sidak': use holm, bh, maxt"):
        corrections.correct("sidak", [0.1])
    with pytest.raises(ValueError, match="maxt needs the per-question differences"):
        corrections.correct("maxt", [0.1])


def test_maxt_of_one_pair_is_the_randomization_p():
    rng = np.random.default_rng(2)
    d = rng.normal(0.04, 0.3, 50)
    randomization = significance.randomization(d, n_resamples=5000, seed=11)[0]
    result = corrections.maxt(d, n_resamples=5000, seed=11)
    assert result.p == (randomization.p,)
    assert result.p_adjusted == (randomization.p,)


def test_maxt_own_p_values_are_the_randomization_test_under_the_same_flips():
    rng = np.random.default_rng(3)
    d = rng.normal(0.0, 0.3, size=(45, 6)) + np.linspace(-0.1, 0.1, 6)
    raw = [t.p for t in significance.randomization(d, n_resamples=3000, seed=4)]
    result = corrections.maxt(d, n_resamples=3000, seed=4)
    assert result.p == tuple(raw)
    assert all(a >= p for a, p in zip(result.p_adjusted, result.p))
    # monotone: a larger |t| never gets a larger adjusted p
    t = np.abs(significance.t_statistics(d))
    order = np.argsort(-t)
    assert (np.diff(np.asarray(result.p_adjusted)[order]) >= 0).all()


def test_maxt_costs_nothing_for_a_duplicated_pair_and_about_sidak_for_independent_ones():
    """Two identical pairs: the maximum is the pair itself (Holm would double p).
    Independent pairs: maxT is Sidak's 1 - (1 - p)^m within Monte Carlo error."""
    rng = np.random.default_rng(4)
    d = rng.normal(0.06, 0.3, 60)
    twice = corrections.maxt(np.column_stack([d, d]), n_resamples=4000, seed=1)
    assert twice.p_adjusted[0] == twice.p[0] == twice.p_adjusted[1]
    independent = rng.normal(0.0, 0.3, size=(200, 5))
    independent[:, 0] += 0.04
    result = corrections.maxt(independent, n_resamples=20_000, seed=2)
    sidak = 1 - (1 - np.asarray(result.p)) ** 5
    np.testing.assert_allclose(result.p_adjusted, sidak, atol=0.03)
    assert corrections.correct("maxt", result.p, independent, 20_000, 2) == result
