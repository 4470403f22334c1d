"""Stage by stage: ``receval report RUNS --chain`` pairs each run with the
one before it, in the order given (keyword -> vector -> hybrid -> hybrid + re-rank),
so each step's gain is a paired difference with its interval and the questions it
fixed and broke (the one fixed/broken rule: :func:`receval.stats.pairing.fixed_broken`).
"""

from __future__ import annotations

from receval.analysis.pairs import Pair, paired
from receval.core.settings import BootstrapConfig
from receval.results.stored import Run


def chain_pairs(
    runs: list[Run], metric: str, boot: BootstrapConfig, intersect: bool = False, option: str = "intersect=True"
) -> list[Pair]:
    """Each run against the one before it (:func:`receval.analysis.pairs.paired` per step)."""
    return [paired(earlier, [later], metric, boot, intersect, option)[0] for earlier, later in zip(runs, runs[1:])]
