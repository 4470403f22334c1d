"""The bootstrap distribution of a sample median, drawn from its exact law.

Resampling ``n`` questions with replacement ``B`` times and taking each resample's
median (:func:`receval.stats.bootstrap.bootstrap_medians`) costs ``B x n``: 2,000 x 1,000,000
draws per run. The law of that bootstrap median is known in closed form, so
:func:`median_draws` draws ``B`` values from it directly, at a cost of ``O(n log n + B)``
whatever ``B`` (Maritz & Jarrett, "A note on estimating the variance of the sample
median", JASA 73, 1978, for the law of an order statistic of a resample; Efron,
"Bootstrap methods: another look at the jackknife", Ann. Statist. 7, 1979, sec. 3).

With the values sorted ``x_1 <= ... <= x_n`` and a resample putting ``C_j`` of its ``n``
draws on ``x_1 .. x_j`` (``C_j ~ Binomial(n, j/n)``):

- the ``k``-th smallest value of the resample is ``x_J``, ``J`` the first position with
  ``C_J >= k``: ``P(J <= j) = P(C_j >= k)`` (the median for odd ``n``, ``k = (n + 1) / 2``);
- for even ``n`` the median is ``(x_J + x_J') / 2``, ``J'`` the position of the
  ``(k + 1)``-th smallest, ``k = n / 2``. ``J' = J`` unless exactly ``k`` draws fall on
  ``x_1 .. x_J``, which given ``J = j`` has probability
  ``P(C_j = k) (1 - ((j - 1) / j)^k) / P(J = j)``; then the other ``n - k`` draws fall
  uniformly on ``x_{j+1} .. x_n`` and ``J' = j + M`` with ``P(M > m) = ((n - j - m) / (n - j))^(n - k)``.

Each draw takes one to three uniforms from ``seed`` (inverse CDFs); the values drawn
have exactly the distribution of resampled medians (``tests/test_medians.py`` checks
the law against every resample of small sets), though not the same values as a given
resampling seed.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import binom

#: Positions further than this many ``sqrt(n)`` from the median rank have ``P(C_j >= k)``
#: 0 or 1 in double precision (Hoeffding: ``P(|C_j - j| >= t) <= 2 exp(-2 t^2 / n)``, here
#: below ``exp(-800)``), so the law is computed on this window only.
_WINDOW = 20.0


def position_law(n: int) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """The law of ``J`` for ``n`` values (module docstring), on a window of positions:
    ``(k, positions, cdf, stop)`` with ``cdf[i] = P(J <= positions[i])`` (1-based
    positions; the last is 1) and, for even ``n``, ``stop[i] = P(C_j = k | J = j)`` (the
    ``(k + 1)``-th smallest lies beyond ``j``); zeros for odd ``n``."""
    if n < 1:
        raise ValueError(f"a median needs at least one value, got n={n}")
    k = n // 2 if n % 2 == 0 else (n + 1) // 2
    reach = int(math.ceil(_WINDOW * math.sqrt(n))) + 2
    positions = np.arange(max(1, k - reach), min(n, k + reach) + 1, dtype=np.int64)
    p = positions / n
    cdf = binom.sf(k - 1, n, p)  # P(C_j >= k)
    cdf[-1] = 1.0 if positions[-1] == n else cdf[-1]
    if n % 2:
        return k, positions, cdf, np.zeros_like(cdf)
    below = binom.sf(k - 1, n, (positions - 1) / n)  # P(J <= j - 1)
    mass = np.maximum(cdf - below, 0.0)  # P(J = j)
    with np.errstate(divide="ignore"):  # j = 1: ((j - 1) / j)^k is 0
        exactly = binom.pmf(k, n, p) * -np.expm1(k * np.log1p(-1.0 / positions))  # P(J = j, C_j = k)
    with np.errstate(divide="ignore", invalid="ignore"):
        stop = np.where(mass > 0, np.minimum(exactly / mass, 1.0), 0.0)
    stop[positions >= n] = 0.0
    return k, positions, cdf, stop


def median_draws(values, n_resamples: int = 2000, seed: int = 0) -> np.ndarray:
    """``n_resamples`` draws from the bootstrap law of the median of the finite 1-D
    ``values`` (module docstring), shape ``(n_resamples,)``; the same seed, the same draws."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    if x.ndim != 1 or x.size == 0 or not np.isfinite(x).all():
        raise ValueError("median_draws takes a non-empty 1-D array of finite values")
    n = x.size
    k, positions, cdf, stop = position_law(n)
    u = np.random.default_rng(seed).random((n_resamples, 3))
    at = np.minimum(np.searchsorted(cdf, u[:, 0], side="left"), len(cdf) - 1)
    j = positions[at]
    if n % 2:
        return x[j - 1]
    beyond = u[:, 1] < stop[at]
    rest = (n - j).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        m = np.ceil(rest * -np.expm1(np.log1p(-u[:, 2]) / (n - k)))
    m = np.clip(np.nan_to_num(m, nan=1.0), 1, np.maximum(rest, 1)).astype(np.int64)
    second = np.where(beyond, j + m, j)
    return (x[j - 1] + x[second - 1]) / 2.0
