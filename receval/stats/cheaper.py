"""When one run is cheaper than another, and the tie rule, for ``receval select``.

Costs (``--prefer``): ``p50_ms`` (median latency per question), ``chunks`` (indexed)
and ``money`` (US dollars per 1,000 questions). ``chunks`` and ``money`` are counts and
prices, so they compare exactly. Latency is measured, and two runs of one config differ
by chance; so a run is cheaper by ``p50_ms`` only beyond that noise: when the percentile
bootstrap interval (the selection's level) of the difference of the two median
latencies lies entirely below 0. Each run's per-question latencies are resampled on
their own (:func:`receval.stats.bootstrap.bootstrap_medians`, seed ``seed + run index``), not
paired by question: a question's latency is mostly timing jitter, not something both
runs share, and resampling apart keeps the verdict conservative (a run that is cheaper
in every question by a constant 3 microseconds is still a tie when the latencies
spread by a millisecond).

The tie rule (:meth:`CostOrder.cheapest`): the cheapest run and every run not
measurably dearer than it are tied; of these the higher mean wins, then fewer stages,
then the smaller index.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from receval.core.settings import BootstrapConfig
from receval.stats.bootstrap import bootstrap_medians, percentile_bounds

PREFERENCES = ("p50_ms", "chunks", "money")


@dataclass
class CostOrder:
    """Which of the runs is cheaper than which, by one cost (see the module docstring)."""

    by: str  # p50_ms, chunks or money
    costs: list[float]
    level: float
    medians: np.ndarray | None = None  # (n_resamples, n_runs) resampled p50s, for p50_ms

    def cheaper(self, i: int, j: int) -> bool:
        """Run ``i`` costs less than run ``j``: exactly, or for latency beyond its noise."""
        if not self.costs[i] < self.costs[j]:  # an unknown (NaN) cost is never cheaper
            return False
        if self.medians is None:
            return True
        (_, hi), = percentile_bounds(self.medians[:, i] - self.medians[:, j], self.level)
        return hi < 0

    def cheapest(self, indices: list[int], means: list[float], stages: list[int]) -> int:
        """The tie rule: the lowest cost among ``indices`` and every one not measurably
        dearer than it are tied; the higher mean wins, then fewer stages, then the
        smaller index."""
        first = min(indices, key=lambda i: (self.costs[i], -means[i], stages[i], i))
        tied = [i for i in indices if not self.cheaper(first, i)]
        return min(tied, key=lambda i: (-means[i], stages[i], i))

    def noise_rule(self) -> str | None:
        if self.medians is None:
            return None
        return (f"p50_ms: cheaper only when the {self.level:.0%} bootstrap interval of the "
                "difference of median latencies (each run's latencies resampled) lies below 0")


def cost_order(costs: list[float], by: str, boot: BootstrapConfig, latencies: list[np.ndarray] | None = None) -> CostOrder:
    """The :class:`CostOrder` of runs costing ``costs`` by ``by``; for ``p50_ms`` each
    run's per-question ``latencies`` (milliseconds, none missing), whose medians are
    resampled on their own (seed ``boot.seed + run index``)."""
    if by != "p50_ms":
        return CostOrder(by, costs, boot.level)
    medians = np.empty((boot.n_resamples, len(latencies)))
    for j, latency in enumerate(latencies):
        medians[:, j] = bootstrap_medians(latency, n_resamples=boot.n_resamples, seed=boot.seed + j)[:, 0]
    return CostOrder(by, costs, boot.level, medians)
