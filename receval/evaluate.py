"""Chunks -> sections -> per-question measures: the rows of ``results.parquet``.

Collapsing (:func:`collapse_to_sections`): each retrieved chunk is replaced by its
section, and each section is kept once, at its best (first) rank, so two windows of one
long section never take two places or count twice. The collapsed list keeps the chunks'
order, so it inherits the tie rule. The collapsed rankings are then judged and turned
into rows by :mod:`receval.scoring.rows` (:func:`judge`, :func:`question_rows`,
re-exported here), the code the read side re-scores stored rankings with.
"""

from __future__ import annotations

import numpy as np

from receval.scoring.rows import judge, question_rows

__all__ = ["collapse_to_sections", "judge", "question_rows"]


def collapse_to_sections(
    chunk_idx: np.ndarray, chunk_scores: np.ndarray, chunk_section: np.ndarray, n_sections: int
) -> tuple[np.ndarray, np.ndarray]:
    """(Q, K) chunk indices -> (Q, K) section indices, each section at its first rank.

    Returns section indices (-1 padded, kept sections moved to the front in order)
    and the score of each kept section's best chunk (NaN padded).
    """
    n_rows, depth = chunk_idx.shape
    section = np.where(chunk_idx >= 0, chunk_section[np.maximum(chunk_idx, 0)], -1)
    keys = np.arange(n_rows)[:, None] * (n_sections + 1) + (section + 1)
    _, first = np.unique(keys.ravel(), return_index=True)
    keep = np.zeros(n_rows * depth, dtype=bool)
    keep[first] = True
    keep = keep.reshape(n_rows, depth) & (section >= 0)
    order = np.argsort(~keep, axis=1, kind="stable")
    kept = np.take_along_axis(keep, order, axis=1)
    sections = np.where(kept, np.take_along_axis(section, order, axis=1), -1)
    scores = np.where(kept, np.take_along_axis(chunk_scores, order, axis=1), np.nan)
    return sections.astype(np.int32), scores.astype(np.float64)
