"""receval.stats.effects: Hedges' g_z, its correction and its noncentral-t interval."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from receval.stats.effects import hedges_correction, hedges_gz


def test_worked_example():
    d = np.array([0.1, 0.3, -0.1, 0.2, 0.0, 0.4, 0.1, 0.2])
    mean, sd, n = d.mean(), d.std(ddof=1), d.size
    j = math.gamma(7 / 2) / (math.sqrt(7 / 2) * math.gamma(6 / 2))
    effect = hedges_gz(d)
    assert effect.hedges_gz == pytest.approx(j * mean / sd, rel=1e-12)
    # d_z = 0.15 / sqrt(0.18 / 7) = 0.9354, J(7) = 0.8882
    assert effect.hedges_gz == pytest.approx(0.8308, abs=5e-4)
    t = mean / sd * math.sqrt(n)
    # the bounds are the noncentralities that put t at the 97.5% and 2.5% points
    assert stats.nct.cdf(t, n - 1, effect.lo / j * math.sqrt(n)) == pytest.approx(0.975, abs=1e-9)
    assert stats.nct.cdf(t, n - 1, effect.hi / j * math.sqrt(n)) == pytest.approx(0.025, abs=1e-9)
    assert effect.lo < effect.hedges_gz < effect.hi
    assert effect.as_dict() == {"hedges_gz": effect.hedges_gz, "ci": [effect.lo, effect.hi]}


@pytest.mark.parametrize("df", [2, 5, 10, 50, 500])
def test_correction_against_hedges_approximation(df):
    j = hedges_correction(df)
    assert 0 < j < 1
    assert j == pytest.approx(1 - 3 / (4 * df - 1), abs=0.02 / df)


def test_interval_is_antisymmetric_and_narrows_with_n():
    rng = np.random.default_rng(1)
    d = rng.normal(0.1, 0.3, 30)
    up, down = hedges_gz(d), hedges_gz(-d)
    assert down.hedges_gz == pytest.approx(-up.hedges_gz)
    assert (down.lo, down.hi) == pytest.approx((-up.hi, -up.lo), abs=1e-9)
    wide = hedges_gz(rng.normal(0.1, 0.3, 20))
    narrow = hedges_gz(rng.normal(0.1, 0.3, 2000))
    assert narrow.hi - narrow.lo < (wide.hi - wide.lo) / 5


@pytest.mark.slow
def test_interval_covers_the_true_effect_95_percent_of_the_time():
    rng = np.random.default_rng(2)
    n, delta = 15, 0.5
    covered = [(e.lo <= delta <= e.hi) for e in (hedges_gz(rng.normal(delta, 1.0, n)) for _ in range(300))]
    assert 0.92 <= np.mean(covered) <= 0.98


def test_no_spread_and_bad_input():
    assert hedges_gz(np.zeros(5)).hedges_gz == 0.0
    assert hedges_gz(np.full(5, 0.2)).hedges_gz == math.inf
    with pytest.raises(ValueError, match="an effect size needs at least 3 finite differences, got 2"):
        hedges_gz([0.1, 0.2])
    with pytest.raises(ValueError, match=r"level must lie in \(0, 1\)"):
        hedges_gz([0.1, 0.2, 0.3], level=1.0)
