"""Which run is faster than which, as the report says it: ``receval select``'s one latency
rule (:mod:`receval.stats.cheaper`) read over the runs a report shows.

- :func:`latency_order`: every pair of timed runs, in the report's order, with the
  verdict of the first against the second (``faster``, ``slower`` or ``within noise``),
  the step of the rule that decided it (``stages``, ``same stages``, ``repeats``,
  ``clock``) and the bootstrap interval of the difference of their median latencies.
  The rule reads the runs' stage trees first (:func:`receval.analysis.choice.stage_tree`):
  a run whose stages are part of another's is faster than it, and the run holding them
  is never shown faster, whatever the clock said; runs with the same stages tie unless
  their repeats differ; only otherwise does the clock decide, beyond a stated minimum
  (10%), the sweep's own noise and each run's drift between identical runs (a random
  effect drawn into the interval). So two identical sweeps give the same verdicts.
- :attr:`LatencyOrder.conflicts`: each pair where a run's measured p50 is below that of
  a run whose stages are part of its own: not a speed-up but the clock's noise, said so.

Latencies are over the questions the report scores (:func:`receval.analysis.costs.answered`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from receval.analysis import costs
from receval.analysis.choice import stage_tree
from receval.core.numeric import fmt_ms
from receval.core.settings import BootstrapConfig
from receval.results.stored import Run
from receval.stats.cheaper import cost_order, part_of, resampled_median

FASTER, SLOWER, WITHIN_NOISE = "faster", "slower", "within noise"


@dataclass(frozen=True)
class LatencyPair:
    """Run ``a`` against run ``b`` (indices into the report's runs)."""

    a: int
    b: int
    verdict: str  # faster, slower or within noise: a against b
    step: str  # the step of the rule that decided: stages, same stages, repeats, clock
    diff: tuple[float, float] | None  # bootstrap interval of median(a) - median(b), ms

    def as_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "verdict": self.verdict, "step": self.step,
                "diff_ms_ci": None if self.diff is None else list(self.diff)}


@dataclass
class LatencyOrder:
    """The verdicts between the report's timed runs and the rule they follow."""

    level: float
    threshold: float  # the relative difference the clock must clear
    noise: float  # the spread between runs with the same stages in this report
    drift: float  # the sd of a run's log median between identical runs, drawn into each interval
    rule: str  # the rule in words (select's: receval.stats.cheaper.CostOrder.noise_rule)
    pairs: list[LatencyPair] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)  # a containing run measured faster: the clock's noise

    def verdict(self, i: int, j: int) -> str | None:
        """Run ``i`` against run ``j``: faster, slower or within noise (None: one is untimed)."""
        for pair in self.pairs:
            if (pair.a, pair.b) == (i, j):
                return pair.verdict
            if (pair.a, pair.b) == (j, i):
                return {FASTER: SLOWER, SLOWER: FASTER}.get(pair.verdict, pair.verdict)
        return None

    def faster_than(self, i: int) -> list[int]:
        """The runs run ``i`` is shown faster than, in the report's order."""
        found = {p.b for p in self.pairs if p.a == i and p.verdict == FASTER}
        found |= {p.a for p in self.pairs if p.b == i and p.verdict == SLOWER}
        return sorted(found)

    def to_dict(self) -> dict:
        return {"level": self.level, "threshold": self.threshold, "noise": self.noise, "drift": self.drift,
                "rule": self.rule,
                "pairs": [pair.as_dict() for pair in self.pairs], "conflicts": list(self.conflicts)}


def latency_order(runs: list[Run], labels: list[str], metric: str, boot: BootstrapConfig) -> LatencyOrder | None:
    """The :class:`LatencyOrder` of ``runs`` (named ``labels``) over the questions each
    scores on ``metric``; None when fewer than two runs store a latency."""
    builder = Latencies(metric, boot)
    for run in runs:
        builder.add(run)
    return builder.finish(labels)


class Latencies:
    """:func:`latency_order` one run at a time (a caller may drop each run's table once
    added): per timed run its p50, resampled medians, stage tree and repeat group."""

    def __init__(self, metric: str, boot: BootstrapConfig):
        self.metric, self.boot = metric, boot
        self.timed: list[int] = []  # indices of the timed runs among those added
        self.p50: list[float] = []
        self.medians: list[np.ndarray] = []
        self.trees: list = []
        self.repeats: list[str] = []
        self.added = 0

    def add(self, run: Run) -> None:
        kept = costs.answered(run, self.metric)
        p50 = costs.p50_ms(kept)
        if p50 is not None:
            (latency,) = costs.latencies([kept])
            self.medians.append(resampled_median(latency, self.boot, len(self.timed)))
            self.timed.append(self.added)
            self.p50.append(p50)
            self.trees.append(stage_tree(kept))
            self.repeats.append(kept.info.get("config_hash") or str(kept.run_dir))
        self.added += 1

    def finish(self, labels: list[str]) -> LatencyOrder | None:
        timed, p50, trees = self.timed, self.p50, self.trees
        if len(timed) < 2:
            return None
        order = cost_order(p50, "p50_ms", self.boot, None, trees, self.repeats, np.column_stack(self.medians))
        found = LatencyOrder(self.boot.level, order.threshold, order.noise, order.drift, order.noise_rule() or "")
        for x, i in enumerate(timed):
            for y in range(x + 1, len(timed)):
                j = timed[y]
                verdict = FASTER if order.cheaper(x, y) else SLOWER if order.cheaper(y, x) else WITHIN_NOISE
                found.pairs.append(LatencyPair(i, j, verdict, order.step(x, y), order.difference(x, y)))
                for big, small in ((x, y), (y, x)):
                    if part_of(trees[small], trees[big]) and p50[big] < p50[small]:
                        found.conflicts.append(_conflict(timed[big], timed[small], labels, p50[big], p50[small]))
        return found


def _conflict(big: int, small: int, labels: list[str], p50_big: float, p50_small: float) -> str:
    return (f"#{big} {labels[big]}'s p50 ({fmt_ms(p50_big)} ms) is below #{small} {labels[small]}'s "
            f"({fmt_ms(p50_small)} ms), but #{big} runs every stage of #{small} and more: it is not faster, "
            "the difference is the clock's noise (a pipeline is never faster than one it contains)")
