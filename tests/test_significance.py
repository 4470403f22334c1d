"""receval.stats.significance: the randomization test agrees with scipy's
permutation_test, the t-test with ttest_rel; the bootstrap-t test follows the t-test
on many questions. Calibration on null pairs: tests/test_calibration.py."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from receval.stats.bootstrap import bootstrap_means
from receval.stats import significance


def differences(kind: str, n: int, seed: int) -> np.ndarray:
    """Per-question differences shaped like a measure's: bounded, often tied at 0."""
    rng = np.random.default_rng(seed)
    if kind == "normal":
        return rng.normal(0.03, 0.2, n)
    if kind == "tied":  # rr-like: most questions equal in both runs
        d = rng.choice([-1, -0.5, 0, 0, 0, 0, 0.5, 1.0, 2 / 3], size=n)
        return d.astype(float)
    a, b = rng.random(n), rng.random(n)
    return np.clip(a + 0.08, 0, 1) - b


def mean_difference(x, y, axis):
    return np.mean(x - y, axis=axis)


@pytest.mark.parametrize("kind, n, seed", [("normal", 40, 0), ("tied", 50, 1), ("uniform", 30, 2), ("normal", 12, 3)])
def test_randomization_matches_scipy_permutation_test(kind, n, seed):
    """Paired sign flips are scipy's ``permutation_type="samples"`` on (x, y): the two
    p-values agree within Monte Carlo error (both drew 20,000 resamples; n = 12 is
    enumerated exactly by scipy)."""
    d = differences(kind, n, seed)
    y = np.random.default_rng(seed + 100).random(n)
    x = y + d
    B = 20_000
    ours = significance.randomization(d, n_resamples=B, seed=seed)[0]
    theirs = stats.permutation_test(
        (x, y), mean_difference, permutation_type="samples", n_resamples=B, vectorized=True,
        alternative="two-sided", rng=np.random.default_rng(seed + 7),
    )
    assert ours.statistic == pytest.approx(d.mean())
    assert ours.n_resamples == B
    se = np.sqrt(max(theirs.pvalue * (1 - theirs.pvalue), 1e-3) / B)
    assert abs(ours.p - theirs.pvalue) < 5 * np.sqrt(2) * se + 1 / B, (ours.p, theirs.pvalue)
    assert 0.001 < theirs.pvalue  # not a degenerate p at the floor


def test_randomization_p_never_zero_and_seeded():
    d = np.full(30, 0.5) + np.linspace(0, 0.01, 30)  # every flip but the observed is less extreme
    result = significance.randomization(d, n_resamples=999, seed=3)[0]
    assert result.p == pytest.approx(1 / 1000)  # the +1 correction: never 0
    again = significance.randomization(d, n_resamples=999, seed=3)[0]
    assert again == result
    zero = significance.randomization(np.zeros(20), n_resamples=500, seed=0)[0]
    assert zero.p == 1.0


def test_randomization_columns_share_flips():
    """Every column sees the same flips: a column alone has the same p as inside a batch."""
    rng = np.random.default_rng(4)
    d = rng.normal(0.05, 0.3, size=(60, 3))
    batch = significance.randomization(d, n_resamples=4000, seed=9)
    alone = [significance.randomization(d[:, j], n_resamples=4000, seed=9)[0] for j in range(3)]
    assert [t.p for t in batch] == [t.p for t in alone]
    assert [t.statistic for t in batch] == pytest.approx([t.statistic for t in alone], rel=1e-12)
    # flips depend on the seed only, not on the chunking
    flips = np.concatenate(list(significance.sign_flips(60, 4000, 9)))
    assert flips.shape == (4000, 60) and set(np.unique(flips)) == {-1.0, 1.0}
    assert abs(flips.mean()) < 0.01
    tiny_chunks = list(significance.sign_flips(60, 4000, 9, width=1 << 20))  # 4 rows a chunk
    assert len(tiny_chunks) == 1000
    np.testing.assert_array_equal(np.concatenate(tiny_chunks), flips)


@pytest.mark.parametrize("kind, n, seed", [("normal", 40, 0), ("tied", 50, 1), ("uniform", 8, 2)])
def test_t_matches_scipy_ttest_rel(kind, n, seed):
    d = differences(kind, n, seed)
    y = np.random.default_rng(seed).random(n)
    ours = significance.t_test(d)[0]
    theirs = stats.ttest_rel(y + d, y)
    assert ours.statistic == pytest.approx(theirs.statistic, rel=1e-9)
    assert ours.p == pytest.approx(theirs.pvalue, rel=1e-9)
    assert ours.n_resamples is None


def test_t_without_spread():
    assert significance.t_test(np.zeros(10))[0].p == 1.0
    constant = significance.t_test(np.full(10, 0.1))[0]
    assert constant.statistic == np.inf and constant.p == 0.0


def boot(d, n_resamples, seed):
    """Resampled means of d and of d^2 over one set of question draws."""
    d = d[:, None] if d.ndim == 1 else d
    both = bootstrap_means(np.hstack([d, d**2]), n_resamples=n_resamples, seed=seed)
    return both[:, : d.shape[1]], both[:, d.shape[1] :]


def test_bootstrap_p_follows_the_t_test_on_many_questions():
    """On 400 normal differences the bootstrap-t test and the t-test agree closely."""
    rng = np.random.default_rng(5)
    d = rng.normal(0.02, 0.25, size=(400, 4)) * [1, 0.5, 2, 1] + [0, 0.03, 0, -0.05]
    ours = significance.bootstrap(d, *boot(d, 20_000, 1))
    t = significance.t_test(d)
    for b, tt in zip(ours, t):
        assert b.n_resamples == 20_000
        assert b.p == pytest.approx(tt.p, abs=0.01 + 0.05 * tt.p)


def test_bootstrap_p_bounds_and_symmetry():
    rng = np.random.default_rng(6)
    d = rng.normal(0.0, 0.2, 50)
    means, squares = boot(d, 2000, 0)
    p = significance.bootstrap(d, means, squares)[0].p
    flipped = significance.bootstrap(-d, -means, squares)[0].p
    assert p == flipped and 1 / 2001 <= p <= 1
    far = significance.bootstrap(d + 1.0, *boot(d + 1.0, 2000, 0))[0]
    assert far.p == pytest.approx(1 / 2001)
    assert significance.bootstrap(np.zeros(20), *boot(np.zeros(20), 500, 0))[0].p == 1.0
    with pytest.raises(ValueError, match="resampled means have 1 columns for 2 pairs"):
        significance.bootstrap(np.ones((5, 2)), np.ones((10, 1)), np.ones((10, 1)))


def test_bad_differences_are_refused():
    with pytest.raises(ValueError, match=r"differences must be finite, \(n,\) or \(n, m\) with n >= 2"):
        significance.t_test([0.1])
    with pytest.raises(ValueError, match="differences must be finite"):
        significance.randomization([0.1, np.nan, 0.2])
