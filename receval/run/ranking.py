"""Top-k selection and THE tie rule, used by every retriever and fusion.

Tie rule: items are ordered by score, highest first; equal scores are ordered by
item id, ascending. "Id order" is given as ``tie_rank``, an int array holding each
item's position when all item ids are sorted (for chunks: section id, then chunk
ordinal). Only items with a score above ``floor`` are kept (lexical retrievers use
0: a chunk sharing no word with the question is not retrieved).

The selection follows bm25s: partition to find each row's k-th best score, then sort
only the candidates at or above it, so cost is O(D) per question plus k log k.
Candidates tied at the k-th score are all sorted by the tie rule before cutting to
k, so the cut never depends on ``np.partition``'s arbitrary order.
"""

from __future__ import annotations

import numpy as np


def tie_ranks(keys: list) -> np.ndarray:
    """Position of each key in sorted order: the id half of the tie rule."""
    order = sorted(range(len(keys)), key=keys.__getitem__)
    ranks = np.empty(len(keys), dtype=np.int64)
    ranks[order] = np.arange(len(keys), dtype=np.int64)
    return ranks


def select_top(
    scores: np.ndarray,
    k: int,
    tie_rank: np.ndarray,
    floor: float | None = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Best ``k`` items per row of ``scores`` (Q, D), by the tie rule.

    Returns ``(idx, top)``: ``idx`` (Q, k) int32 item indices best first, padded with
    -1 where fewer than k items score above ``floor`` (``None``: any finite score);
    ``top`` (Q, k) float64 their scores (the values the order was decided on), NaN padded.
    """
    scores = np.asarray(scores)
    n_rows, n_items = scores.shape
    idx = np.full((n_rows, k), -1, dtype=np.int32)
    top = np.full((n_rows, k), np.nan, dtype=np.float64)
    take = min(k, n_items)
    if take == 0 or n_rows == 0:
        return idx, top
    if floor is None:  # any finite score counts; -inf marks "not a candidate"
        work = np.where(np.isfinite(scores), scores, -np.inf)
    else:
        work = scores
    kth = np.partition(work, n_items - take, axis=1)[:, n_items - take]
    # at or above the k-th best and above the floor, in one pass: x > f is x >= nextafter(f, inf)
    lowest = np.maximum(kth, np.nextafter(-np.inf if floor is None else floor, np.inf))
    keep = work >= lowest[:, None]
    rows, cols = np.divmod(np.flatnonzero(keep), n_items)  # cheaper than a 2-d nonzero
    values = work[rows, cols]
    order = np.lexsort((tie_rank[cols], -values, rows))
    rows, cols, values = rows[order], cols[order], values[order]
    position = np.arange(rows.size) - np.searchsorted(rows, rows, side="left")
    keep = position < take
    idx[rows[keep], position[keep]] = cols[keep]
    top[rows[keep], position[keep]] = values[keep]
    return idx, top


def top_candidates(
    items: np.ndarray, values: np.ndarray, k: int, tie_rank: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Best ``k`` of one question's candidates (distinct ``items`` with ``values``), by the tie rule.

    The sparse counterpart of :func:`select_top` for retrievers that score only the
    items a question touches: partition finds the k-th best value, then every
    candidate at or above it (all ties included) is sorted by the tie rule.
    """
    if items.size > k:
        kth = np.partition(values, items.size - k)[items.size - k]
        keep = values >= kth
        items, values = items[keep], values[keep]
    order = np.lexsort((tie_rank[items], -values))[:k]
    return items[order], values[order]


def sort_candidates(
    idx: np.ndarray, scores: np.ndarray, tie_rank: np.ndarray, keep_order: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Re-order each row's candidates ``idx`` (Q, n; -1 padded) by new ``scores``, by the tie rule.

    Candidates without a score (NaN, or -1 padding) go last. Used by re-rankers, which
    order a shortlist rather than every item. ``keep_order``: equal scores keep their
    order in ``idx`` (the first stage's) instead of id order, for coarse scores such as
    an LLM's 0-3 grades.
    """
    valid = (idx >= 0) & np.isfinite(scores)
    ties = np.broadcast_to(np.arange(idx.shape[1]), idx.shape) if keep_order else tie_rank[np.maximum(idx, 0)]
    keys = np.where(valid, ties, np.iinfo(np.int64).max)
    order = np.lexsort((keys, np.where(valid, -scores, np.inf)), axis=1)
    rows = np.arange(idx.shape[0])[:, None]
    return idx[rows, order], np.where(valid, scores, np.nan)[rows, order]
