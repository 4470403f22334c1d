"""receval.stats.meta: pooled paired differences agree with statsmodels' combine_effects,
and the random-effects interval covers at its nominal level in simulation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from receval.stats.meta import mean_difference, pool

from conftest import lazy_import

meta_analysis = lazy_import("statsmodels.stats.meta_analysis")

# per-collection effects that disagree (Q > k - 1: tau^2 > 0), variances of different size;
# the Hartung-Knapp scale is above 1 in the first, below 1 (floored) in the second
HETEROGENEOUS = [
    ([0.04, -0.03, 0.06], [0.0001, 0.0009, 0.0004]),
    ([0.031, -0.012, 0.085, 0.004, 0.050], [0.00011, 0.00024, 0.00009, 0.00040, 0.00016]),
]


@pytest.mark.parametrize("effects, variances", HETEROGENEOUS)
def test_random_and_fixed_effects_equal_statsmodels_dersimonian_laird(effects, variances):
    ours = pool(effects, variances, level=0.95)
    ref = meta_analysis.combine_effects(np.array(effects), np.array(variances), method_re="dl", use_t=False)
    assert ref.tau2 > 0  # the heterogeneous case: no truncation on either side
    fe_z, re_z, _, _ = ref.conf_int(alpha=0.05, use_t=False)
    _, _, _, re_hksj = ref.conf_int(alpha=0.05, use_t=True)
    assert ours.estimate == pytest.approx(ref.mean_effect_re, abs=1e-9)
    assert ours.se == pytest.approx(ref.sd_eff_w_re, abs=1e-9)
    assert ours.tau2 == pytest.approx(ref.tau2, abs=1e-9)
    assert ours.i2 == pytest.approx(ref.i2, abs=1e-9)
    assert ours.q == pytest.approx(ref.q, abs=1e-9)
    assert (ours.wald_lo, ours.wald_hi) == pytest.approx(tuple(re_z), abs=1e-9)
    assert (ours.fixed, ours.fixed_lo, ours.fixed_hi) == pytest.approx((ref.mean_effect_fe, *fe_z), abs=1e-9)
    scale = (ref.weights_re * (ref.eff - ref.mean_effect_re) ** 2).sum() / (ref.k - 1)
    assert (scale >= 1) == (len(effects) == 3)  # each branch below is met by one case
    if scale >= 1:  # the Hartung-Knapp interval as statsmodels computes it
        assert (ours.lo, ours.hi) == pytest.approx(tuple(re_hksj), abs=1e-9)
    else:  # scale floored at 1: t quantile times the DerSimonian-Laird standard error
        t = stats.t.isf(0.025, ref.k - 1)
        assert (ours.lo, ours.hi) == pytest.approx(
            (ref.mean_effect_re - t * ref.sd_eff_w_re, ref.mean_effect_re + t * ref.sd_eff_w_re), abs=1e-9
        )


@pytest.mark.filterwarnings("ignore:invalid value encountered in sqrt:RuntimeWarning")  # statsmodels' own, tau^2 < 0
def test_agreeing_collections_have_no_heterogeneity_and_pool_as_fixed_effect():
    effects, variances = [0.020, 0.021, 0.019], [0.0004, 0.0003, 0.0005]
    ours = pool(effects, variances)
    ref = meta_analysis.combine_effects(np.array(effects), np.array(variances), method_re="dl", use_t=False)
    assert ref.tau2 < 0  # statsmodels leaves the moment estimate untruncated; DerSimonian-Laird floors it at 0
    assert ours.tau2 == 0.0 and ours.i2 == 0.0
    assert ours.estimate == pytest.approx(ref.mean_effect_fe, abs=1e-9)
    assert ours.se == pytest.approx(ref.sd_eff_w_fe, abs=1e-9)
    # Hartung-Knapp scale < 1 is floored: the interval is never narrower than t * se
    t = stats.t.isf(0.025, 2)
    assert ours.hi - ours.lo == pytest.approx(2 * t * ref.sd_eff_w_fe, abs=1e-12)


def test_one_collection_is_its_own_effect():
    p = pool([0.03], [0.0001])
    assert (p.k, p.estimate, p.fixed, p.tau2) == (1, 0.03, 0.03, 0.0)
    assert p.lo == pytest.approx(0.03 - stats.norm.isf(0.025) * 0.01)


def test_mean_difference_is_the_mean_and_squared_standard_error():
    d = [0.0, 1.0, 0.0, -1.0, 1.0]
    assert mean_difference(d) == pytest.approx((0.2, np.var(d, ddof=1) / 5))
    with pytest.raises(ValueError, match=">= 2 paired"):
        mean_difference([0.5])
    with pytest.raises(ValueError, match="same|one length"):
        pool([0.1, 0.2], [0.1])


@pytest.mark.parametrize(
    "k, tau, n",
    [(3, 0.0, 60), (3, 0.03, 60), (5, 0.02, 200), (8, 0.05, 40)],
)
@pytest.mark.slow
def test_pooled_interval_covers_at_least_93_percent_at_nominal_95(k, tau, n):
    """Collections with their own true difference (N(mu, tau^2)) and questions with
    per-question differences of different spread; each collection's effect and variance
    drawn as a normal sample's mean and variance would be. 1500 seeded replicates."""
    rng = np.random.default_rng(20261201 + k)
    mu, reps = 0.02, 1500
    sigma = rng.uniform(0.15, 0.45, size=k)  # per-question spread differs by collection
    sizes = np.maximum(10, (n * rng.uniform(0.5, 2.0, size=k)).astype(int))
    covered = 0
    for _ in range(reps):
        theta = mu + tau * rng.standard_normal(k)
        y = theta + sigma / np.sqrt(sizes) * rng.standard_normal(k)
        s2 = sigma**2 * rng.chisquare(sizes - 1) / (sizes - 1)
        p = pool(y, s2 / sizes, level=0.95)
        covered += p.lo <= mu <= p.hi
    assert covered / reps >= 0.93


def test_not_worse_p_is_at_most_a_exactly_when_the_interval_at_1_minus_a_clears_the_margin():
    from receval.stats.meta import interval_at, not_worse_p

    p = pool(*HETEROGENEOUS[0])
    assert interval_at(p, 0.95) == pytest.approx((p.lo, p.hi), abs=1e-12)
    for margin in (0.0, 0.02, 0.05, 0.1):
        pv = not_worse_p(p, margin)
        for a in (0.01, 0.025, 0.05, 0.2):
            if abs(pv - a) > 1e-9:
                assert (pv <= a) == (interval_at(p, 1 - a)[0] > -margin)
