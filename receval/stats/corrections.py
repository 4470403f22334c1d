"""Corrections for many paired comparisons at once: Holm, Benjamini-Hochberg.

A sweep's report tests every pair shown (against a baseline, along a chain, or all
pairs); at 5% per test, some pair would look different by luck far more often than 5%
of the time. Each function returns a :class:`Corrected` with adjusted p-values in input
order; a comparison is rejected at level ``alpha`` when its adjusted p is <= ``alpha``.

- ``holm``: step-down family-wise control (S. Holm, "A simple sequentially rejective
  multiple test procedure", Scand. J. Statist. 6(2):65-70, 1979): sort p ascending;
  ``p~_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))`` (1-based ``i``).
- ``bh``: false discovery rate (Benjamini & Hochberg, "Controlling the false discovery
  rate", JRSS B 57(1):289-300, 1995): ``p~_(i) = min_{j >= i} min(1, m p_(j) / j)``.
These match statsmodels' ``multipletests`` (``holm``, ``fdr_bh``) value for value. Each
comes with the levels its intervals are drawn at (:func:`adjusted_levels`), so a
corrected interval and a corrected p-value never disagree. (Westfall-Young maxT is not
offered: its adjusted p-values have no interval that agrees with them.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Relative slack on the rejection threshold (the bootstrap's count rounding): an adjusted
#: p of 2 * 50 / 2000 * (1 + 1e-16) must still count as <= 0.05.
SLACK = 1e-9
CORRECTIONS = ("holm", "bh")


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


def adjusted_levels(method: str, p_values, alpha: float) -> list[float]:
    """Per comparison, the significance level its correction tests it at, so that its
    interval at ``1 - level`` excludes the null value exactly when the correction rejects
    it (the interval and the adjusted p never disagree):

    - ``holm``: sort the p-values ascending (ties in input order); the ``i``-th smallest
      (``i = 0, 1, ...``) is tested at ``alpha / (m - i)`` while every smaller one was
      rejected; at the first that is not, stop: it and every larger one are reported at
      the stop's level (its p-value is at least the stop's, so its interval at that level
      still reaches the null value) (:func:`receval.stats.holm.holm` reads these);
    - ``bh``: every comparison at ``max(R, 1) * alpha / m``, ``R`` the number rejected: the
      false coverage-statement rate intervals of Benjamini & Yekutieli ("False discovery
      rate-adjusted multiple confidence intervals for selected parameters", JASA 100,
      2005), which exclude 0 exactly for the comparisons BH rejects."""
    p = _p_array(p_values)
    if method == "holm":
        m = p.size
        adjusted = holm_adjusted(p)
        levels = [0.0] * m
        stopped: float | None = None
        for i, j in enumerate(np.argsort(p, kind="stable")):
            if stopped is None and not adjusted[j] <= alpha * (1.0 + SLACK):
                stopped = alpha / (m - i)
            levels[j] = alpha / (m - i) if stopped is None else stopped
        return levels
    if method == "bh":
        rejected = sum(bh(p).rejected(alpha))
        return [max(rejected, 1) * alpha / p.size] * p.size
    raise ValueError(f"unknown correction {method!r}: use {', '.join(CORRECTIONS)}")


def correct(method: str, p_values) -> Corrected:
    """``method`` in :data:`CORRECTIONS`."""
    if method == "holm":
        return holm(p_values)
    if method == "bh":
        return bh(p_values)
    raise ValueError(f"unknown correction {method!r}: use {', '.join(CORRECTIONS)}")

