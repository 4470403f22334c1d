"""receval.stats.power: the paired-t sample size agrees with statsmodels and means what it says."""

import math
from statistics import NormalDist

import numpy as np
import pytest

from receval.stats.power import non_inferiority_questions, questions_needed

from conftest import lazy_import

power_module = lazy_import("statsmodels.stats.power")


@pytest.mark.parametrize(
    "effect, alpha, power",
    [(0.02, 0.025, 0.8), (0.1, 0.0125, 0.8), (0.3, 0.001, 0.8), (0.8, 0.05, 0.9), (1.5, 0.0125, 0.8)],
)
def test_agrees_with_statsmodels_ttest_power(effect, alpha, power):
    want = power_module.TTestPower().solve_power(
        effect_size=effect, alpha=alpha, power=power, alternative="larger"
    )
    assert questions_needed(effect, alpha, power) == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("effect, alpha", [(0.05, 0.025), (0.3, 0.0125), (1.0, 0.05)])
def test_exceeds_the_normal_approximation(effect, alpha):
    # NormalIndPower with ratio=0 is the one-sample z-test: ((z_{1-a} + z_power) / d)^2
    normal = power_module.NormalIndPower().solve_power(
        effect_size=effect, alpha=alpha, power=0.8, alternative="larger", ratio=0
    )
    z = NormalDist()
    assert normal == pytest.approx(((z.inv_cdf(1 - alpha) + z.inv_cdf(0.8)) / effect) ** 2, rel=1e-6)
    assert questions_needed(effect, alpha) > normal
    assert questions_needed(effect, alpha) - normal < 3 + 2 * effect  # t costs a few questions


def test_the_power_is_what_a_simulation_finds():
    """At the planned size, a one-sided paired t-test on normal differences with that
    effect rejects 80% of the time."""
    from scipy import stats

    effect, alpha = 0.5, 0.0125
    n = math.ceil(questions_needed(effect, alpha))
    rng = np.random.default_rng(0)
    diffs = rng.normal(effect, 1.0, size=(20000, n))
    t = diffs.mean(axis=1) / (diffs.std(axis=1, ddof=1) / math.sqrt(n))
    rejected = (t > stats.t.isf(alpha, n - 1)).mean()
    assert 0.8 <= rejected < 0.8 + 0.03  # n is rounded up: at least the planned power


def test_non_inferiority_questions_shift_by_the_margin():
    diffs = np.array([0, 0, -1, 0, 0, 0, -1, 0, 1, 0, 0, 0] * 2, dtype=float)  # mean -1/24
    mean, sd = diffs.mean(), diffs.std(ddof=1)
    want = power_module.TTestPower().solve_power(
        effect_size=(mean + 0.3) / sd, alpha=0.0125, power=0.8, alternative="larger"
    )
    assert non_inferiority_questions(diffs, 0.3, 0.0125) == math.ceil(want)
    assert non_inferiority_questions(diffs, 1 / 24, 0.0125) is None  # mean already at -margin
    assert non_inferiority_questions(diffs, 0.01, 0.0125) is None
    assert non_inferiority_questions(np.full(10, -0.01), 0.05, 0.0125) == 2  # no spread


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="effect_size must be finite and > 0"):
        questions_needed(0.0, 0.05)
    with pytest.raises(ValueError, match="alpha and power"):
        questions_needed(0.3, 1.5)
