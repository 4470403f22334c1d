"""How many questions a paired comparison needs: the sample size of a one-sided paired t-test.

``receval.select`` asks it when no cheaper run is shown not worse at the user's margin:
how many questions would show non-inferiority if the differences observed held. A
future "how many questions are enough" check reuses :func:`questions_needed`.
"""

from __future__ import annotations

import math

import numpy as np

#: Power the sample sizes are planned for (the usual 80%).
POWER = 0.8


def questions_needed(effect_size: float, alpha: float, power: float = POWER) -> float:
    """Questions ``n`` (real-valued; round up) at which a one-sided paired t-test at level
    ``alpha`` rejects with probability ``power`` when the true standardised effect is
    ``effect_size`` (mean difference over its per-question standard deviation, > 0).

    Exact power of the one-sample t-test on the differences (the paired t-test): with
    ``df = n - 1``, ``t* = t_{1-alpha, df}`` and noncentrality ``effect_size * sqrt(n)``,
    ``power(n) = 1 - F_nct(t*; df, effect_size * sqrt(n))``, solved for ``n``. This is
    statsmodels' ``TTestPower().solve_power(..., alternative="larger")`` (Cohen 1988,
    ch. 2; Chow, Shao & Wang, *Sample Size Calculations in Clinical Research*, 2nd ed.,
    2008, sec. 3.1). It starts from the normal approximation
    ``n = ((z_{1-alpha} + z_{power}) / effect_size)^2`` (Chow et al. eq. 3.1.2), which
    it always exceeds, and is at least 2 (a t-test needs a degree of freedom).
    """
    from scipy import optimize, stats

    if not (math.isfinite(effect_size) and effect_size > 0):
        raise ValueError(f"effect_size must be finite and > 0, got {effect_size!r}")
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must lie in (0, 1), got {alpha!r}, {power!r}")

    def shortfall(n: float) -> float:
        df = n - 1.0
        critical = stats.t.isf(alpha, df)
        return stats.nct.sf(critical, df, effect_size * math.sqrt(n)) - power

    normal = ((stats.norm.isf(alpha) + stats.norm.ppf(power)) / effect_size) ** 2
    low = 2.0  # below two questions the t distribution's tails are numerically useless
    if not shortfall(low) < 0:  # NaN: an effect so large the noncentral t overflows
        return low
    high = max(2.0 * normal, 4.0)
    while shortfall(high) < 0:
        high *= 2.0
    return float(optimize.brentq(shortfall, low, high, xtol=1e-12, rtol=1e-14))


def non_inferiority_questions(diffs, margin: float, alpha: float, power: float = POWER) -> int | None:
    """Questions needed to show ``mean(diffs) > -margin`` (non-inferiority) with a
    one-sided paired test at ``alpha`` and ``power``, if the observed mean and standard
    deviation of the per-question differences ``diffs`` (run - leader) were the truth:
    :func:`questions_needed` at effect ``(mean + margin) / sd``, rounded up.

    None when no number of questions shows it: the observed mean is at or below
    ``-margin``. With no spread (every difference equal, above ``-margin``) 2 suffice."""
    diffs = np.asarray(diffs, dtype=np.float64)
    gap = float(np.mean(diffs)) + margin
    if not gap > 0:
        return None
    sd = float(np.std(diffs, ddof=1)) if diffs.size > 1 else 0.0
    if sd <= 1e-12 * gap:  # no spread beyond rounding
        return 2
    return math.ceil(questions_needed(gap / sd, alpha, power) - 1e-9)
