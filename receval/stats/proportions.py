"""A proportion's exact interval: how far a rate counted on a few trials can be trusted.

:func:`clopper_pearson` (Clopper & Pearson, "The use of confidence or fiducial limits
illustrated in the case of the binomial", Biometrika 1934): for k successes in n trials
at ``level``, the ends are beta quantiles, lo = B(a/2; k, n - k + 1) (0 when k = 0) and
hi = B(1 - a/2; k + 1, n - k) (1 when k = n), a = 1 - level. Each end alone is a
one-sided bound at level 1 - a/2 whatever the true rate (conservative: the binomial's
steps make the coverage at least the level).
"""

from __future__ import annotations

__all__ = ["clopper_pearson"]


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The two-sided exact interval of a proportion, k successes of n trials (n >= 1)."""
    from scipy.stats import beta

    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"{k} of {n}: give 0 <= k <= n, n >= 1")
    tail = (1.0 - level) / 2.0
    lo = float(beta.ppf(tail, k, n - k + 1)) if k > 0 else 0.0
    hi = float(beta.ppf(1.0 - tail, k + 1, n - k)) if k < n else 1.0
    return lo, hi
