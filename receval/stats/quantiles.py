"""A quantile of per-question values (a latency's p50 or p95) with its confidence interval.

The interval is the exact distribution-free one of order statistics (Conover,
*Practical Nonparametric Statistics*, 3rd ed., 1999, §3.2, "confidence interval for a
quantile"; also Hahn & Meeker, *Statistical Intervals*, 1991, §5.2): with the ``n``
values sorted, ``x(1) <= ... <= x(n)``, and ``Y ~ Binomial(n, q)`` the number of values
below the population's ``q``-quantile ``x_q``,

    P(x(r) <= x_q <= x(s)) >= P(r <= Y <= s - 1) = F(s - 1) - F(r - 1),

where ``F`` is Y's distribution function. The lower end is ``x(r)`` with ``r - 1`` the
largest count whose ``F`` is at most ``(1 - level) / 2``; the upper end ``x(s)`` with
``s - 1`` the smallest count whose ``F`` is at least ``1 - (1 - level) / 2``. Its
coverage is at least ``level`` for any continuous distribution; it needs no resampling
(one binomial distribution function per ``n``, so it is cheap at any ``n``). With too
few values for an end at that level (no ``r >= 1``: ``q^n > (1 - level) / 2``), that end
does not exist and is None: at 95%, a p95's upper end needs at least 72 values.
``scipy.stats.quantile_test``'s ``confidence_interval`` chooses the same order
statistics (the tests hold it as the reference).

The point value is the quantile as ``numpy.percentile`` interpolates it (linear), as
the report has always shown it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import binom

METHOD = ("distribution-free order-statistic interval over questions (Conover 1999, §3.2): "
          "coverage at least the level, no resampling")


@dataclass(frozen=True)
class QuantileInterval:
    """The ``q``-quantile of ``n`` values (``value``) and its interval ``[lo, hi]`` at
    ``level``; an end the values are too few for is None."""

    q: float
    value: float
    lo: float | None
    hi: float | None
    level: float
    n: int

    def as_dict(self) -> dict:
        return {"value": self.value, "ci": [self.lo, self.hi], "n": self.n}


def order_ranks(n: int, q: float, level: float) -> tuple[int | None, int | None]:
    """0-based indices into the sorted values of the interval's ends (None: that end
    does not exist for ``n`` values at ``level``); see the module docstring."""
    if n < 1:
        return None, None
    tail = (1.0 - float(level)) / 2.0
    # F only near n q: further than 20 sqrt(n) counts away it is within exp(-800) of 0 or 1
    # (Hoeffding), below any tail a level leaves, so a million values cost a few thousand terms
    reach = int(np.ceil(20.0 * np.sqrt(n))) + 2
    first = max(0, int(n * float(q)) - reach)
    cdf = binom.cdf(np.arange(first, min(n, int(n * float(q)) + reach) + 1), n, float(q))
    cdf[-1] = 1.0 if first + len(cdf) - 1 == n else cdf[-1]  # F(n) = 1
    below = first + int(np.count_nonzero(cdf <= tail))  # counts 0 .. below-1 have F <= tail: r - 1 = below - 1
    low = below - 1 if below >= 1 else None  # x(r) with r = below: index below - 1
    high = first + int(np.argmax(cdf >= 1.0 - tail))  # s - 1: the first count with F >= 1 - tail
    return low, (high if high < n else None)


def quantile_interval(values, q: float, level: float) -> QuantileInterval | None:
    """The ``q``-quantile of the finite ``values`` with its order-statistic interval at
    ``level``; None when no value is finite."""
    values = np.asarray(values, dtype=np.float64)
    values = np.sort(values[np.isfinite(values)])
    if values.size == 0:
        return None
    low, high = order_ranks(values.size, q, level)
    return QuantileInterval(
        q=float(q), value=float(np.percentile(values, 100.0 * q)),
        lo=None if low is None else float(values[low]), hi=None if high is None else float(values[high]),
        level=float(level), n=int(values.size),
    )


def fewest_values(q: float, level: float) -> int:
    """The fewest values for which both ends of the ``q``-quantile's interval exist at
    ``level`` (what a note says when an end is missing)."""
    tail = (1.0 - float(level)) / 2.0
    extreme = max(float(q), 1.0 - float(q))  # the end that needs more values
    return int(np.ceil(np.log(tail) / np.log(extreme)))
