"""Holm's step-down correction for the comparisons ``receval select`` makes against its leader.

Comparing every cheaper run with the best one is ``m`` tests at once; at a per-test
level of 5%, some run that is in fact worse by more than the margin would pass as "not
worse" by luck far more often than 5% of the time. Holm's procedure keeps the
family-wise error rate (the chance of calling *any* such run not worse) at ``alpha``
while rejecting more than a plain Bonferroni split (:mod:`receval.stats.noninferiority`).
"""

from __future__ import annotations

from dataclasses import dataclass

from receval.stats.corrections import SLACK, adjusted_levels, holm_adjusted


@dataclass(frozen=True)
class HolmStep:
    """One comparison after Holm: the level it was tested at and the verdict."""

    alpha: float  # tested at 1 - alpha (for comparisons after the stop: the stop's alpha)
    rejected: bool


def holm(p_values: list[float], alpha: float) -> list[HolmStep]:
    """Holm (1979) step-down, one :class:`HolmStep` per p-value, in input order.

    Source: S. Holm, "A simple sequentially rejective multiple test procedure",
    Scandinavian Journal of Statistics 6(2):65-70, 1979. Sort the ``m`` p-values
    ascending; the ``i``-th smallest (``i = 0, 1, ...``) is rejected when
    ``p <= alpha / (m - i)`` *and* every smaller one was rejected; at the first that is
    not, stop: it and all larger ones are kept. Ties keep input order.

    The verdicts read Holm's adjusted p-values (:func:`receval.stats.corrections.holm_adjusted`,
    the one home of the rule): rejected when ``max_{j<=i} (m - j) p_(j) <= alpha``, which is
    the step-down stop above; each step's level is
    :func:`receval.stats.corrections.adjusted_levels`' (a kept comparison after the stop
    at the stop's level, so every kept interval reads as kept).
    """
    if not p_values:
        return []
    rejected = holm_adjusted(p_values) <= alpha * (1.0 + SLACK)
    return [HolmStep(alpha=level, rejected=bool(r))
            for level, r in zip(adjusted_levels("holm", p_values, alpha), rejected)]
