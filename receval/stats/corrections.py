"""Corrections for many paired comparisons at once: Holm, Benjamini-Hochberg, maxT.

A sweep's report tests every pair shown (against a baseline, along a chain, or all
pairs); at 5% per test, some pair would look different by luck far more often than 5%
of the time. Each function returns a :class:`Corrected` with adjusted p-values in input
order; a comparison is rejected at level ``alpha`` when its adjusted p is <= ``alpha``.

- ``holm``: step-down family-wise control (S. Holm, "A simple sequentially rejective
  multiple test procedure", Scand. J. Statist. 6(2):65-70, 1979): sort p ascending;
  ``p~_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))`` (1-based ``i``).
- ``bh``: false discovery rate (Benjamini & Hochberg, "Controlling the false discovery
  rate", JRSS B 57(1):289-300, 1995): ``p~_(i) = min_{j >= i} min(1, m p_(j) / j)``.
- ``maxt``: single-step maxT (Westfall & Young, *Resampling-Based Multiple Testing*,
  1993, algorithm 2.8; Boytsov, Belova & Westfall, "Deciding on an adjustment for
  multiplicity in IR experiments", SIGIR 2013): one set of sign flips for every pair;
  each flip's largest ``|t|`` over the pairs is the null of the maximum, and
  ``p~_j = (1 + #{max_k |t*_k| >= |t_j|}) / (B + 1)``. It uses the correlation between
  pairs that share a run, so it rejects more than Holm at the same family-wise level.

These match statsmodels' ``multipletests`` (``holm``, ``fdr_bh``) value for value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from receval.stats.significance import TIE, as_columns, sign_flips, t_statistics

#: Relative slack on the rejection threshold (the bootstrap's count rounding): an adjusted
#: p of 2 * 50 / 2000 * (1 + 1e-16) must still count as <= 0.05.
SLACK = 1e-9
CORRECTIONS = ("holm", "bh", "maxt")


@dataclass(frozen=True)
class Corrected:
    """Adjusted p-values, in input order, and the method that adjusted them."""

    method: str
    p: tuple[float, ...]
    p_adjusted: tuple[float, ...]

    def rejected(self, alpha: float) -> tuple[bool, ...]:
        return tuple(q <= alpha * (1.0 + SLACK) for q in self.p_adjusted)


def _p_array(p_values) -> np.ndarray:
    p = np.asarray(p_values, dtype=np.float64).ravel()
    if not ((p >= 0) & (p <= 1)).all():
        raise ValueError(f"p-values must lie in [0, 1], got {p_values!r}")
    return p


def holm_adjusted(p_values) -> np.ndarray:
    """Holm's adjusted p-values (module docstring), input order; ties keep input order."""
    p = _p_array(p_values)
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = stepped
    return out


def holm(p_values) -> Corrected:
    p = _p_array(p_values)
    return Corrected("holm", tuple(p.tolist()), tuple(holm_adjusted(p).tolist()))


def bh(p_values) -> Corrected:
    """Benjamini-Hochberg adjusted p-values (module docstring)."""
    p = _p_array(p_values)
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = m * p[order] / np.arange(1, m + 1)
    stepped = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    out = np.empty(m)
    out[order] = stepped
    return Corrected("bh", tuple(p.tolist()), tuple(out.tolist()))


def _flipped_t(flips: np.ndarray, arr: np.ndarray, sum_squares: np.ndarray) -> np.ndarray:
    """|t| of every column under each flip: the flips change the mean, not sum d^2."""
    n = arr.shape[0]
    mean = flips @ arr / n
    variance = np.maximum(sum_squares - n * mean**2, 0.0) / (n - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(mean) / np.sqrt(variance / n)
    return np.where(variance > 0, t, np.where(mean == 0, 0.0, np.inf))


def maxt(diffs, n_resamples: int = 10_000, seed: int = 0, p_values=None) -> Corrected:
    """Westfall-Young single-step maxT over the columns of ``diffs`` ``(n, m)`` with the
    flips of :func:`receval.stats.significance.sign_flips` (same ``seed``: the same flips
    as the per-pair randomization tests). ``p_values``: the unadjusted p-values to keep
    beside the adjusted ones (by default each pair's own randomization p from these
    flips, which equals :func:`~receval.stats.significance.randomization`'s: ``|t|`` rises
    with ``|mean|`` when ``sum d^2`` is fixed)."""
    arr = as_columns(diffs)
    n, m = arr.shape
    threshold = np.abs(t_statistics(arr)) * (1.0 - TIE)
    sum_squares = (arr**2).sum(axis=0)
    beaten = np.zeros(m)  # flips whose largest |t| over all pairs reaches the pair's |t|
    own = np.zeros(m)  # flips whose |t| for the pair itself reaches it
    for flips in sign_flips(n, n_resamples, seed, m):
        t = _flipped_t(flips, arr, sum_squares)
        beaten += (t.max(axis=1)[:, None] >= threshold).sum(axis=0)
        own += (t >= threshold).sum(axis=0)
    adjusted = (beaten + 1.0) / (n_resamples + 1.0)
    raw = (own + 1.0) / (n_resamples + 1.0) if p_values is None else _p_array(p_values)
    return Corrected("maxt", tuple(map(float, raw)), tuple(map(float, adjusted)))


def correct(method: str, p_values, diffs=None, n_resamples: int = 10_000, seed: int = 0) -> Corrected:
    """``method`` in :data:`CORRECTIONS`; maxT also needs the differences behind the p-values."""
    if method == "holm":
        return holm(p_values)
    if method == "bh":
        return bh(p_values)
    if method == "maxt":
        if diffs is None:
            raise ValueError("maxt needs the per-question differences, not only p-values")
        return maxt(diffs, n_resamples, seed, p_values)
    raise ValueError(f"unknown correction {method!r}: use {', '.join(CORRECTIONS)}")

