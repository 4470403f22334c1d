"""Tests for receval.run.ranking (the tie rule, select_top, tie_ranks) and for
evaluate.collapse_to_sections (chunks -> sections at their first rank)."""

from __future__ import annotations

import numpy as np
import pytest

from receval.run.evaluate import collapse_to_sections
from receval.run.ranking import select_top, tie_ranks


def brute_top(scores: np.ndarray, k: int, tie_rank: np.ndarray, floor):
    """The tie rule as a plain Python sort, one row at a time, padded like select_top."""
    n_rows, n_items = scores.shape
    idx = np.full((n_rows, k), -1, dtype=np.int64)
    top = np.full((n_rows, k), np.nan)
    for r in range(n_rows):
        s = scores[r]
        valid = [j for j in range(n_items) if np.isfinite(s[j]) and (floor is None or s[j] > floor)]
        chosen = sorted(valid, key=lambda j: (-s[j], tie_rank[j]))[:k]
        idx[r, : len(chosen)] = chosen
        top[r, : len(chosen)] = s[chosen]
    return idx, top


# --------------------------------------------------------------------------- tie_ranks


def test_tie_ranks_sorts_section_ordinal_tuples():
    keys = [("b", 0), ("a", 1), ("a", 0), ("a", 10), ("a", 2)]
    # ("a", 2) before ("a", 10): ordinals compare as numbers, not as "a@10" < "a@2"
    np.testing.assert_array_equal(tie_ranks(keys), [4, 1, 0, 3, 2])


def test_tie_ranks_is_a_permutation_matching_sorted():
    rng = np.random.default_rng(0)
    keys = [(f"page{rng.integers(0, 5)}#s{rng.integers(0, 5)}", int(rng.integers(0, 20))) for _ in range(200)]
    keys = list(dict.fromkeys(keys))  # distinct, like chunk ids
    ranks = tie_ranks(keys)
    assert ranks.dtype == np.int64
    np.testing.assert_array_equal(np.sort(ranks), np.arange(len(keys)))
    assert [keys[j] for j in np.argsort(ranks)] == sorted(keys)


def test_tie_ranks_empty():
    assert tie_ranks([]).shape == (0,)


# --------------------------------------------------------------------------- select_top


def test_equal_scores_ordered_by_tie_rank():
    tie_rank = np.array([3, 0, 5, 1, 4, 2])
    idx, top = select_top(np.ones((1, 6)), 6, tie_rank)
    np.testing.assert_array_equal(idx[0], [1, 3, 5, 0, 4, 2])
    np.testing.assert_array_equal(top[0], np.ones(6))


def test_score_then_tie_rank():
    scores = np.array([[2.0, 5.0, 2.0, 5.0, 1.0]])
    tie_rank = np.array([0, 4, 1, 2, 3])
    idx, top = select_top(scores, 5, tie_rank)
    np.testing.assert_array_equal(idx[0], [3, 1, 0, 2, 4])
    np.testing.assert_array_equal(top[0], [5, 5, 2, 2, 1])
    assert idx.dtype == np.int32 and top.dtype == np.float64


def test_ties_at_the_kth_boundary_keep_the_lowest_tie_ranks():
    """Hundreds of items tied at the k-th score: the kept ones are those with the
    lowest tie ranks, whatever order np.partition leaves them in."""
    rng = np.random.default_rng(1)
    n_items, k = 2000, 50
    tie_rank = rng.permutation(n_items)
    scores = np.ones((3, n_items))
    for row in range(3):
        high = rng.choice(n_items, 10, replace=False)
        rest = np.setdiff1d(np.arange(n_items), high)
        tied = rng.choice(rest, 700, replace=False)
        scores[row, tied] = 3.0
        scores[row, high] = 5.0 + rng.random(10)
    idx, top = select_top(scores, k, tie_rank)
    for row in range(3):
        high = np.flatnonzero(scores[row] > 4)
        tied = np.flatnonzero(scores[row] == 3.0)
        expected_high = high[np.argsort(-scores[row, high])]
        expected_tied = tied[np.argsort(tie_rank[tied])][: k - 10]
        np.testing.assert_array_equal(idx[row], np.concatenate([expected_high, expected_tied]))
        np.testing.assert_array_equal(top[row, 10:], np.full(k - 10, 3.0))


def test_all_equal_keep_lowest_tie_ranks():
    rng = np.random.default_rng(2)
    tie_rank = rng.permutation(500)
    idx, _ = select_top(np.full((1, 500), 0.25), 7, tie_rank)
    np.testing.assert_array_equal(tie_rank[idx[0]], np.arange(7))


def test_floor_excludes_and_pads():
    scores = np.array([[0.0, 2.0, -1.0, 0.5, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0]])
    tie_rank = np.arange(5)
    idx, top = select_top(scores, 4, tie_rank)
    np.testing.assert_array_equal(idx, [[1, 3, -1, -1], [-1, -1, -1, -1]])
    np.testing.assert_array_equal(top[0, :2], [2.0, 0.5])
    assert np.isnan(top[0, 2:]).all() and np.isnan(top[1]).all()
    idx, top = select_top(scores, 4, tie_rank, floor=0.5)  # at the floor: not kept
    np.testing.assert_array_equal(idx[0], [1, -1, -1, -1])


def test_floor_none_keeps_negatives_but_not_non_finite():
    scores = np.array([[-1.0, -3.0, np.nan, -2.0, -np.inf]])
    idx, top = select_top(scores, 5, np.arange(5), floor=None)
    np.testing.assert_array_equal(idx[0], [0, 3, 1, -1, -1])
    np.testing.assert_array_equal(top[0, :3], [-1.0, -2.0, -3.0])
    idx, _ = select_top(scores, 5, np.arange(5))  # default floor 0 drops them all
    np.testing.assert_array_equal(idx[0], [-1] * 5)


def test_k_larger_than_the_number_of_items():
    idx, top = select_top(np.array([[1.0, 3.0, 2.0]]), 6, np.arange(3))
    np.testing.assert_array_equal(idx[0], [1, 2, 0, -1, -1, -1])
    np.testing.assert_array_equal(top[0, :3], [3.0, 2.0, 1.0])
    assert np.isnan(top[0, 3:]).all()


def test_empty_shapes():
    idx, top = select_top(np.zeros((0, 4)), 3, np.arange(4))
    assert idx.shape == (0, 3) and top.shape == (0, 3)
    idx, top = select_top(np.zeros((2, 0)), 3, np.arange(0))
    np.testing.assert_array_equal(idx, np.full((2, 3), -1))


@pytest.mark.parametrize("seed", range(100))
def test_agrees_with_brute_force_sort(seed):
    rng = np.random.default_rng(seed)
    n_rows, n_items = int(rng.integers(1, 6)), int(rng.integers(1, 40))
    k = int(rng.integers(1, 45))
    scores = rng.integers(-3, 4, size=(n_rows, n_items)).astype(np.float64)  # many ties
    tie_rank = rng.permutation(n_items)
    floor = [0.0, None, 1.0][seed % 3]
    idx, top = select_top(scores, k, tie_rank, floor=floor)
    expected_idx, expected_top = brute_top(scores, k, tie_rank, floor)
    np.testing.assert_array_equal(idx, expected_idx)
    np.testing.assert_array_equal(top, expected_top.astype(np.float64))


# --------------------------------------------------------------------------- collapse


def test_collapse_worked_example():
    chunk_section = np.array([0, 0, 1, 1, 2, 3])
    chunk_idx = np.array([[1, 0, 2, 4, 3, -1], [5, 5, -1, -1, -1, -1]], dtype=np.int32)
    chunk_scores = np.array(
        [[0.9, 0.8, 0.7, 0.5, 0.4, np.nan], [0.3, 0.3, np.nan, np.nan, np.nan, np.nan]],
        dtype=np.float32,
    )
    sections, scores = collapse_to_sections(chunk_idx, chunk_scores, chunk_section, 4)
    np.testing.assert_array_equal(sections, [[0, 1, 2, -1, -1, -1], [3, -1, -1, -1, -1, -1]])
    np.testing.assert_allclose(scores[0, :3], [0.9, 0.7, 0.5], rtol=1e-6)
    assert np.isnan(scores[0, 3:]).all()
    assert scores[1, 0] == pytest.approx(0.3) and np.isnan(scores[1, 1:]).all()
    assert sections.dtype == np.int32 and scores.dtype == np.float64


def brute_collapse(chunk_idx, chunk_scores, chunk_section):
    n_rows, depth = chunk_idx.shape
    sections = np.full((n_rows, depth), -1)
    scores = np.full((n_rows, depth), np.nan)
    for r in range(n_rows):
        seen, out = set(), []
        for c, s in zip(chunk_idx[r], chunk_scores[r]):
            if c < 0:
                continue
            sec = int(chunk_section[c])
            if sec not in seen:
                seen.add(sec)
                out.append((sec, s))
        for pos, (sec, s) in enumerate(out):
            sections[r, pos], scores[r, pos] = sec, s
    return sections, scores


@pytest.mark.parametrize("seed", range(30))
def test_collapse_agrees_with_brute_force(seed):
    rng = np.random.default_rng(seed)
    n_sections = int(rng.integers(1, 9))
    n_chunks = int(rng.integers(1, 30))
    chunk_section = np.sort(rng.integers(0, n_sections, size=n_chunks))
    n_rows, depth = int(rng.integers(1, 6)), int(rng.integers(1, 13))
    chunk_idx = np.full((n_rows, depth), -1, dtype=np.int32)
    chunk_scores = np.full((n_rows, depth), np.nan, dtype=np.float32)
    for r in range(n_rows):
        n = int(rng.integers(0, min(depth, n_chunks) + 1))
        chunk_idx[r, :n] = rng.choice(n_chunks, size=n, replace=False)
        chunk_scores[r, :n] = np.sort(rng.integers(1, 5, size=n))[::-1]  # best first, ties
    sections, scores = collapse_to_sections(chunk_idx, chunk_scores, chunk_section, n_sections)
    expected_sections, expected_scores = brute_collapse(chunk_idx, chunk_scores, chunk_section)
    np.testing.assert_array_equal(sections, expected_sections)
    np.testing.assert_array_equal(scores, expected_scores.astype(np.float64))
    # invariants: each section once per row, kept ones at the front, scores non-increasing
    for r in range(n_rows):
        kept = sections[r][sections[r] >= 0]
        assert len(set(kept.tolist())) == kept.size
        assert (sections[r, kept.size :] == -1).all()
        assert (np.diff(scores[r, : kept.size]) <= 0).all()
