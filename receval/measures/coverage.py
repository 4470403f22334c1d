"""How much of a span the chunks retrieved at ranks 1..r cover: the one coverage rule.

Spans and chunks are intervals ``[start, end)`` in one coordinate system (characters
of the pages laid end to end, or tokens). For each item and each rank r,
:func:`covered_by_rank` gives the length of the item inside the *union* of the
chunks at ranks 1..r, so overlapping chunks (``chunking.overlap``) never count a
character twice. An evidence item is *found* at the first rank where that union
holds at least ``coverage`` of its length (:func:`found_rank`; ``relevance.coverage``,
0.5 by default): a span cut in two by a chunk boundary is still found once both
halves are retrieved, and a chunk brushing one word of a long span is not a find.

Vectorised over items: the item is cut into elementary segments at every clipped
chunk boundary; each segment belongs to the union from the first rank whose chunk
holds it; lengths are summed per rank and accumulated. Items are processed in
blocks, so memory is bounded by ``_BLOCK`` cells of (items x segments x ranks).
"""

from __future__ import annotations

import numpy as np

_BLOCK = 1 << 20


def covered_by_rank(
    item_start: np.ndarray, item_end: np.ndarray, chunk_start: np.ndarray, chunk_end: np.ndarray
) -> np.ndarray:
    """(N,) items and (N, K) chunks at ranks 1..K (an empty interval where none) ->
    (N, K) int64: length of each item covered by the union of its chunks 1..r."""
    item_start = np.asarray(item_start, np.int64)
    item_end = np.asarray(item_end, np.int64)
    chunk_start = np.asarray(chunk_start, np.int64)
    chunk_end = np.asarray(chunk_end, np.int64)
    n, depth = chunk_start.shape
    out = np.zeros((n, depth), dtype=np.int64)
    if n == 0 or depth == 0:
        return out
    step = max(1, _BLOCK // ((2 * depth + 1) * depth))
    for lo in range(0, n, step):
        hi = min(lo + step, n)
        out[lo:hi] = _covered_block(item_start[lo:hi], item_end[lo:hi], chunk_start[lo:hi], chunk_end[lo:hi])
    return out


def _covered_block(start, end, chunk_start, chunk_end) -> np.ndarray:
    n, depth = chunk_start.shape
    lo = np.clip(chunk_start, start[:, None], end[:, None])
    hi = np.clip(chunk_end, start[:, None], end[:, None])
    hi = np.maximum(hi, lo)  # empty chunks and chunks outside the item: zero length
    bounds = np.sort(np.concatenate([start[:, None], end[:, None], lo, hi], axis=1), axis=1)
    seg_lo, seg_hi = bounds[:, :-1], bounds[:, 1:]  # (n, 2K+1) elementary segments
    holds = (lo[:, None, :] <= seg_lo[:, :, None]) & (hi[:, None, :] >= seg_hi[:, :, None]) & (
        hi[:, None, :] > lo[:, None, :]
    )
    first = np.where(holds.any(axis=2), holds.argmax(axis=2), depth)  # rank index, depth: never
    rows = np.repeat(np.arange(n), seg_lo.shape[1])
    added = np.zeros((n, depth + 1), dtype=np.int64)
    np.add.at(added, (rows, first.ravel()), (seg_hi - seg_lo).ravel())
    return np.cumsum(added[:, :depth], axis=1)


def found_rank(covered: np.ndarray, length: np.ndarray, coverage: float) -> np.ndarray:
    """(N,) 1-based first rank at which ``covered`` reaches ``coverage`` of ``length``; 0: never."""
    length = np.asarray(length, np.int64)
    reached = covered >= coverage * length[:, None]
    reached &= length[:, None] > 0
    return np.where(reached.any(axis=1), reached.argmax(axis=1) + 1, 0)


def union_by_rank(chunk_start: np.ndarray, chunk_end: np.ndarray) -> np.ndarray:
    """(Q, K) chunks -> (Q, K) size of the union of chunks 1..r: each chunk adds what
    the chunks ranked above it do not already hold. One item per question spanning all
    its chunks, covered by them (:func:`covered_by_rank`): K x K cells a question."""
    chunk_start = np.asarray(chunk_start, np.int64)
    chunk_end = np.maximum(np.asarray(chunk_end, np.int64), chunk_start)
    q, depth = chunk_start.shape
    if q == 0 or depth == 0:
        return np.zeros((q, depth), dtype=np.int64)
    return covered_by_rank(chunk_start.min(axis=1), chunk_end.max(axis=1), chunk_start, chunk_end)
