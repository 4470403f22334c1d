"""Means over collections, Borda ranks and their intervals by a two-level bootstrap.

A benchmark suite (BEIR's mean of means, MTEB's Borda rank) varies at two levels: the
collections are a sample of the tasks one cares about, and each collection's questions a
sample of its questions. Each resample draws ``k`` collections with replacement and,
independently for every drawn copy, that collection's questions with replacement (the
two-stage bootstrap of Davison & Hinkley, *Bootstrap Methods and their Application*,
1997, section 3.8: resample clusters, then units within each). Per resample:

- each run's mean over collections: the mean, over the drawn copies, of its mean over
  the copy's resampled questions;
- each run's Borda count: per drawn copy, the runs it beats (a tie counts one half);
  summed over the copies (MTEB ranks models by this count).

Intervals are percentile intervals (:func:`receval.stats.bootstrap.percentile_bounds`),
rank intervals Hall & Miller's over the resampled statistic
(:func:`receval.stats.ranks.rank_intervals`). Inner question resamples come from
:func:`receval.stats.bootstrap.bootstrap_means`, seeded per collection from ``seed``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from receval.stats.bootstrap import Interval, bootstrap_means, percentile_bounds
from receval.stats.ranks import RankInterval, rank_intervals


@dataclass(frozen=True)
class SuiteStanding:
    """Per run (in input order): mean over collections and Borda count, each with its
    interval and its rank with a rank interval."""

    mean: list[Interval]
    mean_rank: list[RankInterval]
    borda: list[Interval]
    borda_rank: list[RankInterval]


def borda_points(means) -> np.ndarray:
    """Along the last axis (runs): how many other runs each beats, a tie counting 1/2."""
    m = np.asarray(means, dtype=np.float64)
    beats = (m[..., :, None] > m[..., None, :]).sum(axis=-1)
    ties = (m[..., :, None] == m[..., None, :]).sum(axis=-1) - 1
    return beats + 0.5 * ties


def _seed(seed: int, collection: int) -> int:
    return int(np.random.SeedSequence([seed, collection]).generate_state(1)[0])


def suite_standing(
    scores: list[np.ndarray], n_resamples: int = 2000, level: float = 0.95, seed: int = 0
) -> SuiteStanding:
    """``scores``: per collection a ``(n_questions, n_runs)`` matrix of one measure (the
    same runs in the same columns everywhere). Two-level bootstrap as the module says."""
    if not scores:
        raise ValueError("no collections")
    mats = [np.asarray(s, dtype=np.float64) for s in scores]
    r = mats[0].shape[1]
    if any(m.ndim != 2 or m.shape[1] != r or m.shape[0] == 0 for m in mats):
        raise ValueError("every collection needs a (n_questions >= 1, n_runs) matrix with the same runs")
    k = len(mats)
    observed = np.stack([m.mean(axis=0) for m in mats])  # (k, r)
    rng = np.random.default_rng(np.random.SeedSequence([seed, k]))
    drawn = rng.integers(0, k, size=(n_resamples, k))  # collections drawn per resample
    copies = np.zeros((n_resamples, k), dtype=np.int64)  # copies of collection c in resample b
    np.add.at(copies, (np.repeat(np.arange(n_resamples), k), drawn.ravel()), 1)
    total_means = np.zeros((n_resamples, r))
    total_borda = np.zeros((n_resamples, r))
    for c, mat in enumerate(mats):
        most = int(copies[:, c].max())
        if most == 0:
            continue
        inner = bootstrap_means(mat, n_resamples=n_resamples * most, seed=_seed(seed, c))
        inner = inner.reshape(n_resamples, most, r)  # copy j of resample b: its own question draw
        used = (np.arange(most)[None, :] < copies[:, c][:, None])[..., None]  # (B, most, 1)
        total_means += np.where(used, inner, 0.0).sum(axis=1)
        total_borda += np.where(used, borda_points(inner), 0.0).sum(axis=1)
    boot_means = total_means / k
    means = observed.mean(axis=0)
    borda = borda_points(observed).sum(axis=0)
    mean_bounds = percentile_bounds(boot_means, level)
    borda_bounds = percentile_bounds(total_borda, level)
    return SuiteStanding(
        mean=[Interval(float(m), lo, hi) for m, (lo, hi) in zip(means, mean_bounds)],
        mean_rank=rank_intervals(means, boot_means, level),
        borda=[Interval(float(b), lo, hi) for b, (lo, hi) in zip(borda, borda_bounds)],
        borda_rank=rank_intervals(borda, total_borda, level),
    )
