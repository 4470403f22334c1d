"""Bootstrap confidence intervals over questions.

The report puts a 95% interval on every mean metric (MRR, recall, ...) and on
the paired difference between two runs.  Questions are the resampling unit:
each bootstrap replicate draws ``n`` questions with replacement and takes the
mean.

Everything is driven by one ``np.random.Generator`` built from ``seed``, so
the same inputs give byte-identical output and no global random state is
touched.  All columns of a ``(n_questions, n_columns)`` array are resampled
with the *same* question draws (common random numbers): the draws are turned
into per-resample question counts and every column's mean comes from a single
matrix product ``counts @ values / n``.  This is what makes 100 runs x 10,000
questions x 2,000 resamples cheap, and it is also exactly what pairing needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real
from statistics import NormalDist

import numpy as np

__all__ = [
    "Interval",
    "bootstrap_means",
    "bootstrap_medians",
    "percentile_bounds",
    "confidence_intervals",
    "confidence_interval",
    "paired_interval",
]

#: Upper bound on resample indices held in memory at once (one chunk).  Each
#: index entry costs ~16 bytes at peak (the int64 draw plus the float64
#: count matrix), so a chunk stays around 64 MiB whatever the input size.
_MAX_CHUNK_ENTRIES = 1 << 22

#: Relative slack when turning a tail probability into a count of dropped
#: resamples: 0.9 is stored as 0.90000000000000002, so 2000 * (1 - 0.9) / 2
#: evaluates to 99.99999999999997 and a bare int() would drop 99, not 100.
_COUNT_SLACK = 1e-9

_METHODS = ("percentile", "bca")
_NORMAL = NormalDist()


@dataclass(frozen=True)
class Interval:
    """A mean with its confidence interval ``[lo, hi]``."""

    mean: float
    lo: float
    hi: float

    def as_dict(self) -> dict:
        """JSON-ready form: ``{"mean": m, "ci": [lo, hi]}``."""
        return {"mean": self.mean, "ci": [self.lo, self.hi]}


# --------------------------------------------------------------------------
# argument checking


def _as_matrix(values) -> np.ndarray:
    """Return ``values`` as a float64 ``(n, m)`` array; 1-D becomes ``(n, 1)``."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, np.newaxis]
    elif arr.ndim != 2:
        raise ValueError(
            f"values must be 1-D (n_questions,) or 2-D (n_questions, n_columns); "
            f"got {arr.ndim}-D array of shape {arr.shape}"
        )
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(
            f"values is empty (shape {arr.shape}); need at least one question "
            f"and one column"
        )
    if not np.isfinite(arr).all():
        raise ValueError(
            "values contain NaN or infinite entries; pass finite per-question "
            "values only (drop or impute missing questions first)"
        )
    return arr


def _check_positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, Integral) or seed < 0:
        raise ValueError(
            f"seed must be an integer >= 0 (for reproducible draws), got {seed!r}"
        )
    return int(seed)


def _check_level(level) -> float:
    if (
        isinstance(level, bool)
        or not isinstance(level, Real)
        or not (0.0 < float(level) < 1.0)
    ):
        raise ValueError(
            f"level must be a number strictly between 0 and 1, got {level!r}"
        )
    return float(level)


def _check_method(method) -> str:
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    return method


# --------------------------------------------------------------------------
# resampling core


def _centre(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Split ``arr`` into per-column reference values and centred data.

    The reference is the column median, which is a data value (or the midpoint
    of two), so a constant column centres to exact zeros and its bootstrap
    means come back as exactly the constant.  Centring also keeps the
    sums in the matrix product small, which helps precision.
    """
    ref = np.median(arr, axis=0)
    return ref, arr - ref


def _resample_counts(n: int, n_resamples: int, seed: int, chunk_size: int | None):
    """Per chunk of resamples: ``(start, counts)`` with ``counts[r, i]`` how often
    question ``i`` is drawn in resample ``start + r``, shape ``(c, n)``, float64.

    Resample ``r`` uses the question indices ``rng.integers(0, n, size=n)`` drawn in
    order, exactly as a plain loop over resamples would, because an ``(a, n)`` block
    followed by a ``(b, n)`` block consumes the generator stream like one
    ``(a + b, n)`` block. Chunking therefore never changes the result, and every
    statistic built on these counts (means, medians) sees the same draws for a seed.
    """
    if chunk_size is None:
        chunk_size = max(1, _MAX_CHUNK_ENTRIES // n)
    chunk_size = min(chunk_size, n_resamples)
    rng = np.random.default_rng(seed)
    for start in range(0, n_resamples, chunk_size):
        c = min(chunk_size, n_resamples - start)
        idx = rng.integers(0, n, size=(c, n))
        # Offset row r's indices by r * n so one bincount yields a (c, n)
        # matrix of how often each question appears in each resample.
        idx += np.arange(0, c * n, n, dtype=idx.dtype)[:, np.newaxis]
        counts = np.bincount(idx.ravel(), minlength=c * n)
        del idx
        yield start, counts.reshape(c, n).astype(np.float64)


def _centred_boot_means(
    centred: np.ndarray, n_resamples: int, seed: int, chunk_size: int | None
) -> np.ndarray:
    """Bootstrap means of the columns of ``centred``, shape ``(n_resamples, m)``
    (draws from :func:`_resample_counts`)."""
    n, m = centred.shape
    out = np.empty((n_resamples, m), dtype=np.float64)
    for start, counts in _resample_counts(n, n_resamples, seed, chunk_size):
        np.divide(counts @ centred, n, out=out[start : start + counts.shape[0]])
        del counts
    return out


def bootstrap_means(
    values, *, n_resamples: int = 2000, seed: int = 0, chunk_size: int | None = None
) -> np.ndarray:
    """Resampled means over questions, shape ``(n_resamples, m)``, in draw order.

    ``values`` is ``(n,)`` or ``(n, m)``: one row per question, one column per
    metric/run (``m = 1`` for 1-D input).  All columns share the same question
    draws.  ``chunk_size`` (resamples per chunk) only bounds memory; by default
    a chunk holds at most ~4M indices.  The result does not depend on it.
    """
    arr = _as_matrix(values)
    n_resamples = _check_positive_int("n_resamples", n_resamples)
    seed = _check_seed(seed)
    if chunk_size is not None:
        chunk_size = _check_positive_int("chunk_size", chunk_size)
    ref, centred = _centre(arr)
    return _centred_boot_means(centred, n_resamples, seed, chunk_size) + ref


def bootstrap_medians(values, *, n_resamples: int = 2000, seed: int = 0) -> np.ndarray:
    """Resampled medians over questions, shape ``(n_resamples, m)``: the same question
    draws as :func:`bootstrap_means` with that seed, so a median's resample ``r`` and a
    mean's resample ``r`` are over the same questions.

    Each resample's median is read from cumulative draw counts over the column's
    sorted values (no per-resample sort): the ``k``-th smallest drawn value is the
    first sorted value whose cumulative count reaches ``k``; for an even ``n`` the
    median is the mean of the ``n/2``-th and ``(n/2 + 1)``-th, as ``np.median``.
    """
    arr = _as_matrix(values)
    n_resamples = _check_positive_int("n_resamples", n_resamples)
    seed = _check_seed(seed)
    n, m = arr.shape
    order = np.argsort(arr, axis=0, kind="stable")
    ranks = [(n + 1) // 2, n // 2 + 1]  # equal for odd n
    out = np.empty((n_resamples, m), dtype=np.float64)
    for start, counts in _resample_counts(n, n_resamples, seed, None):
        rows = slice(start, start + counts.shape[0])
        for j in range(m):
            cumulative = np.cumsum(counts[:, order[:, j]], axis=1)
            sorted_values = arr[order[:, j], j]
            low, high = ((cumulative < k).sum(axis=1) for k in ranks)
            out[rows, j] = (sorted_values[low] + sorted_values[high]) / 2.0
    return out


def percentile_bounds(resampled, level: float) -> list[tuple[float, float]]:
    """Per column of resampled statistics ``(n_resamples, m)``: the percentile
    interval ``(lo, hi)`` at ``level``, by the rule of :func:`confidence_intervals`
    (drop ``int(n_resamples * (1 - level) / 2)`` from each end)."""
    boot = np.sort(np.asarray(resampled, dtype=np.float64).reshape(len(resampled), -1), axis=0)
    level = _check_level(level)
    b = boot.shape[0]
    k = min(_n_dropped((1.0 - level) / 2.0, b), (b - 1) // 2)
    return [(float(boot[k, j]), float(boot[b - 1 - k, j])) for j in range(boot.shape[1])]


# --------------------------------------------------------------------------
# intervals


def _n_dropped(prob: float, n_resamples: int) -> int:
    """``int(n_resamples * prob)``: resamples dropped from one end for tail ``prob``."""
    return max(math.floor(n_resamples * prob * (1.0 + _COUNT_SLACK)), 0)


def _bca_tails(
    centred: np.ndarray, boot_sorted: np.ndarray, tail: float
) -> tuple[float, float] | None:
    """BCa lower/upper tail probabilities for one centred column, or None.

    Returns ``(alpha1, 1 - alpha2)``; ``None`` means BCa is undefined for this
    column (constant data, z0 infinite, or a non-positive denominator) and the
    caller should use the percentile interval.
    """
    n = centred.shape[0]
    B = boot_sorted.shape[0]
    theta = centred.mean()
    dev = centred - theta
    ss = float(dev @ dev)
    if n < 2 or ss == 0.0:
        return None
    accel = float((dev**3).sum()) / (6.0 * ss**1.5)

    # Treat bootstrap means within rounding of the observed mean as ties:
    # for discrete metrics (reciprocal ranks) exact ties are common and the
    # two sums are computed in different orders.
    tol = 4.0 * n * np.finfo(np.float64).eps * float(np.abs(centred).max())
    below = int(np.searchsorted(boot_sorted, theta - tol, side="left"))
    at_or_below = int(np.searchsorted(boot_sorted, theta + tol, side="right"))
    frac = (below + at_or_below) / (2.0 * B)
    if not 0.0 < frac < 1.0:
        return None
    z0 = _NORMAL.inv_cdf(frac)

    z_hi = -_NORMAL.inv_cdf(tail)  # not inv_cdf(1 - tail): that rounds to 1
    num_lo = z0 - z_hi
    num_hi = z0 + z_hi
    den_lo = 1.0 - accel * num_lo
    den_hi = 1.0 - accel * num_hi
    if not (den_lo > 0.0 and den_hi > 0.0):
        return None
    lower_tail = _NORMAL.cdf(z0 + num_lo / den_lo)  # alpha1
    upper_tail = _NORMAL.cdf(-(z0 + num_hi / den_hi))  # 1 - alpha2
    if not (math.isfinite(lower_tail) and math.isfinite(upper_tail)):
        return None
    return lower_tail, upper_tail


def confidence_intervals(
    values,
    *,
    n_resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    method: str = "percentile",
) -> list[Interval]:
    """One bootstrap :class:`Interval` per column of ``values``, ``(n,)`` or ``(n, m)``.

    Percentile (default): with ``tail = (1 - level) / 2`` and
    ``k = int(n_resamples * tail)``, drop the ``k`` smallest and ``k`` largest
    sorted bootstrap means; ``lo = sorted[k]``, ``hi = sorted[n_resamples-1-k]``.
    For 2000 resamples at 95% that is the 51st and the 1950th smallest.

    BCa (``method="bca"``; Efron & Tibshirani 1993, ch. 14), per column with
    observed mean ``t``, bootstrap means ``t*_b`` and ``Phi`` the normal CDF::

        z0     = Phi^-1( (#{t*_b < t} + #{t*_b <= t}) / (2 B) )   # ties count half
        a      = sum_i d_i^3 / (6 * (sum_i d_i^2)^(3/2)),  d_i = t_(.) - t_(i)
               = sum_i (x_i - t)^3 / (6 * (sum_i (x_i - t)^2)^(3/2))   # for the mean
        alpha1 = Phi( z0 + (z0 + z_tail)   / (1 - a (z0 + z_tail)) )
        alpha2 = Phi( z0 + (z0 + z_1-tail) / (1 - a (z0 + z_1-tail)) )

    where ``t_(i)`` are the jackknife (leave-one-out) means and ``z_p =
    Phi^-1(p)``; then drop ``int(B * alpha1)`` resamples from the bottom and
    ``int(B * (1 - alpha2))`` from the top (with z0 = a = 0 this is the
    percentile rule).  BCa corrects the percentile interval for bias and
    skewness of the bootstrap distribution, which matters for skewed
    per-question metrics.  A column falls back to the percentile interval
    when BCa is undefined: constant data (a is 0/0), all bootstrap means on
    one side of ``t`` (z0 infinite), or a denominator ``1 - a(z0 + z) <= 0``.
    """
    arr = _as_matrix(values)
    n_resamples = _check_positive_int("n_resamples", n_resamples)
    level = _check_level(level)
    seed = _check_seed(seed)
    method = _check_method(method)

    ref, centred = _centre(arr)
    boot = _centred_boot_means(centred, n_resamples, seed, None)
    boot.sort(axis=0)
    means = ref + centred.mean(axis=0)

    tail = (1.0 - level) / 2.0
    k = min(_n_dropped(tail, n_resamples), (n_resamples - 1) // 2)
    intervals = []
    for j in range(arr.shape[1]):
        k_lo = k_hi = k
        if method == "bca":
            tails = _bca_tails(centred[:, j], boot[:, j], tail)
            if tails is not None:
                bca_lo = _n_dropped(tails[0], n_resamples)
                bca_hi = _n_dropped(tails[1], n_resamples)
                if bca_lo + bca_hi < n_resamples:  # always, barring rounding
                    k_lo, k_hi = bca_lo, bca_hi
        intervals.append(
            Interval(
                mean=float(means[j]),
                lo=float(boot[k_lo, j] + ref[j]),
                hi=float(boot[n_resamples - 1 - k_hi, j] + ref[j]),
            )
        )
    return intervals


def confidence_interval(values, **kw) -> Interval:
    """Bootstrap interval of the mean of a 1-D array; keywords as
    :func:`confidence_intervals`."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(
            f"values must be 1-D for confidence_interval, got shape {arr.shape}; "
            f"use confidence_intervals for several columns"
        )
    return confidence_intervals(arr, **kw)[0]


def paired_interval(a, b, **kw) -> Interval:
    """Interval of ``mean(b - a)`` from resampled per-question differences.

    ``a`` and ``b`` are the same questions' values under two runs (1-D, same
    order).  Resampling the differences keeps the per-question pairing, so the
    interval reflects only how the runs disagree, not how hard questions are.
    Keywords as :func:`confidence_intervals`.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(
            f"a and b must be 1-D arrays of the same length (one value per "
            f"question); got shapes {a.shape} and {b.shape}"
        )
    return confidence_interval(b - a, **kw)
