"""The size of each paired comparison a report shows: Hedges' g_z with its interval and
the smallest difference the question set detects (the verdict itself, interval and
p-value, is :mod:`receval.stats.paired`'s; these say how large and how sensitive)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from receval.stats.detectable import ALPHA, POWER, Detectable, minimum_detectable_difference
from receval.stats.effects import Effect, hedges_gz, on_interval


@dataclass(frozen=True)
class PairSize:
    """One pair's effect (Hedges' g_z) and what its question set can detect."""

    effect: Effect
    detectable: Detectable

    def as_dict(self) -> dict:
        mde = {"difference": self.detectable.difference, "alpha": self.detectable.alpha, "power": self.detectable.power}
        return {"effect": self.effect.as_dict(), "mde": mde}


def all_pairs(n_runs: int) -> list[tuple[int, int]]:
    """Every unordered pair of runs once, ``(a, b)`` with ``a > b`` (b listed first)."""
    return [(a, b) for b in range(n_runs) for a in range(b + 1, n_runs)]


def pair_size(diffs, level: float = 0.95, alpha: float = ALPHA, power: float = POWER,
              interval: tuple[float, float] | None = None) -> PairSize:
    """:class:`PairSize` of one pair's per-question differences (``(n,)``, n >= 2);
    ``interval``: the paired procedure's interval of their mean, which g_z's interval
    then is in its units (:func:`receval.stats.effects.on_interval`)."""
    d = np.asarray(diffs, dtype=np.float64)
    effect = hedges_gz(d, level) if interval is None else on_interval(d, *interval, level)
    return PairSize(effect, minimum_detectable_difference(d, alpha, power))
