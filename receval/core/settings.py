"""The bootstrap settings: saved with every run (the ``bootstrap`` config group) and read
back by every report, so both sides import them from here.

The Hydra schema of the group is :class:`BootstrapConfig` itself (registered by
:mod:`receval.run.config`); the read side checks saved or given values against the same
ranges (:mod:`receval.analysis.settings`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from receval.core.ranges import SEED, range_


class BootstrapMethod(StrEnum):
    percentile = "percentile"
    bca = "bca"


# All resampled means are held (8 bytes each per measure); beyond this an interval no
# longer changes in its printed digits, while memory runs out.
MAX_RESAMPLES = 1_000_000


@dataclass
class BootstrapConfig:
    """How intervals are computed (saved with a run, so its report repeats them): the one
    type of the bootstrap settings, read back by :mod:`receval.analysis.settings`."""

    n_resamples: int = field(default=2000, metadata=range_(1, MAX_RESAMPLES, hint="every resample is held in memory"))
    level: float = field(default=0.95, metadata=range_(0, 1, low_open=True, high_open=True))
    seed: int = field(default=0, metadata=range_(*SEED))
    method: BootstrapMethod = BootstrapMethod.percentile

    def kwargs(self) -> dict:
        """As keyword arguments of :mod:`receval.stats.bootstrap` (and as JSON shows them)."""
        return {"n_resamples": self.n_resamples, "level": self.level, "seed": self.seed, "method": str(self.method)}
