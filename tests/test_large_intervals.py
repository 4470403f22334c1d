"""Intervals above receval.stats.paired.LARGE questions: the t interval of the mean, whose
cost does not grow with questions times resamples (receval.stats.pairing.grouped_intervals)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from receval.core.settings import BootstrapConfig
from receval.stats.bootstrap import confidence_intervals
from receval.stats.paired import LARGE
from receval.stats.pairing import grouped_intervals, mask_key, t_interval


def test_t_interval_is_scipys():
    values = np.random.default_rng(1).gamma(2.0, 0.3, 500)
    got = t_interval(values, 0.9)
    lo, hi = stats.t.interval(0.9, len(values) - 1, loc=values.mean(), scale=stats.sem(values))
    assert (got.mean, got.lo, got.hi) == pytest.approx((values.mean(), lo, hi), rel=1e-12)
    assert t_interval(np.full(LARGE + 1, 0.5), 0.95) == t_interval(np.array([0.5]), 0.95)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_grouped_intervals_switch_above_large(method):
    rng = np.random.default_rng(2)
    boot = BootstrapConfig(n_resamples=400, seed=3, method=method)
    small = (rng.random(LARGE) < 0.6).astype(float)
    large = (rng.random(LARGE + 1) < 0.6).astype(float)
    key_small, key_large = mask_key(b"s", np.ones(LARGE, bool)), mask_key(b"l", np.ones(LARGE + 1, bool))
    got_small, got_large = grouped_intervals([(key_small, small), (key_large, large)], boot)
    (bootstrapped,) = confidence_intervals(np.column_stack([small, small]), **boot.kwargs())[:1]
    assert (got_small.lo, got_small.hi) == (bootstrapped.lo, bootstrapped.hi)  # at LARGE: the bootstrap
    assert got_large == t_interval(large, boot.level)  # above: the t interval, whatever the method
    # at this size the two agree to the third decimal: the switch changes no figure shown
    (resampled,) = confidence_intervals(large, **boot.kwargs())
    assert got_large.lo == pytest.approx(resampled.lo, abs=2e-3)
    assert got_large.hi == pytest.approx(resampled.hi, abs=2e-3)


def test_resampled_means_switch_to_their_normal_limit_above_large():
    from receval.stats.bootstrap import bootstrap_means
    from receval.stats.pairing import resampled_means

    rng = np.random.default_rng(4)
    small = rng.random((200, 3))
    np.testing.assert_array_equal(resampled_means(small, 300, 2), bootstrap_means(small, n_resamples=300, seed=2))
    base = rng.random(LARGE + 1)
    large = np.column_stack([base, base + rng.normal(0, 0.1, LARGE + 1), base])  # the third equals the first
    drawn = resampled_means(large, 4000, 1)
    assert drawn.shape == (4000, 3) and np.array_equal(drawn[:, 0], drawn[:, 2])  # equal columns, equal draws
    covariance = np.cov(large, rowvar=False) / len(large)
    np.testing.assert_allclose(np.cov(drawn, rowvar=False), covariance, rtol=0.1, atol=1e-9)
    np.testing.assert_allclose(drawn.mean(axis=0), large.mean(axis=0), atol=4 * np.sqrt(covariance.max() / 4000))
