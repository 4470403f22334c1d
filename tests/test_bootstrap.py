"""Tests for receval.stats.bootstrap: reference agreement, the percentile rule,
repeatability, invariants, BCa and argument checking."""

import inspect
import json
from statistics import NormalDist

import numpy as np
import pytest

from receval.stats.bootstrap import (
    Interval,
    _bca_tails,
    bootstrap_means,
    bootstrap_medians,
    confidence_interval,
    confidence_intervals,
    paired_interval,
    percentile_bounds,
)


def skewed(n=200, seed=7):
    """Right-skewed sample with spread ~1 (lognormal, scaled to sd 1)."""
    x = np.random.default_rng(seed).lognormal(0.0, 0.6, n)
    return x / x.std()


def small_ints(shape, seed=3):
    """Integer-valued floats: every partial sum is exact, so results that use
    the same draws must agree bit for bit whatever the summation order."""
    return np.random.default_rng(seed).integers(0, 6, size=shape).astype(float)


def reference_means(values, n_resamples, seed):
    """The obvious loop: one rng.integers(0, n, size=n) draw per resample."""
    values = np.asarray(values, dtype=float).reshape(len(values), -1)
    n = values.shape[0]
    rng = np.random.default_rng(seed)
    return np.array(
        [values[rng.integers(0, n, size=n)].mean(axis=0) for _ in range(n_resamples)]
    )


# ---------------------------------------------------------------- draws


@pytest.mark.parametrize("n", [1, 2, 7, 24, 301])
def test_medians_are_np_median_of_the_same_draws_as_the_means(n):
    values = np.random.default_rng(n).lognormal(size=(n, 3))
    values[: n // 3, 1] = 1.0  # ties
    got = bootstrap_medians(values, n_resamples=250, seed=4)
    rng = np.random.default_rng(4)
    draws = [rng.integers(0, n, size=n) for _ in range(250)]
    np.testing.assert_array_equal(got, np.array([np.median(values[d], axis=0) for d in draws]))
    means = bootstrap_means(values, n_resamples=250, seed=4)
    np.testing.assert_allclose(means, np.array([values[d].mean(axis=0) for d in draws]), rtol=1e-12)


def test_percentile_bounds_follow_the_interval_rule():
    values = skewed(60)
    resampled = bootstrap_means(values, n_resamples=2000, seed=3)
    ((lo, hi),) = percentile_bounds(resampled, 0.9)
    interval = confidence_interval(values, n_resamples=2000, seed=3, level=0.9)
    assert (lo, hi) == pytest.approx((interval.lo, interval.hi), abs=1e-12)
    ordered = np.sort(resampled[:, 0])
    assert lo == ordered[100] and hi == ordered[1899]  # int(2000 * 0.05) dropped at each end



@pytest.mark.parametrize("n, c1, c2", [(25, 3, 4), (1, 5, 2), (10007, 1, 2)])
def test_integer_draws_do_not_depend_on_how_the_block_is_split(n, c1, c2):
    # The property chunking relies on: (c1, n) then (c2, n) == one (c1+c2, n).
    split = np.random.default_rng(0)
    first = split.integers(0, n, size=(c1, n))
    second = split.integers(0, n, size=(c2, n))
    whole = np.random.default_rng(0).integers(0, n, size=(c1 + c2, n))
    np.testing.assert_array_equal(np.vstack([first, second]), whole)


def test_matches_plain_loop_reference():
    values = np.random.default_rng(1).normal(size=(37, 3))
    got = bootstrap_means(values, n_resamples=300, seed=5, chunk_size=7)
    want = reference_means(values, 300, 5)
    assert got.shape == (300, 3)
    # Different draws would differ by ~0.1; only summation order may differ.
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_matches_plain_loop_reference_exactly_on_integer_data():
    values = small_ints(41)
    got = bootstrap_means(values, n_resamples=200, seed=11)
    want = reference_means(values, 200, 11)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-14)


def test_one_dimensional_input_gives_one_column():
    assert bootstrap_means(np.arange(5.0), n_resamples=9).shape == (9, 1)


@pytest.mark.parametrize("chunk_size", [1, 7, 64, 1000])
def test_chunk_size_does_not_change_result(chunk_size):
    values = small_ints((53, 4))
    base = bootstrap_means(values, n_resamples=250, seed=2)
    got = bootstrap_means(values, n_resamples=250, seed=2, chunk_size=chunk_size)
    assert got.tobytes() == base.tobytes()

    floats = np.random.default_rng(4).random((53, 4))
    np.testing.assert_allclose(
        bootstrap_means(floats, n_resamples=250, chunk_size=chunk_size),
        bootstrap_means(floats, n_resamples=250),
        rtol=1e-13,
        atol=0,
    )


def test_columns_together_equal_columns_alone():
    values = small_ints((60, 5))
    together = bootstrap_means(values, n_resamples=300, seed=9)
    for j in range(values.shape[1]):
        alone = bootstrap_means(values[:, j], n_resamples=300, seed=9)
        assert alone[:, 0].tobytes() == together[:, j].tobytes()

    floats = skewed(60)[:, None] * np.array([1.0, 0.5, 2.0])
    cis = confidence_intervals(floats, seed=9)
    for j, ci in enumerate(cis):
        alone = confidence_interval(floats[:, j], seed=9)
        np.testing.assert_allclose(
            [ci.mean, ci.lo, ci.hi], [alone.mean, alone.lo, alone.hi], rtol=1e-13
        )


def test_columns_share_draws_so_differences_pair_up():
    # Common random numbers: mean*(b) - mean*(a) is the bootstrap mean of b - a.
    rng = np.random.default_rng(6)
    a, b = rng.random(80), rng.random(80)
    both = bootstrap_means(np.column_stack([a, b]), n_resamples=200)
    diff = bootstrap_means(b - a, n_resamples=200)
    np.testing.assert_allclose(both[:, 1] - both[:, 0], diff[:, 0], atol=1e-13)


# ---------------------------------------------------------------- percentile rule


def test_percentile_rule_2000_resamples_is_51st_and_1950th():
    x = skewed()
    s = np.sort(bootstrap_means(x, n_resamples=2000)[:, 0])
    ci = confidence_interval(x, n_resamples=2000, level=0.95)
    assert ci.lo == s[50]  # 50 dropped below
    assert ci.hi == s[1949]  # 50 dropped above
    assert np.count_nonzero(s < ci.lo) == 50
    assert np.count_nonzero(s > ci.hi) == 50


@pytest.mark.parametrize(
    "n_resamples, level, dropped",
    [
        (2000, 0.95, 50),
        (2000, 0.90, 100),  # 2000 * (1 - 0.9) / 2 is 99.99999999999997 in floats
        (1000, 0.95, 25),
        (10, 0.8, 1),
        (10, 0.95, 0),  # int(0.25) = 0: the extremes
        (1, 0.95, 0),
    ],
)
def test_percentile_rule_drops_int_n_tail_from_each_end(n_resamples, level, dropped):
    x = skewed(50)
    s = np.sort(bootstrap_means(x, n_resamples=n_resamples, seed=1)[:, 0])
    ci = confidence_interval(x, n_resamples=n_resamples, level=level, seed=1)
    assert (ci.lo, ci.hi) == (s[dropped], s[n_resamples - 1 - dropped])


def test_mean_is_the_column_mean():
    x = np.random.default_rng(2).random((30, 3))
    got = [ci.mean for ci in confidence_intervals(x)]
    np.testing.assert_allclose(got, x.mean(axis=0), rtol=1e-15)


# ---------------------------------------------------------------- repeatability


def test_same_inputs_give_byte_identical_output():
    x = np.random.default_rng(8).random((500, 6))
    assert bootstrap_means(x).tobytes() == bootstrap_means(x).tobytes()
    for method in ("percentile", "bca"):
        assert confidence_intervals(x, method=method) == confidence_intervals(
            x, method=method
        )


def test_different_seed_gives_different_interval():
    x = skewed()
    assert confidence_interval(x, seed=0) != confidence_interval(x, seed=1)
    # ... but the mean is the data's, not the draw's.
    assert confidence_interval(x, seed=0).mean == confidence_interval(x, seed=1).mean


# ---------------------------------------------------------------- invariants


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_interval_contains_mean_for_skewed_data(method):
    for seed in range(5):
        ci = confidence_interval(skewed(40, seed=seed), method=method, seed=seed)
        assert ci.lo <= ci.mean <= ci.hi
        assert ci.lo < ci.hi


@pytest.mark.parametrize("method", ["percentile", "bca"])
@pytest.mark.parametrize("const", [0.1, 0.0, -3.7, 1e6 + 0.3])
def test_constant_data_gives_degenerate_interval_at_the_constant(method, const):
    ci = confidence_interval(np.full(7, const), method=method)
    assert ci == Interval(const, const, const)
    # A constant column next to a varying one is still exact.
    both = np.column_stack([skewed(7), np.full(7, const)])
    assert confidence_intervals(both, method=method)[1] == Interval(const, const, const)


def test_single_question_gives_its_value():
    assert confidence_interval([0.25], method="bca") == Interval(0.25, 0.25, 0.25)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_paired_interval_of_identical_runs_is_zero(method):
    a = skewed(100)
    ci = paired_interval(a, a.copy(), method=method)
    assert ci == Interval(0.0, 0.0, 0.0)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_paired_interval_equals_interval_of_differences(method):
    rng = np.random.default_rng(12)
    a = rng.random(150)
    b = np.clip(a + rng.normal(0.05, 0.1, 150), 0, 1)
    kw = dict(n_resamples=500, level=0.9, seed=4, method=method)
    assert paired_interval(a, b, **kw) == confidence_interval(b - a, **kw)


def test_paired_interval_is_narrower_than_unpaired_for_correlated_runs():
    rng = np.random.default_rng(13)
    a = rng.random(300)
    b = a + 0.02 + rng.normal(0, 0.01, 300)
    paired = paired_interval(a, b)
    width_b = confidence_interval(b).hi - confidence_interval(b).lo
    assert paired.lo > 0  # the small but consistent gain is detected
    assert paired.hi - paired.lo < width_b / 5


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_shifting_data_shifts_interval(method):
    x = skewed(80)
    base = confidence_interval(x, method=method)
    for c in (2.5, -10.0):
        moved = confidence_interval(x + c, method=method)
        np.testing.assert_allclose(
            [moved.mean, moved.lo, moved.hi],
            [base.mean + c, base.lo + c, base.hi + c],
            rtol=0,
            atol=1e-12,
        )


def test_width_for_25_reciprocal_ranks():
    rr = np.array([1.0] * 16 + [0.5] * 5 + [1 / 3] * 2 + [0.25, 0.0])
    assert rr.mean() == pytest.approx(0.7767, abs=1e-4)
    for method in ("percentile", "bca"):
        ci = confidence_interval(rr, method=method)
        assert 0.2 < ci.hi - ci.lo < 0.35
        assert 0.0 <= ci.lo <= ci.mean <= ci.hi <= 1.0


# ---------------------------------------------------------------- BCa


def test_bca_agrees_with_scipy():
    stats = pytest.importorskip("scipy.stats")
    x = skewed(200)
    # scipy >= 1.15 takes rng=, older versions random_state=.
    params = inspect.signature(stats.bootstrap).parameters
    seed_kw = "rng" if "rng" in params else "random_state"
    ref = stats.bootstrap(
        (x,), np.mean, n_resamples=10000, method="BCa",
        **{seed_kw: np.random.default_rng(1)},
    ).confidence_interval
    ci = confidence_interval(x, n_resamples=10000, method="bca")
    # Independent draws: Monte Carlo noise is ~0.003 here.
    assert ci.lo == pytest.approx(ref.low, abs=0.02)
    assert ci.hi == pytest.approx(ref.high, abs=0.02)


def test_bca_shifts_toward_the_skew():
    # Right-skewed data: BCa moves both ends up relative to percentile.
    x = skewed(200)
    pct = confidence_interval(x, n_resamples=10000)
    bca = confidence_interval(x, n_resamples=10000, method="bca")
    assert bca.lo > pct.lo and bca.hi > pct.hi
    assert bca.mean == pct.mean


@pytest.mark.parametrize("pair", [(0.0, 1.0), (0.1, 0.3), (1 / 3, 0.7)])
def test_bca_counts_ties_with_the_mean_as_half(pair):
    # Two questions: half the resamples tie with the observed mean (up to
    # rounding), a quarter fall on each side.  Counting ties as half gives
    # z0 ~ 0 and, with a = 0 for symmetric data, the percentile interval
    # [min, max]; a strict "<" count would give z0 ~ -0.67 and hi = the mean.
    x = np.array(pair)
    bca = confidence_interval(x, method="bca")
    assert bca == confidence_interval(x)
    assert (bca.lo, bca.hi) == pair


def test_bca_tails_follow_the_formula_with_ties_within_rounding():
    # Reciprocal-rank-like data where ~20% of resampled means equal the
    # observed mean mathematically but, after rounding, all compare below it.
    # They must still count as ties (half), as in the formula below.
    x = np.array([0.2, 0.0, 0.5, 0.0])
    centred = x - np.median(x)
    t = centred.mean()
    boot = np.sort(bootstrap_means(centred, n_resamples=4000)[:, 0])
    near = np.abs(boot - t) < 1e-12
    assert np.count_nonzero(near) > 600 and np.count_nonzero(boot == t) == 0

    nd = NormalDist()
    frac = (np.count_nonzero(boot < t - 1e-12) + 0.5 * np.count_nonzero(near)) / 4000
    z0 = nd.inv_cdf(frac)
    d = centred - t
    a = (d**3).sum() / (6 * (d**2).sum() ** 1.5)
    z = nd.inv_cdf(0.975)
    alpha1 = nd.cdf(z0 + (z0 - z) / (1 - a * (z0 - z)))
    alpha2 = nd.cdf(z0 + (z0 + z) / (1 - a * (z0 + z)))

    lower, upper = _bca_tails(centred, boot, tail=0.025)
    assert lower == pytest.approx(alpha1, rel=1e-9)
    assert upper == pytest.approx(1 - alpha2, rel=1e-9)


def test_bca_falls_back_to_percentile_when_z0_is_infinite():
    # One resample of continuous data is never tied with the mean, so it is
    # either above or below it: z0 = Phi^-1(0 or 1) is infinite.
    x = skewed(30)
    for seed in range(4):
        kw = dict(n_resamples=1, seed=seed)
        bca = confidence_interval(x, method="bca", **kw)
        assert bca == confidence_interval(x, **kw)


def test_bca_undefined_for_non_positive_denominator():
    # [0]*99 + [1]: a = sum d^3 / (6 (sum d^2)^1.5) ~= 0.164; at level
    # 1 - 1e-12, z = 7.03 so 1 - a (z0 + z) < 0 and BCa is undefined.
    x = np.array([0.0] * 99 + [1.0])
    centred = x - np.median(x)
    boot = np.sort(bootstrap_means(centred)[:, 0])
    assert _bca_tails(centred, boot, tail=(1 - 0.95) / 2) is not None
    assert _bca_tails(centred, boot, tail=0.5e-12) is None
    assert _bca_tails(np.zeros(5), np.zeros(10), tail=0.025) is None
    assert confidence_interval(x, level=1 - 1e-12, method="bca") == confidence_interval(
        x, level=1 - 1e-12
    )


# ---------------------------------------------------------------- misc / errors


def test_as_dict_is_json_ready():
    ci = confidence_interval(np.array([0.0, 1.0, 0.5, 0.5]))
    d = ci.as_dict()
    assert d == {"mean": 0.5, "ci": [ci.lo, ci.hi]}
    assert json.loads(json.dumps(d)) == d
    assert all(type(v) is float for v in (ci.mean, ci.lo, ci.hi))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_resamples=0), r"n_resamples must be an integer >= 1, got 0"),
        (dict(n_resamples=2.5), r"n_resamples must be an integer >= 1, got 2\.5"),
        (dict(n_resamples=True), r"n_resamples must be an integer >= 1"),
        (dict(level=0.0), r"level must be a number strictly between 0 and 1, got 0\.0"),
        (dict(level=1), r"level must be a number strictly between 0 and 1, got 1"),
        (dict(level=95), r"level must be a number strictly between 0 and 1, got 95"),
        (dict(level="0.95"), r"level must be a number strictly between 0 and 1"),
        (dict(method="BCa"), r"method must be one of \('percentile', 'bca'\), got 'BC"),
        (dict(seed=-1), r"seed must be an integer >= 0"),
        (dict(seed=None), r"seed must be an integer >= 0"),
    ],
)
def test_bad_arguments_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        confidence_intervals(np.arange(10.0), **kwargs)


def test_bad_chunk_size_raises():
    with pytest.raises(ValueError, match=r"chunk_size must be an integer >= 1, got 0"):
        bootstrap_means(np.arange(10.0), chunk_size=0)


@pytest.mark.parametrize(
    "values, match",
    [
        ([], r"values is empty"),
        (np.empty((5, 0)), r"values is empty"),
        ([0.5, np.nan, 1.0], r"values contain NaN or infinite entries"),
        ([0.5, np.inf], r"values contain NaN or infinite entries"),
        (np.zeros((2, 2, 2)), r"values must be 1-D .* or 2-D .*; got 3-D"),
    ],
)
def test_bad_values_raise(values, match):
    with pytest.raises(ValueError, match=match):
        confidence_intervals(values)
    with pytest.raises(ValueError, match=match):
        bootstrap_means(values)


def test_convenience_functions_check_shapes():
    with pytest.raises(ValueError, match=r"values must be 1-D for confidence_interval"):
        confidence_interval(np.zeros((4, 2)))
    with pytest.raises(ValueError, match=r"a and b must be 1-D arrays of the same len"):
        paired_interval(np.zeros(4), np.zeros(5))
