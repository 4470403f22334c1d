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

from receval.scoring.questions import Question
from receval.scoring.rows import judge, question_rows

__all__ = [
    "collapse_to_sections", "collapse_with_ranks", "drop_excluded", "excluded_depth", "judge", "question_rows",
    "trajectory_columns",
]


def excluded_depth(questions: list[Question], section_index: dict[str, int], chunk_section: np.ndarray) -> int:
    """The most chunks one question's excluded units hold: how much deeper its ranking is
    searched, so it keeps ``depth`` ranks once they are dropped."""
    if not any(q.excluded for q in questions):
        return 0
    per_section = np.bincount(chunk_section, minlength=len(section_index))
    return max(int(per_section[[section_index[u] for u in q.excluded]].sum()) for q in questions if q.excluded)


def drop_excluded(
    chunk_idx: np.ndarray, chunk_scores: np.ndarray, chunk_section: np.ndarray, questions: list[Question],
    section_index: dict[str, int], depth: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each question's ranking of chunks without the chunks of its excluded units
    (:mod:`receval.datasets.excluded`), the rest moved up in order, cut to ``depth``;
    and (Q,) how many chunks were dropped from each."""
    n_rows = len(questions)
    size = len(section_index) + 1
    counts = np.fromiter((len(q.excluded) for q in questions), np.int64, n_rows)
    units = np.fromiter((section_index[u] for q in questions for u in q.excluded), np.int64, int(counts.sum()))
    keys = np.sort(np.repeat(np.arange(n_rows, dtype=np.int64), counts) * size + units)
    section = np.where(chunk_idx >= 0, chunk_section[np.maximum(chunk_idx, 0)] if len(chunk_section) else 0, -1)
    ranked = np.arange(n_rows, dtype=np.int64)[:, None] * size + section
    drop = (chunk_idx >= 0) & np.isin(ranked, keys)
    order = np.argsort(drop, axis=1, kind="stable")
    idx = np.take_along_axis(np.where(drop, -1, chunk_idx), order, axis=1)[:, :depth]
    scores = np.take_along_axis(np.where(drop, np.nan, chunk_scores), order, axis=1)[:, :depth]
    return idx, scores, drop.sum(axis=1).astype(np.int64)


def collapse_to_sections(
    chunk_idx: np.ndarray, chunk_scores: np.ndarray, chunk_section: np.ndarray, n_sections: int
) -> tuple[np.ndarray, np.ndarray]:
    """(Q, K) chunk indices -> (Q, K) section indices, each section at its first rank.

    Returns section indices (-1 padded, kept sections moved to the front in order)
    and the score of each kept section's best chunk (NaN padded).
    """
    sections, scores, _ = collapse_with_ranks(chunk_idx, chunk_scores, chunk_section, n_sections)
    return sections, scores


def collapse_with_ranks(
    chunk_idx: np.ndarray, chunk_scores: np.ndarray, chunk_section: np.ndarray, n_sections: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`collapse_to_sections`, and (Q, K) the 1-based chunk rank each kept section
    was first retrieved at (0 padded): where a token budget reaches it
    (:mod:`receval.scoring.budget`)."""
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
    ranks = np.where(kept, order + 1, 0)
    return sections.astype(np.int32), scores.astype(np.float64), ranks.astype(np.int64)


def trajectory_columns(
    questions: list[Question],
    section_ids: list[str],
    chunk_section: np.ndarray,
    calls: list,
    final_idx: np.ndarray,
    final_scores: np.ndarray,
    latency_ms: np.ndarray,
) -> dict[str, list]:
    """The trajectory columns of questions answered with search calls
    (:mod:`receval.retrievers.trajectory`; a question answered plainly counts as one call,
    its final ranking): ``calls`` (query, section ids, scores, latency of each, collapsed
    to sections as ``retrieved``), ``n_calls``, ``first_relevant_call`` (1-based, null
    when no call retrieved a relevant section) and ``recall_union`` (the share of
    relevant sections any call retrieved). Both are null for questions without
    section labels (unanswerable, or labelled by evidence spans only).

    ``calls[q]``: a list of objects with ``query``, ``idx`` (chunk indices, -1 padded),
    ``scores`` and ``latency_ms``, or None."""
    per_question = [
        c if c is not None else [_Plain(q.text, final_idx[row], final_scores[row], float(latency_ms[row]))]
        for row, (q, c) in enumerate(zip(questions, calls))
    ]
    counts = np.fromiter(map(len, per_question), np.int64, len(questions))
    owner = np.repeat(np.arange(len(questions)), counts)
    flat = [call for mine in per_question for call in mine]
    width = max((call.idx.size for call in flat), default=1) or 1
    idx = np.full((len(flat), width), -1, dtype=np.int64)
    scores = np.full((len(flat), width), np.nan, dtype=np.float64)
    for i, call in enumerate(flat):
        idx[i, : call.idx.size], scores[i, : call.scores.size] = call.idx, call.scores
    index = {sid: i for i, sid in enumerate(section_ids)}
    sections, section_scores = collapse_to_sections(idx, scores, chunk_section, len(section_ids))
    grades = judge(sections, [questions[row] for row in owner], index).gains if flat else np.zeros((0, width))
    relevant = (sections >= 0) & (grades >= 1)
    position = np.arange(len(flat)) - np.repeat(np.cumsum(counts) - counts, counts)
    first = np.full(len(questions), np.iinfo(np.int64).max)
    np.minimum.at(first, owner[relevant.any(axis=1)], position[relevant.any(axis=1)])
    rows, cols = np.nonzero(relevant)
    found = np.unique(owner[rows] * (len(section_ids) + 1) + sections[rows, cols])
    n_found = np.bincount(found // (len(section_ids) + 1), minlength=len(questions))
    n_relevant = np.fromiter((sum(g >= 1 for g in q.relevant.values()) for q in questions), np.int64, len(questions))
    ids = np.asarray(section_ids, dtype=object)
    stored = [
        {
            "query": call.query,
            "retrieved": list(ids[row[row >= 0]]),
            "scores": row_scores[~np.isnan(row_scores)].tolist(),
            "latency_ms": call.latency_ms,
        }
        for call, row, row_scores in zip(flat, sections, section_scores)
    ]
    starts = np.concatenate([[0], np.cumsum(counts)])
    labelled = [q.answerable and n > 0 for q, n in zip(questions, n_relevant)]
    return {
        "n_calls": counts.tolist(),
        "first_relevant_call": [
            int(f) + 1 if ok and f < np.iinfo(np.int64).max else None for f, ok in zip(first, labelled)
        ],
        "recall_union": [float(f / n) if ok else None for f, n, ok in zip(n_found, n_relevant, labelled)],
        "calls": [stored[starts[row] : starts[row + 1]] for row in range(len(questions))],
    }


class _Plain:
    """A plainly answered question as its one call."""

    def __init__(self, query: str, idx: np.ndarray, scores: np.ndarray, latency_ms: float):
        self.query, self.idx, self.scores, self.latency_ms = query, idx, scores, latency_ms
