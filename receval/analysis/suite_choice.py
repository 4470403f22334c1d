"""``select --suite``: choosing a configuration on the pooled effect over collections.

The rule of :mod:`receval.analysis.choice`, with the pooled difference in place of one
collection's paired difference (:mod:`receval.analysis.suite`, :mod:`receval.stats.meta`):

1. The *leader* is the configuration with the largest pooled random-effects difference
   against the first configuration (the first itself counts 0); every configuration is
   then compared with the leader, collection by collection and pooled.
2. A configuration cheaper than the leader (``prefer``: ``chunks`` summed over the
   collections, ``p50_ms`` and ``money`` averaged over them, compared as numbers: the
   noise rule of a single collection's latencies is not applied, said in the notes)
   *qualifies* when shown not worse: the lower end of its Holm-corrected pooled interval
   (Hartung-Knapp, random effects) lies above ``-margin``. Without a margin the leader is
   chosen and each cheaper configuration's smallest qualifying margin is given.
3. The cheapest contender is chosen (equal cost: the larger pooled difference).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from receval.analysis.costs import costs_of
from receval.analysis.suite import Suite, group, suite
from receval.core.settings import BootstrapConfig
from receval.core.errors import RecevalError, RunError
from receval.results.stored import Run
from receval.stats.cheaper import PREFERENCES
from receval.stats.holm import holm
from receval.stats.meta import Pooled, interval_at, not_worse_p

#: Margins closer than this are one margin (bisection stops here).
MARGIN_TOLERANCE = 1e-9


@dataclass
class SuiteCandidate:
    index: int
    label: str
    mean: float  # over collections
    pooled: Pooled | None  # this configuration - leader; None for the leader
    cost: float
    cheaper: bool
    lo: float | None = None  # Holm-corrected pooled interval (cheaper configurations)
    hi: float | None = None
    level: float | None = None
    margin_needed: float | None = None
    qualifies: bool | None = None
    contender: bool = False


@dataclass
class SuiteSelection:
    metric: str
    prefer: str
    margin: float | None
    suite: Suite  # compared against the leader
    candidates: list[SuiteCandidate]
    leader: int
    chosen: int
    why: str = ""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "chosen_on": "pooled effect over collections (DerSimonian-Laird random effects, Hartung-Knapp interval)",
            "metric": self.metric, "prefer": self.prefer, "margin": self.margin,
            "collections": [c.name for c in self.suite.collections],
            "leader": self.leader, "chosen": self.chosen, "why": self.why, "notes": list(self.notes),
            "configurations": [
                {"index": c.index, "label": c.label, "mean_over_collections": c.mean, "cost": c.cost,
                 "cheaper": c.cheaper, "pooled_vs_leader": c.pooled.to_dict() if c.pooled else None,
                 "holm_ci": None if c.lo is None else [c.lo, c.hi], "level": c.level,
                 "margin_needed": c.margin_needed, "qualifies": c.qualifies, "contender": c.contender}
                for c in self.candidates
            ],
            "suite": self.suite.to_dict(),
        }


def _verdicts(pooled: list[Pooled], margin: float, alpha: float):
    return holm([not_worse_p(p, margin) for p in pooled], alpha)


def _margin_needed(pooled: list[Pooled], j: int, alpha: float) -> float:
    """The smallest margin at which configuration ``j`` qualifies under Holm (Holm's
    verdicts only improve as the margin grows: every p-value falls)."""
    if _verdicts(pooled, 0.0, alpha)[j].rejected:
        return 0.0
    low, high = 0.0, 1.0
    while not _verdicts(pooled, high, alpha)[j].rejected:
        high *= 2
        if high > 1e6:
            return float("inf")
    while high - low > MARGIN_TOLERANCE:
        mid = (low + high) / 2
        low, high = (low, mid) if _verdicts(pooled, mid, alpha)[j].rejected else (mid, high)
    return high


def choose_on_suite(runs: list[Run], metric: str, prefer: str, margin: float | None,
                    boot: BootstrapConfig) -> SuiteSelection:
    """The choice over ``runs`` (configurations x collections); see the module docstring."""
    if prefer not in PREFERENCES:
        raise RecevalError(f"--prefer {prefer}: use one of {', '.join(PREFERENCES)}")
    if margin is not None and not (np.isfinite(margin) and margin >= 0):
        raise RecevalError(f"--margin {margin}: use a value >= 0, in the measure's units")
    first = suite(runs, metric, boot)
    effects = [0.0 if p is None else p.estimate for p in first.pooled]
    leader = int(np.argmax(effects))
    s = first if leader == 0 else suite(runs, metric, boot, baseline=leader)
    _, _, grid = group(runs)
    costs = []
    for j in range(len(s.labels)):
        values = [costs_of(row[j])[prefer] for row in grid]
        if any(v is None for v in values):
            missing = next(row[j] for row in grid if costs_of(row[j])[prefer] is None)
            raise RunError(f"--prefer {prefer}: {missing.run_dir} has no {prefer} recorded; choose another of "
                           f"{', '.join(PREFERENCES)}")
        costs.append(float(np.sum(values) if prefer == "chunks" else np.mean(values)))
    alpha = 1 - boot.level
    cheaper = [j for j in range(len(s.labels)) if j != leader and costs[j] < costs[leader]]
    pooled = [s.pooled[j] for j in cheaper]
    steps = _verdicts(pooled, margin if margin is not None else 0.0, alpha) if cheaper else []
    candidates = [
        SuiteCandidate(j, s.labels[j], s.standing.mean[j].mean, s.pooled[j], costs[j], j in cheaper, contender=j == leader)
        for j in range(len(s.labels))
    ]
    for n, j in enumerate(cheaper):
        c = candidates[j]
        c.level = 1 - steps[n].alpha
        c.lo, c.hi = interval_at(s.pooled[j], c.level)
        c.margin_needed = _margin_needed(pooled, n, alpha)
        if margin is not None:
            c.qualifies = c.contender = bool(steps[n].rejected)
    contenders = [c for c in candidates if c.contender]
    chosen = min(contenders, key=lambda c: (c.cost, -(c.pooled.estimate if c.pooled else 0.0), c.index)).index
    notes = []
    if prefer in ("p50_ms", "money"):
        notes.append(f"cost: {prefer} averaged over the collections, compared as numbers (no latency noise rule)")
    result = SuiteSelection(metric=s.metric, prefer=prefer, margin=margin, suite=s, candidates=candidates,
                            leader=leader, chosen=chosen, notes=notes)
    result.why = _why(result, len(cheaper))
    return result


def _why(s: SuiteSelection, tested: int) -> str:
    k = len(s.suite.collections)
    head = f"chosen on the pooled effect over {k} collections (random effects, Hartung-Knapp interval)"
    if len(s.candidates) == 1:
        return f"{head}: the only configuration"
    lead = s.candidates[s.leader].label
    if not tested:
        return f"{head}: the leader {lead} (largest pooled difference); no configuration is cheaper by {s.prefer}"
    if s.margin is None:
        return (f"{head}: the leader {lead}; no --margin given, so no cheaper configuration can be shown not worse "
                "(each one's smallest qualifying margin is in the table)")
    chosen = s.candidates[s.chosen]
    if s.chosen == s.leader:
        return f"{head}: the leader {lead}; no cheaper configuration is shown not worse at margin {s.margin:g}"
    return (f"{head}: {chosen.label} is shown not worse than the leader {lead} at margin {s.margin:g} (Holm interval "
            f"[{chosen.lo:+.3f}, {chosen.hi:+.3f}] over {tested} cheaper) and is the cheapest contender by {s.prefer}")
