"""Effect size of a paired comparison: Hedges' g_z with a confidence interval.

With many questions every test rejects, so a report needs the size of a difference
next to its p-value (Ihemelandu & Ekstrand, "Statistical inference: the missing piece
of RecSys experiment reliability discourse", 2023). For paired differences ``d``:

- Cohen's ``d_z = mean(d) / sd(d)`` (``sd`` with ``n - 1``; Cohen 1988, eq. 2.3.5;
  Lakens, "Calculating and reporting effect sizes...", Front. Psychol. 4:863, 2013, eq. 7);
- Hedges' ``g_z = J(n - 1) * d_z`` with the exact small-sample correction
  ``J(df) = Gamma(df / 2) / (sqrt(df / 2) * Gamma((df - 1) / 2))`` (Hedges, J. Educ.
  Stat. 6(2):107-128, 1981, eq. 6e; about ``1 - 3 / (4 df - 1)``);
- its interval inverts the noncentral t: with ``t = d_z sqrt(n)``, the noncentrality
  bounds ``lam`` solve ``P(T_{n-1, lam} <= t) = 1 - a/2`` and ``= a/2``; the interval is
  ``J * lam / sqrt(n)`` (Steiger & Fouladi 1997, in *What if there were no significance
  tests?*; Cumming & Finch, Educ. Psychol. Meas. 61(4), 2001).

A report's pairs show g_z with :func:`on_interval` instead: the paired procedure's own
interval of the mean difference (:mod:`receval.stats.paired`) in units of ``sd / J``, so
g_z's interval excludes 0 exactly when the verdict's does (the noncentral t is another
procedure, and beside a randomization test it could disagree with the verdict).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Effect:
    """Hedges' g_z of a pair and its interval at ``level``."""

    hedges_gz: float
    lo: float
    hi: float
    level: float
    n: int

    def as_dict(self) -> dict:
        return {"hedges_gz": self.hedges_gz, "ci": [self.lo, self.hi]}


def hedges_correction(df: int) -> float:
    """Hedges' exact J(df) (module docstring), from log-gammas to avoid overflow."""
    from scipy.special import gammaln

    return math.exp(gammaln(df / 2.0) - gammaln((df - 1) / 2.0)) / math.sqrt(df / 2.0)


def _noncentrality(t: float, df: int, tail: float) -> float:
    """The ``lam`` with ``P(T_{df, lam} <= t) = tail`` (decreasing in ``lam``)."""
    from scipy import optimize, stats

    def gap(lam: float) -> float:
        return stats.nct.cdf(t, df, lam) - tail

    width = 2.0 + abs(t) * 0.5
    low, high = t - width, t + width
    while gap(low) < 0:
        low -= width
        width *= 2
    while gap(high) > 0:
        high += width
        width *= 2
    return float(optimize.brentq(gap, low, high, xtol=1e-12, rtol=1e-12))


def hedges_gz(diffs, level: float = 0.95) -> Effect:
    """Hedges' g_z of the paired differences with its noncentral-t interval.

    No spread (every difference equal): g_z is 0 when they are 0, else +-inf, and the
    interval is the point."""
    d = np.asarray(diffs, dtype=np.float64).ravel()
    n = d.size
    if n < 3 or not np.isfinite(d).all():
        raise ValueError(f"an effect size needs at least 3 finite differences, got {n}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    df = n - 1
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    if sd <= 1e-12 * max(abs(mean), 1e-300):
        g = 0.0 if mean == 0 else math.copysign(math.inf, mean)
        return Effect(g, g, g, level, n)
    j = hedges_correction(df)
    t = mean / sd * math.sqrt(n)
    tail = (1.0 - level) / 2.0
    lo = _noncentrality(t, df, 1.0 - tail) / math.sqrt(n)
    hi = _noncentrality(t, df, tail) / math.sqrt(n)
    return Effect(j * mean / sd, j * lo, j * hi, level, n)


def on_interval(diffs, lo: float, hi: float, level: float) -> Effect:
    """Hedges' g_z of the paired differences with the interval ``[lo, hi]`` of their mean
    (the paired procedure's, at ``level``) in g_z's units: ``J * [lo, hi] / sd``."""
    d = np.asarray(diffs, dtype=np.float64).ravel()
    mean, sd = float(d.mean()), float(d.std(ddof=1)) if d.size > 1 else 0.0
    if d.size < 3 or sd <= 1e-12 * max(abs(mean), 1e-300):  # too few, or no spread: as hedges_gz says
        return hedges_gz(d, level)
    j = hedges_correction(d.size - 1)
    return Effect(j * mean / sd, j * lo / sd, j * hi / sd, level, d.size)
