"""receval.stats.ranks: competition ranks and their bootstrap intervals over questions."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from receval.stats.bootstrap import bootstrap_means
from receval.stats.ranks import competition_ranks, rank_intervals


def test_competition_ranks_share_the_better_rank():
    np.testing.assert_array_equal(competition_ranks([0.3, 0.5, 0.3, 0.1]), [2, 1, 2, 4])
    np.testing.assert_array_equal(competition_ranks([0.3, 0.5, 0.3, 0.1], higher_is_better=False), [2, 4, 2, 1])
    rng = np.random.default_rng(0)
    block = rng.integers(0, 5, size=(200, 7)).astype(float)
    want = np.stack([stats.rankdata(-row, method="min") for row in block])
    np.testing.assert_array_equal(competition_ranks(block), want)


def test_rank_intervals_against_a_loop_over_resamples():
    rng = np.random.default_rng(1)
    scores = np.clip(rng.normal([0.30, 0.32, 0.45, 0.46, 0.2], 0.25, size=(80, 5)), 0, 1)
    boot = bootstrap_means(scores, n_resamples=2000, seed=3)
    result = rank_intervals(scores.mean(axis=0), boot)
    ranks = np.sort(np.stack([stats.rankdata(-row, method="min") for row in boot]), axis=0)
    for j, interval in enumerate(result):
        assert interval.rank == stats.rankdata(-scores.mean(axis=0), method="min")[j]
        assert (interval.lo, interval.hi) == (ranks[50, j], ranks[1949, j])  # 2.5% dropped each end
        assert interval.lo <= interval.rank <= interval.hi
    # the two close pairs overlap, the clearly worst run is alone at the bottom
    assert result[4].lo == result[4].hi == 5
    assert result[2].hi >= 2 and result[3].hi >= 2


def test_separated_runs_have_point_intervals_and_bad_shapes_are_refused():
    scores = np.column_stack([np.full(30, 0.9), np.full(30, 0.5), np.full(30, 0.1)])
    scores += np.random.default_rng(2).normal(0, 0.01, scores.shape)
    result = rank_intervals(scores.mean(axis=0), bootstrap_means(scores, n_resamples=500, seed=0))
    assert [(r.rank, r.lo, r.hi) for r in result] == [(1, 1, 1), (2, 2, 2), (3, 3, 3)]
    with pytest.raises(ValueError, match=r"resampled means must be \(B, 3\)"):
        rank_intervals([0.1, 0.2, 0.3], np.ones((10, 2)))
