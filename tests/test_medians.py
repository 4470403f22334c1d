"""The bootstrap law of a sample median (receval.stats.medians) against every resample."""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np
import pytest
from scipy.stats import ks_2samp

from receval.stats.bootstrap import bootstrap_medians
from receval.stats.medians import median_draws, position_law


def law_pmf(values) -> dict[float, float]:
    """The law's probability of each median value, from position_law (exact)."""
    x = np.sort(np.asarray(values, dtype=float))
    n = x.size
    k, positions, cdf, stop = position_law(n)
    mass = np.diff(np.concatenate([[0.0], cdf]))
    out: dict[float, float] = defaultdict(float)
    for j, pj, sj in zip(positions, mass, stop):
        if n % 2:
            out[float(x[j - 1])] += pj
            continue
        out[float((x[j - 1] + x[j - 1]) / 2)] += pj * (1 - sj)
        rest = n - j
        for m in range(1, rest + 1):
            pm = ((rest - m + 1) / rest) ** (n - k) - ((rest - m) / rest) ** (n - k)
            out[float((x[j - 1] + x[j + m - 1]) / 2)] += pj * sj * pm
    return out


def enumerated_pmf(values) -> dict[float, float]:
    """Every one of the n^n resamples, each with probability n^-n."""
    x = np.asarray(values, dtype=float)
    n = x.size
    out: dict[float, float] = defaultdict(float)
    for draw in itertools.product(range(n), repeat=n):
        out[float(np.median(x[list(draw)]))] += n ** -n
    return out


SIX = pytest.mark.slow  # 6^6 resamples each


@pytest.mark.parametrize("values", [[3.0], [2.0, 5.0], [1.0, 4.0, 9.0], [7.0, 1.0, 3.0, 3.0],
                                    [0.5, 2.0, 2.0, 6.0, 8.0],
                                    pytest.param([1.0, 2.0, 4.0, 8.0, 16.0, 32.0], marks=SIX),
                                    pytest.param([5.0, 5.0, 1.0, 9.0, 2.0, 5.0], marks=SIX)])
def test_the_law_is_the_distribution_of_every_resample_median(values):
    law, every = law_pmf(values), enumerated_pmf(values)
    assert set(law) >= {v for v, p in every.items() if p > 0}
    for value in set(law) | set(every):  # n^n additions of n^-n: the sum's own rounding
        assert law.get(value, 0.0) == pytest.approx(every.get(value, 0.0), abs=1e-10)


@pytest.mark.parametrize("n", [300, pytest.param(1001, marks=pytest.mark.slow)])
def test_draws_follow_the_resampled_medians(n):
    """At sizes no enumeration reaches: the drawn quantiles against 20,000 resampled medians."""
    values = np.random.default_rng(n).lognormal(size=n)
    values[: n // 4] = np.round(values[: n // 4], 1)  # ties
    drawn = median_draws(values, n_resamples=20_000, seed=1)
    resampled = bootstrap_medians(values, n_resamples=20_000, seed=2)[:, 0]
    assert ks_2samp(drawn, resampled).pvalue > 0.001  # one law: at most one failure in 1,000 seeds
    assert np.std(drawn) == pytest.approx(np.std(resampled), rel=0.05)


def test_draws_repeat_with_the_seed_and_cost_no_resample_of_the_questions():
    values = np.random.default_rng(0).gamma(2.0, 0.5, 2_000_000)
    first = median_draws(values, n_resamples=2000, seed=5)
    assert first.shape == (2000,)
    np.testing.assert_array_equal(first, median_draws(values, n_resamples=2000, seed=5))
    assert np.median(values) - 0.01 < np.median(first) < np.median(values) + 0.01
