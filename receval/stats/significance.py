"""Paired significance tests on per-question differences (run A - run B), two-sided.

Every function takes the differences as ``(n,)`` or ``(n, m)`` (one column per pair,
questions in the same order) and returns one :class:`Test` per column. The columns of
:func:`randomization` share one set of sign flips (:func:`sign_flips`), which is what a
maxT correction over the pairs needs (:func:`receval.stats.corrections.maxt`).

- ``randomization``: the paired randomization (sign-flip) test IR uses by default
  (Smucker, Allan & Carterette, "A comparison of statistical significance tests for
  information retrieval evaluation", CIKM 2007): under the null each question's two
  scores are exchangeable, so each difference's sign is a fair coin. Statistic
  ``|mean(d)|``; ``p = (1 + #{|mean(s * d)| >= |mean(d)|}) / (B + 1)`` over ``B`` random
  flip vectors ``s``, the +1 counting the observed flip, so ``p`` is never 0 and the test
  keeps its level (Phipson & Smyth, "Permutation p-values should never be zero", SAGMB
  9(1), 2010).
- ``t``: the paired t-test, ``t = mean(d) / (sd(d) / sqrt(n))`` with ``n - 1`` degrees of
  freedom (Student 1908; scipy's ``ttest_rel``).
- ``bootstrap``: the paired bootstrap-t test (Efron & Tibshirani, *An Introduction to
  the Bootstrap*, 1993, algorithm 16.2; Sakai, "Evaluating evaluation metrics based on
  the bootstrap", SIGIR 2006): the differences shifted to mean 0 are resampled and
  studentized, ``t* = (mean* - mean(d)) / (sd* / sqrt(n))``, and
  ``p = (1 + #{|t*| >= |t|}) / (B + 1)``. Studentizing matters on a few dozen questions:
  the plain shifted mean rejects 6% of null pairs at 5% (A/A, :mod:`.calibration`). It
  reads the resampled means of ``d`` and ``d^2`` the caller drew (one draw for both,
  the draws of the report's intervals), so p-value and interval share their resamples.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

#: Relative slack when comparing a resampled statistic with the observed one: flips that
#: reproduce the observed value up to rounding count as "as extreme" (as scipy's
#: ``permutation_test`` does), so ties, zero differences among them, are not lost.
TIE = 1e-12
#: Sign flips held in memory at once (entries of the (chunk, n) matrix).
_MAX_CHUNK_ENTRIES = 1 << 22
TESTS = ("randomization", "t", "bootstrap")


@dataclass(frozen=True)
class Test:
    """One paired test: its name, statistic (mean difference, or t), two-sided p-value,
    and the resamples it drew (None for the t-test)."""

    name: str
    statistic: float
    p: float
    n_resamples: int | None = None


def as_columns(diffs) -> np.ndarray:
    arr = np.asarray(diffs, dtype=np.float64)
    arr = arr[:, None] if arr.ndim == 1 else arr
    if arr.ndim != 2 or arr.shape[0] < 2 or not np.isfinite(arr).all():
        raise ValueError(f"differences must be finite, (n,) or (n, m) with n >= 2; got shape {arr.shape}")
    return arr


def sign_flips(n: int, n_resamples: int, seed: int, width: int = 1) -> Iterator[np.ndarray]:
    """Random sign vectors, ``(chunk, n)`` float64 blocks of +-1 adding up to
    ``n_resamples`` rows, from ``np.random.default_rng(seed)``: the same seed gives the
    same flips whatever the chunk size (one stream of doubles), so every pair of a
    report sees the same flips. ``width``: columns each block is multiplied into, so
    that the ``(chunk, width)`` products stay bounded too."""
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    rng = np.random.default_rng(seed)
    chunk = max(1, _MAX_CHUNK_ENTRIES // max(n, width, 1))
    for start in range(0, n_resamples, chunk):
        size = min(chunk, n_resamples - start)
        yield np.where(rng.random((size, n)) < 0.5, -1.0, 1.0)


def _exceed_count(null: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Per column: resampled values with magnitude at least the observed one's."""
    scale = np.maximum(np.abs(observed), 1e-300)
    return (np.abs(null) >= np.abs(observed) - TIE * scale).sum(axis=0)


def randomization(diffs, n_resamples: int = 10_000, seed: int = 0) -> list[Test]:
    """Two-sided paired randomization (sign-flip) test per column (module docstring);
    the flips are counted chunk by chunk, never all held."""
    arr = as_columns(diffs)
    n = arr.shape[0]
    observed = arr.mean(axis=0)
    count = sum(_exceed_count(flips @ arr / n, observed) for flips in sign_flips(n, n_resamples, seed, arr.shape[1]))
    p = (count + 1.0) / (n_resamples + 1.0)
    return [Test("randomization", float(o), float(q), n_resamples) for o, q in zip(observed, p)]


def t_statistics(diffs) -> np.ndarray:
    """Paired t per column; 0 when every difference is 0, +-inf when all are equal and not 0."""
    arr = as_columns(diffs)
    n = arr.shape[0]
    mean = arr.mean(axis=0)
    sd = arr.std(axis=0, ddof=1)
    spread = sd > 1e-12 * np.maximum(np.abs(mean), 1e-300)
    t = mean / (np.where(spread, sd, 1.0) / math.sqrt(n))
    return np.where(spread, t, np.where(mean == 0, 0.0, np.copysign(np.inf, mean)))


def t_test(diffs) -> list[Test]:
    """Two-sided paired t-test per column: ``p = 2 * P(T_{n-1} >= |t|)``."""
    from scipy import stats

    arr = as_columns(diffs)
    t = t_statistics(arr)
    p = np.minimum(2.0 * stats.t.sf(np.abs(t), arr.shape[0] - 1), 1.0)
    return [Test("t", float(s), float(q)) for s, q in zip(t, p)]


def bootstrap(diffs, resampled_means, resampled_squares) -> list[Test]:
    """Two-sided paired bootstrap-t test per column (module docstring) from the means of
    the differences (``resampled_means``, ``(B, m)``) and of their squares
    (``resampled_squares``) over ``B`` resamples of the questions, drawn together."""
    arr = as_columns(diffs)
    n, m = arr.shape
    means = np.asarray(resampled_means, dtype=np.float64).reshape(len(resampled_means), -1)
    squares = np.asarray(resampled_squares, dtype=np.float64).reshape(means.shape[0], -1)
    if means.shape[1] != m or squares.shape != means.shape:
        raise ValueError(f"resampled means have {means.shape[1]} columns for {m} pairs")
    observed = arr.mean(axis=0)
    t = t_statistics(arr)
    variance = np.maximum(squares - means**2, 0.0) * n / (n - 1)
    spread = variance > 1e-24 * np.maximum(squares, 1e-300)
    shifted = means - observed
    t_star = np.where(spread, shifted / np.sqrt(np.where(spread, variance, 1.0) / n), np.where(shifted == 0, 0.0, np.inf))
    count = (np.abs(t_star) >= np.abs(t) * (1.0 - TIE)).sum(axis=0)
    p = (count + 1.0) / (means.shape[0] + 1.0)
    return [Test("bootstrap", float(o), float(q), means.shape[0]) for o, q in zip(observed, p)]
