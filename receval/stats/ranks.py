"""Each run's rank with a bootstrap interval over questions (rank tiers).

A leaderboard's order is one draw: resample the questions and the order moves. For each
resample of the questions every run gets a competition rank (1 + the number of runs with
a strictly better mean, so tied runs share the better rank); the interval is the
percentile interval of those ranks (Hall & Miller, "Using the bootstrap to quantify the
authority of an empirical ranking", Ann. Statist. 37(6B):3929-3959, 2009). Runs whose
intervals overlap are not separated by this question set. The percentile rule is
:func:`receval.stats.bootstrap.percentile_bounds` (drop ``int(B (1 - level) / 2)``
resamples from each end), applied to the resampled ranks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from receval.stats.bootstrap import percentile_bounds

#: Resample x run x run comparisons held at once.
_MAX_CHUNK_ENTRIES = 1 << 24


@dataclass(frozen=True)
class RankInterval:
    """A run's rank on the questions as they are, and its interval over resamples."""

    rank: int
    lo: int
    hi: int


def competition_ranks(means, higher_is_better: bool = True) -> np.ndarray:
    """Ranks along the last axis: 1 + how many runs are strictly better ("1224")."""
    m = np.asarray(means, dtype=np.float64)
    m = m if higher_is_better else -m
    out = np.empty(m.shape, dtype=np.int64)
    flat, ranks = m.reshape(-1, m.shape[-1]), out.reshape(-1, m.shape[-1])
    chunk = max(1, _MAX_CHUNK_ENTRIES // max(m.shape[-1] ** 2, 1))
    for start in range(0, flat.shape[0], chunk):
        block = flat[start : start + chunk]
        ranks[start : start + chunk] = 1 + (block[:, None, :] > block[:, :, None]).sum(axis=2)
    return out


def rank_intervals(means, resampled_means, level: float = 0.95, higher_is_better: bool = True) -> list[RankInterval]:
    """Per run (column): its rank by ``means`` ``(r,)`` and the percentile interval at
    ``level`` of its ranks over ``resampled_means`` ``(B, r)`` (the runs' means over the
    same resamples of the questions, e.g. from ``receval.stats.bootstrap.bootstrap_means``)."""
    observed = competition_ranks(means, higher_is_better)
    boot = np.asarray(resampled_means, dtype=np.float64)
    if boot.ndim != 2 or boot.shape[1] != observed.size:
        raise ValueError(f"resampled means must be (B, {observed.size}), got shape {boot.shape}")
    bounds = percentile_bounds(competition_ranks(boot, higher_is_better), level)
    return [RankInterval(int(r), int(lo), int(hi)) for r, (lo, hi) in zip(observed, bounds)]
