"""alpha-nDCG's gains over a question's units, at chunk ranks (the formula is
:mod:`receval.scoring.chunks`'s ``alpha_ndcg``; Clarke et al., SIGIR 2008).

The units are the question's evidence items when it has any, else its labelled sections
(grade >= 1; grades are not weighed: a unit is held or not). Which chunk holds a unit:

- a section is held by each of its chunks;
- an evidence item is held by the chunk at the rank where it is found (the chunks at
  ranks 1..r first cover ``relevance.coverage`` of it, :mod:`receval.measures.coverage`),
  and by any later chunk that alone covers that share of it. An item is held at most as
  many times as the collection has chunks that alone cover it (once, when none does).

G(r) = sum over held units i of (1 - alpha)^{c_i(r)}, c_i(r) the chunks above r that hold i.

The ideal ranking (alpha-DCG's normaliser) is built from the collection's chunks. For
section units every chunk holds one section, so the best ranking is exact: every
relevant section's first chunk (gain 1 each), then second chunks (1 - alpha each), and so
on while sections have chunks (m_s chunks of section s). One chunk may hold several
evidence items, so for them the ideal stacks at rank j every item's j-th copy (gain
sum_i [m_i >= j] (1 - alpha)^{j-1}), an upper bound of any ranking's gain: alpha-nDCG
stays <= 1, and a perfect ranking of items too many to share one chunk scores below 1, as
the evidence ``ndcg@k`` does (:mod:`receval.measures.spans`).
"""

from __future__ import annotations

import numpy as np

from receval.scoring.chunks import ALPHA

_KEEP = 1.0 - ALPHA


def _ordinals(keys: np.ndarray) -> np.ndarray:
    """For each key, how many equal keys come before it (in array order)."""
    order = np.argsort(keys, kind="stable")
    ranked = keys[order]
    starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]]) if ranked.size else np.zeros(0, np.int64)
    sizes = np.diff(np.r_[starts, ranked.size])
    out = np.empty(keys.size, dtype=np.int64)
    out[order] = np.arange(ranked.size) - np.repeat(starts, sizes)
    return out


def section_gains(chunk_sections: np.ndarray, relevant: np.ndarray, n_sections: int) -> np.ndarray:
    """(Q, K) G(r) of rankings whose units are sections: ``chunk_sections`` (Q, K) the
    section of each ranked chunk (-1 padded), ``relevant`` (Q, K) whether it is one of the
    question's units."""
    n_rows, depth = chunk_sections.shape
    keys = (np.arange(n_rows, dtype=np.int64)[:, None] * (n_sections + 1) + chunk_sections + 1).ravel()
    before = _ordinals(keys).reshape(n_rows, depth)
    return np.where(relevant & (chunk_sections >= 0), _KEEP ** before, 0.0)


def _levels(rows: np.ndarray, copies: np.ndarray, n_rows: int, depth: int) -> np.ndarray:
    """(Q, depth) c[q, j]: the units of question q with more than j copies."""
    counts = np.zeros((n_rows, depth + 1), dtype=np.int64)
    np.add.at(counts, (rows, np.minimum(copies, depth)), 1)
    return np.cumsum(counts[:, ::-1], axis=1)[:, ::-1][:, 1:]


def section_ideal(rows: np.ndarray, copies: np.ndarray, n_rows: int, depth: int) -> np.ndarray:
    """(Q, depth) the ideal ranking's gains for section units: ``rows`` the question of
    each unit, ``copies`` its section's chunks in the collection. Every unit's first copy,
    then the second copies..., one chunk per rank."""
    levels = _levels(rows, copies, n_rows, depth)  # units at each copy level
    filled = np.cumsum(levels, axis=1)  # ranks taken by levels 0..j
    span = max(int(filled[:, -1].max(initial=0)), depth) + 1  # rows apart: no row's search reaches the next
    offset = np.arange(n_rows, dtype=np.int64)[:, None] * span
    positions = np.arange(depth, dtype=np.int64)[None, :] + offset
    level = np.searchsorted((filled + offset).ravel(), positions.ravel(), side="right").reshape(n_rows, depth)
    level -= np.arange(n_rows)[:, None] * depth
    return np.where(np.arange(depth)[None, :] < filled[:, -1:], _KEEP ** level, 0.0)


def evidence_gains(
    rows: np.ndarray, found: np.ndarray, alone: np.ndarray, copies: np.ndarray, n_rows: int
) -> np.ndarray:
    """(Q, K) G(r) of rankings whose units are evidence items: per item (N), its question
    (``rows``), its found rank (1-based, 0: never), whether each ranked chunk alone covers
    it (``alone`` (N, K)) and the chunks of the collection that do (``copies``, >= 1)."""
    depth = alone.shape[1]
    held = alone | (np.arange(1, depth + 1)[None, :] == found[:, None])
    count = np.cumsum(held, axis=1)
    held &= count <= copies[:, None]
    gains = np.zeros((n_rows, depth), dtype=np.float64)
    np.add.at(gains, rows, np.where(held, _KEEP ** (count - 1), 0.0))
    return gains


def evidence_ideal(rows: np.ndarray, copies: np.ndarray, n_rows: int, depth: int) -> np.ndarray:
    """(Q, depth) the stacked ideal for evidence items: at rank j, every item's j-th copy."""
    return _levels(rows, copies, n_rows, depth) * _KEEP ** np.arange(depth, dtype=np.float64)[None, :]


def covering_chunks(
    items: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    chunks: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    coverage: float,
) -> np.ndarray:
    """(N,) for each item, the chunks that alone cover ``coverage`` of its letters, at least 1.

    ``items`` and ``chunks``: (global start, global end, first letter, end letter) of each;
    characters place them on the page line, letters (non-whitespace characters before a
    position) measure the overlap, as the found rule does. Only chunks whose characters
    overlap an item are compared (chunks sorted by start, each item's window of them found
    by binary search), so the work follows those pairs, not items x chunks."""
    start, end, l0, l1 = (np.asarray(a, np.int64) for a in items)
    c_start, c_end, c_l0, c_l1 = (np.asarray(a, np.int64) for a in chunks)
    if not start.size or not c_start.size:
        return np.ones(start.size, dtype=np.int64)
    order = np.argsort(c_start, kind="stable")
    c_start, c_end, c_l0, c_l1 = c_start[order], c_end[order], c_l0[order], c_l1[order]
    longest = int((c_end - c_start).max(initial=0))
    lo = np.searchsorted(c_start, start - longest, side="left")
    hi = np.searchsorted(c_start, end, side="left")
    sizes = np.maximum(hi - lo, 0)
    item = np.repeat(np.arange(start.size), sizes)
    chunk = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes) + np.repeat(lo, sizes)
    overlap = np.clip(np.minimum(l1[item], c_l1[chunk]) - np.maximum(l0[item], c_l0[chunk]), 0, None)
    length = l1 - l0
    enough = (overlap >= coverage * length[item]) & (length[item] > 0)
    return np.maximum(np.bincount(item[enough], minlength=start.size), 1)
