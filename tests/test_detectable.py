"""receval.stats.detectable: the minimum detectable difference and the questions a
difference needs agree with statsmodels' TTestPower to 1e-6."""

from __future__ import annotations

import math

import numpy as np
import pytest

from receval.stats.detectable import (
    detectable_effect,
    minimum_detectable_difference,
    paired_t_power,
    questions_for,
    questions_needed,
)

from conftest import lazy_import

statsmodels_power = lazy_import("statsmodels.stats.power")


@pytest.mark.parametrize("effect, n, alpha", [(0.2, 50, 0.05), (0.5, 12, 0.01), (0.05, 2000, 0.05), (1.2, 5, 0.1)])
@pytest.mark.parametrize("alternative", ["two-sided", "larger"])
def test_power_agrees_with_statsmodels(effect, n, alpha, alternative):
    want = statsmodels_power.TTestPower().power(effect_size=effect, nobs=n, alpha=alpha, alternative=alternative)
    assert paired_t_power(effect, n, alpha, alternative) == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("n, alpha, power", [(47, 0.05, 0.8), (225, 0.05, 0.8), (10, 0.01, 0.9), (1000, 0.05, 0.5)])
def test_detectable_effect_agrees_with_statsmodels(n, alpha, power):
    want = statsmodels_power.TTestPower().solve_power(nobs=n, alpha=alpha, power=power, alternative="two-sided")
    assert detectable_effect(n, alpha, power) == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("effect, alpha, power", [(0.02, 0.05, 0.8), (0.1, 0.05, 0.8), (0.5, 0.01, 0.9), (1.5, 0.05, 0.8)])
@pytest.mark.parametrize("alternative", ["two-sided", "larger"])
def test_questions_needed_agrees_with_statsmodels(effect, alpha, power, alternative):
    want = statsmodels_power.TTestPower().solve_power(effect_size=effect, alpha=alpha, power=power, alternative=alternative)
    assert questions_needed(effect, alpha, power, alternative) == pytest.approx(want, rel=1e-6)


def test_minimum_detectable_difference_of_a_question_set():
    """47 questions whose differences spread with sd 0.2: about 0.084 is detectable."""
    rng = np.random.default_rng(0)
    d = rng.normal(0.0, 1.0, 47)
    d = (d - d.mean()) / d.std(ddof=1) * 0.2
    result = minimum_detectable_difference(d)
    want = statsmodels_power.TTestPower().solve_power(nobs=47, alpha=0.05, power=0.8, alternative="two-sided")
    assert result.n == 47 and result.sd == pytest.approx(0.2)
    assert result.effect == pytest.approx(want, rel=1e-6)
    assert result.difference == pytest.approx(0.2 * want, rel=1e-6)
    assert result.difference == pytest.approx(0.0838, abs=5e-4)
    # the number of questions that detects that very difference is the set's size
    assert questions_for(result.difference * (1 + 1e-9), d) == 47


def test_questions_for_a_named_difference():
    rng = np.random.default_rng(1)
    d = rng.normal(0.01, 0.15, 100)
    sd = d.std(ddof=1)
    want = statsmodels_power.TTestPower().solve_power(effect_size=0.02 / sd, alpha=0.05, power=0.8, alternative="two-sided")
    assert questions_for(0.02, d) == math.ceil(want)
    assert questions_for(0.02, np.full(10, 0.3)) == 2
    with pytest.raises(ValueError, match="the difference to detect must be finite and > 0, got 0"):
        questions_for(0, d)


def test_select_keeps_its_one_sided_sample_size():
    """receval.stats.power delegates to this module's formula (one home)."""
    from receval.stats.power import questions_needed as select_questions

    assert select_questions(0.3, 0.0125) == questions_needed(0.3, 0.0125, 0.8, "larger")
