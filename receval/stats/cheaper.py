"""When one run is cheaper than another, and the tie rule, for ``receval select``.

Costs (``--prefer``): ``p50_ms`` (median latency per question), ``chunks`` (indexed)
and ``money`` (US dollars per 1,000 questions). ``chunks`` and ``money`` are counts and
prices, so they compare exactly. Latency is measured: two runs of one config differ by
chance, and a whole run can be slower because the machine was busier while it ran (a
drift the questions of one run share, which resampling them cannot see). So a verdict
by ``p50_ms`` must hold on a rerun of the same sweep; in this order:

1. **Stages first.** Each run's *stage tree* is the multiset of the stages it runs
   (component kinds with their models, and the chunks indexed; built by the caller). A
   run whose stages are part of another's does less work: it is cheaper, and the other
   is never cheaper than it (hybrid runs dense and bm25: dense and bm25 are each
   cheaper than hybrid, whatever the clock said).
2. **The same stages tie** (BM25 at other k1 and b does the same work), unless repeats
   of each (runs of one config, ``groups``) show a difference that holds in every
   pair of repeats: the slowest repeat of one faster than the fastest of the other by
   more than the threshold below.
3. **Otherwise latency, beyond a stated minimum, the sweep's own noise and the drift
   between runs**: run i is cheaper than j only when the percentile interval (the
   selection's level) of ``median_i - median_j`` lies below ``-threshold * median_j``.
   The threshold is the larger of :data:`MIN_DIFFERENCE` (10%, the minimum practical
   difference) and the noise measured in the sweep: the largest relative spread of the
   medians of runs with the same stages (their true cost is equal, so their spread is
   what the clock adds). Each run's latencies are resampled on their own (seed ``seed +
   run index``), the resampled medians drawn from their exact law
   (:mod:`receval.stats.medians`), so the cost is the same at a million questions as at
   a hundred. Each resampled median is then multiplied by ``exp(drift * z)``, ``z``
   standard normal, one per run and resample (seed ``seed + DRIFT_SEED``): the drift a
   whole run shares (the machine's state while it ran), which resampling its questions
   cannot see, as a random effect of the run (the log median's standard deviation
   between identical runs). ``drift`` is the larger of :data:`DRIFT_SD`, measured by
   ``benchmarks/latency_drift.py`` (identical runs of one sweep on a 2-core machine of
   the kind CI runs on), and the sweep's own, pooled over its runs with the same stages
   (:func:`pooled_drift`). Without it, bm25 and tfidf over the same chunks swap "faster"
   between identical sweeps; with it, a pair of identical configs is called faster in
   at most the level's share of reruns (``tests/test_cheaper_drift.py``).

The tie rule (:meth:`CostOrder.cheapest`): of the runs given, those no other of them is
cheaper than are tied; of these the higher mean wins, then fewer stages, then the
smaller index. Nothing here reads the raw clock order of two tied runs, so the same
sweep rerun gives the same choice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field

import numpy as np

from receval.core.settings import BootstrapConfig
from receval.stats.bootstrap import percentile_bounds
from receval.stats.medians import median_draws

PREFERENCES = ("p50_ms", "chunks", "money")
MIN_DIFFERENCE = 0.10  # latency: cheaper only by more than this share of the dearer run's median
#: the standard deviation of the log of a run's median latency between identical runs of one
#: sweep (the drift a whole run shares), measured by benchmarks/latency_drift.py
DRIFT_SD = 0.12  # measured 0.024 (quiet) to 0.098 (load 2), library and scifact; above them
DRIFT_SEED = 7919  # the drift draws' seed: boot.seed + this (apart from the runs' own resampling seeds)

Tree = Counter  # a run's stages: stage -> how many times it runs


def part_of(a: Tree, b: Tree) -> bool:
    """Every stage of ``a`` runs in ``b``, and ``b`` runs more: ``a``'s work is part of ``b``'s."""
    return a != b and all(b[stage] >= n for stage, n in a.items())


def sweep_noise(p50: list[float], trees: list[Tree]) -> float:
    """The largest relative spread (max / min - 1) of the medians of runs with the same stages."""
    groups = ([c for c in group if np.isfinite(c) and c > 0] for group in _same_stages(p50, trees))
    return float(max((max(c) / min(c) - 1 for c in groups if len(c) > 1), default=0.0))


def pooled_drift(groups: list[list[float]]) -> float:
    """The pooled standard deviation of the log medians within ``groups`` (each the
    medians of runs whose true cost is equal); 0.0 when no group holds two."""
    logs = [np.log([c for c in group if np.isfinite(c) and c > 0]) for group in groups]
    logs = [g for g in logs if len(g) > 1]
    dof = sum(len(g) - 1 for g in logs)
    return float(np.sqrt(sum(((g - g.mean()) ** 2).sum() for g in logs) / dof)) if dof else 0.0


def _same_stages(p50: list[float], trees: list[Tree]) -> list[list[float]]:
    """The medians grouped by stage tree: runs whose true cost is equal."""
    groups: dict[tuple, list[float]] = {}
    for cost, tree in zip(p50, trees):
        groups.setdefault(tuple(sorted(tree.items(), key=repr)), []).append(cost)
    return list(groups.values())


@dataclass
class CostOrder:
    """Which of the runs is cheaper than which, by one cost (see the module docstring)."""

    by: str  # p50_ms, chunks or money
    costs: list[float]
    level: float
    medians: np.ndarray | None = None  # (n_resamples, n_runs) resampled p50s, for p50_ms
    trees: list[Tree] | None = None  # each run's stages, for p50_ms
    groups: list[Hashable] = field(default_factory=list)  # runs of one config share a group (repeats)
    noise: float = 0.0  # the sweep's measured relative spread among runs with the same stages
    drift: float = 0.0  # sd of a run's log median between identical runs: a random effect per run
    shifts: np.ndarray | None = None  # (n_resamples, n_runs) exp(drift * z): each resampled median's drift

    @property
    def threshold(self) -> float:
        """The relative latency difference a verdict needs: the stated minimum or the sweep's noise."""
        return max(MIN_DIFFERENCE, self.noise)

    def cheaper(self, i: int, j: int) -> bool:
        """Run ``i`` costs less than run ``j``: exactly, or for latency by the rules above."""
        if self.medians is None:
            return bool(self.costs[i] < self.costs[j])  # an unknown (NaN) cost is never cheaper
        if self.trees is not None:
            if part_of(self.trees[i], self.trees[j]):
                return True
            if part_of(self.trees[j], self.trees[i]):
                return False
            if self.trees[i] == self.trees[j]:
                return self._across_repeats(i, j)
        if not self.costs[i] < self.costs[j]:
            return False
        _, hi = self.difference(i, j)
        return hi < -self.threshold * self.costs[j]

    def step(self, i: int, j: int) -> str:
        """Which step of the rule decides between runs ``i`` and ``j`` (either order):
        ``stages`` (one's stages are part of the other's), ``same stages`` (equal stages:
        a tie unless ``repeats`` differ), ``clock`` (latency beyond the threshold) or
        ``exact`` (counts and prices)."""
        if self.medians is None:
            return "exact"
        if self.trees is not None:
            if part_of(self.trees[i], self.trees[j]) or part_of(self.trees[j], self.trees[i]):
                return "stages"
            if self.trees[i] == self.trees[j]:
                return "repeats" if self._across_repeats(i, j) or self._across_repeats(j, i) else "same stages"
        return "clock"

    def difference(self, i: int, j: int) -> tuple[float, float] | None:
        """The percentile interval (the order's level) of ``median_i - median_j`` in
        milliseconds, each run's resampled medians times its drift draws; None for an
        exact cost."""
        if self.medians is None:
            return None
        medians = self.medians if self.shifts is None else self.medians * self.shifts
        (lo, hi), = percentile_bounds(medians[:, i] - medians[:, j], self.level)
        return lo, hi

    def _across_repeats(self, i: int, j: int) -> bool:
        if not self.groups:
            return False
        mine = [self.costs[k] for k, g in enumerate(self.groups) if g == self.groups[i]]
        theirs = [self.costs[k] for k, g in enumerate(self.groups) if g == self.groups[j]]
        if self.groups[i] == self.groups[j] or len(mine) < 2 or len(theirs) < 2:
            return False
        return max(mine) * (1 + self.threshold) < min(theirs)

    def cheapest(self, indices: list[int], means: list[float], stages: list[int]) -> int:
        """The tie rule: of ``indices``, the runs none of the others is cheaper than are
        tied; the higher mean wins, then fewer stages, then the smaller index."""
        tied = [i for i in indices if not any(self.cheaper(j, i) for j in indices if j != i)] or list(indices)
        return min(tied, key=lambda i: (-means[i], stages[i], i))

    def noise_rule(self) -> str | None:
        if self.medians is None:
            return None
        noise = (f", the spread between runs with the same stages in this sweep being {self.noise:.0%}"
                 if self.noise else "")
        return (f"p50_ms: a run whose stages are part of another's is cheaper than it (never the reverse); "
                f"runs with the same stages tie unless their repeats differ; otherwise cheaper only when the "
                f"{self.level:.0%} bootstrap interval of the difference of median latencies, with each run's "
                f"drift between identical runs drawn in (sd {self.drift:.2f} of the log median), lies below "
                f"-{self.threshold:.0%} of the dearer run's median (a stated minimum of {MIN_DIFFERENCE:.0%}{noise})")


def cost_order(
    costs: list[float], by: str, boot: BootstrapConfig, latencies: list[np.ndarray] | None = None,
    trees: list[Tree] | None = None, groups: list[Hashable] | None = None, medians: np.ndarray | None = None,
    drift: float | None = None,
) -> CostOrder:
    """The :class:`CostOrder` of runs costing ``costs`` by ``by``; for ``p50_ms`` each
    run's per-question ``latencies`` (milliseconds, none missing), whose medians are
    resampled on their own (seed ``boot.seed + run index``; drawn from the bootstrap
    median's exact law, :mod:`receval.stats.medians`: no cost per question and resample), its stage ``trees`` and
    its repeat ``groups`` (both optional). ``medians``: the runs' resampled medians
    already drawn (:func:`resampled_median`, ``(n_resamples, runs)``), instead of ``latencies``.
    ``drift``: the run-level drift to allow (default: the larger of :data:`DRIFT_SD` and
    the sweep's own among runs with the same stages; ``0.0``: none, the rule before it)."""
    if by != "p50_ms":
        return CostOrder(by, costs, boot.level)
    if medians is None:
        medians = np.column_stack([resampled_median(latency, boot, j) for j, latency in enumerate(latencies)])
    noise = sweep_noise(costs, trees) if trees is not None else 0.0
    if drift is None:
        drift = max(DRIFT_SD, pooled_drift(_same_stages(costs, trees)) if trees is not None else 0.0)
    shifts = np.exp(drift * np.random.default_rng(boot.seed + DRIFT_SEED).standard_normal(medians.shape))
    return CostOrder(by, costs, boot.level, medians, trees, list(groups or []), noise, drift, shifts)


def resampled_median(latency: np.ndarray, boot: BootstrapConfig, j: int) -> np.ndarray:
    """The ``j``-th timed run's resampled medians (seed ``boot.seed + j``), ``(n_resamples,)``."""
    return median_draws(latency, n_resamples=boot.n_resamples, seed=boot.seed + j)
