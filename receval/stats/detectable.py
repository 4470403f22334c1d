"""How many questions are enough: power of the paired t-test, the smallest difference a
question set can detect, and the questions a named difference needs.

The power of the two-sided paired t-test on ``n`` differences at level ``alpha`` when
the true standardised effect (mean difference / its standard deviation) is ``e``:
with ``df = n - 1``, ``c = t_{1 - alpha/2, df}`` and noncentrality ``lam = e sqrt(n)``,
``power = P(T_{df, lam} > c) + P(T_{df, lam} < -c)``; one-sided ("larger"):
``P(T_{df, lam} > t_{1 - alpha, df})`` (Cohen, *Statistical Power Analysis*, 1988,
ch. 2; statsmodels' ``TTestPower``). Solving it for ``n`` gives the questions needed;
solving it for ``e`` at the ``n`` in hand, times the observed standard deviation of the
differences, the minimum detectable difference (Webber, Moffat & Zobel, "Statistical
power in retrieval experimentation", CIKM 2008; Sakai, "Topic set size design", Inf.
Retr. J. 19, 2016).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

#: The usual planning power and level.
POWER = 0.8
ALPHA = 0.05
ALTERNATIVES = ("two-sided", "larger")


def _check(alpha: float, power: float, alternative: str) -> None:
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must lie in (0, 1), got {alpha!r}, {power!r}")
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}")


def paired_t_power(effect: float, n: float, alpha: float = ALPHA, alternative: str = "two-sided") -> float:
    """Power of the paired t-test (module docstring); ``n`` may be real-valued."""
    from scipy import stats

    df = n - 1.0
    lam = effect * math.sqrt(n)
    if alternative == "larger":
        return float(stats.nct.sf(stats.t.isf(alpha, df), df, lam))
    critical = stats.t.isf(alpha / 2.0, df)
    # the far tail (rejecting with the wrong sign) underflows to NaN in scipy's nct
    # when it is far below 1e-10; it is 0 at any precision the power is read at
    far = float(stats.nct.cdf(-critical, df, lam))
    return float(stats.nct.sf(critical, df, lam)) + (far if math.isfinite(far) else 0.0)


def questions_needed(effect: float, alpha: float = ALPHA, power: float = POWER, alternative: str = "two-sided") -> float:
    """Questions ``n`` (real-valued; round up) at which the paired t-test at ``alpha``
    rejects with probability ``power`` when the standardised effect is ``effect`` (> 0).

    Starts from the normal approximation ``((z_{1-a'} + z_power) / effect)^2``
    (``a' = alpha/2`` two-sided; Chow, Shao & Wang, *Sample Size Calculations in Clinical
    Research*, 2008, eq. 3.1.2), which it always exceeds; at least 2 (a t-test needs a
    degree of freedom)."""
    from scipy import optimize, stats

    if not (math.isfinite(effect) and effect > 0):
        raise ValueError(f"effect_size must be finite and > 0, got {effect!r}")
    _check(alpha, power, alternative)

    def shortfall(n: float) -> float:
        return paired_t_power(effect, n, alpha, alternative) - power

    one_tail = alpha if alternative == "larger" else alpha / 2.0
    normal = ((stats.norm.isf(one_tail) + stats.norm.ppf(power)) / effect) ** 2
    low = 2.0  # below two questions the t distribution's tails are numerically useless
    if not shortfall(low) < 0:  # NaN: an effect so large the noncentral t overflows
        return low
    high = max(2.0 * normal, 4.0)
    while shortfall(high) < 0:
        high *= 2.0
    return float(optimize.brentq(shortfall, low, high, xtol=1e-12, rtol=1e-14))


@functools.lru_cache(maxsize=256)
def detectable_effect(n: int, alpha: float = ALPHA, power: float = POWER, alternative: str = "two-sided") -> float:
    """The standardised effect the paired t-test on ``n`` questions detects with
    probability ``power`` at ``alpha`` (``TTestPower().solve_power(nobs=n, ...)``).
    Kept per argument set: every pair over the same questions asks the same (a root
    of the noncentral t, about 10 ms)."""
    from scipy import optimize, stats

    if n < 2:
        raise ValueError(f"a paired t-test needs at least 2 questions, got {n}")
    _check(alpha, power, alternative)

    def shortfall(effect: float) -> float:
        return paired_t_power(effect, n, alpha, alternative) - power

    # bracket from the normal approximation: far above it the noncentral t returns NaN
    one_tail = alpha if alternative == "larger" else alpha / 2.0
    high = 2.0 * (stats.norm.isf(one_tail) + stats.norm.ppf(power)) / math.sqrt(n)
    while shortfall(high) < 0:
        high *= 1.5
    return float(optimize.brentq(shortfall, 1e-12, high, xtol=1e-14, rtol=1e-14))


@dataclass(frozen=True)
class Detectable:
    """What a question set can detect for one pair: ``difference`` = ``effect`` (in
    standard deviations of the differences) times ``sd`` (in the measure's units)."""

    n: int
    sd: float
    alpha: float
    power: float
    effect: float
    difference: float


def minimum_detectable_difference(diffs, alpha: float = ALPHA, power: float = POWER) -> Detectable:
    """The smallest mean difference the two-sided paired t-test on these questions
    detects with ``power`` at ``alpha``, if the differences' spread were the truth."""
    d = np.asarray(diffs, dtype=np.float64).ravel()
    if d.size < 2 or not np.isfinite(d).all():
        raise ValueError(f"a detectable difference needs at least 2 finite differences, got {d.size}")
    effect = detectable_effect(d.size, alpha, power)
    sd = float(d.std(ddof=1))
    return Detectable(int(d.size), sd, alpha, power, effect, effect * sd)


def questions_for(difference: float, diffs, alpha: float = ALPHA, power: float = POWER) -> int:
    """Questions the two-sided paired t-test needs to detect a mean difference of
    ``difference`` (in the measure's units, > 0) if the differences' observed standard
    deviation held; 2 when they have no spread (any difference shows at once)."""
    if not (math.isfinite(difference) and difference > 0):
        raise ValueError(f"the difference to detect must be finite and > 0, got {difference!r}")
    d = np.asarray(diffs, dtype=np.float64).ravel()
    sd = float(d.std(ddof=1)) if d.size > 1 else 0.0
    if sd <= 1e-12 * difference:
        return 2
    return math.ceil(questions_needed(difference / sd, alpha, power) - 1e-9)
