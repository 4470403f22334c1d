"""Chunks -> sections -> per-question measures: the rows of ``results.parquet``.

Collapsing: each retrieved chunk is replaced by its section, and each section is kept
once, at its best (first) rank, so two windows of one long section never take two
places or count twice. The collapsed list keeps the chunks' order, so it inherits
the tie rule. Unanswerable questions (no labels) get a ranking but no measures
(null), and are left out of every mean.
"""

from __future__ import annotations

import numpy as np

from receval.datasets import Question
from receval.metrics import Judged, Measure, first_relevant_rank
from receval.measures.spans import EvidenceJudgement


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


def judge(section_idx: np.ndarray, questions: list[Question], section_index: dict[str, int]) -> Judged:
    """Grades of the retrieved sections, plus each question's ideal grades.

    Labels become three flat arrays (question row, section, grade) in one pass; the
    retrieved sections are looked up by a sorted key ``row * S + section``.
    """
    n_rows, _ = section_idx.shape
    n_sections = len(section_index) + 1
    counts = np.fromiter((len(q.relevant) for q in questions), np.int64, n_rows)
    label_rows = np.repeat(np.arange(n_rows, dtype=np.int64), counts)
    label_sections = np.fromiter(
        (section_index[label] for q in questions for label in q.relevant), np.int64, int(counts.sum())
    )
    label_grades = np.fromiter(
        (grade for q in questions for grade in q.relevant.values()), np.float64, int(counts.sum())
    )
    label_keys = label_rows * n_sections + label_sections
    order = np.argsort(label_keys)
    keys = np.arange(n_rows, dtype=np.int64)[:, None] * n_sections + section_idx
    gains = np.zeros(section_idx.shape, dtype=np.float64)
    if label_keys.size:
        sorted_keys, sorted_grades = label_keys[order], label_grades[order]
        at = np.minimum(np.searchsorted(sorted_keys, keys), sorted_keys.size - 1)
        found = (section_idx >= 0) & (sorted_keys[at] == keys)
        gains[found] = sorted_grades[at[found]]
    # ideal: each question's grades sorted descending, left-aligned, zero-padded
    by_grade = np.lexsort((-label_grades, label_rows))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    position = np.arange(label_rows.size) - starts[label_rows[by_grade]]
    ideal = np.zeros((n_rows, max(int(counts.max(initial=0)), 1)), dtype=np.float64)
    ideal[label_rows[by_grade], position] = label_grades[by_grade]
    n_relevant = np.bincount(label_rows, weights=label_grades >= 1, minlength=n_rows).astype(np.int64)
    nonrelevant, n_nonrelevant = _judged_nonrelevant(section_idx, questions, section_index)
    return Judged(gains=gains, ideal=ideal, n_relevant=n_relevant, nonrelevant=nonrelevant, n_nonrelevant=n_nonrelevant)


def _judged_nonrelevant(
    section_idx: np.ndarray, questions: list[Question], section_index: dict[str, int]
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Retrieved positions judged not relevant (Q, K) and each question's count of such
    judgements (sections the collection does not hold are not counted); (None, None)
    when no question has any, as for every collection without score-0 judgements."""
    if not any(q.nonrelevant for q in questions):
        return None, None
    n_rows = len(questions)
    pairs = [(row, section_index[s]) for row, q in enumerate(questions) for s in q.nonrelevant if s in section_index]
    rows = np.fromiter((r for r, _ in pairs), np.int64, len(pairs))
    sections = np.fromiter((s for _, s in pairs), np.int64, len(pairs))
    n_sections = len(section_index) + 1
    keys = np.sort(rows * n_sections + sections)
    retrieved = np.arange(n_rows, dtype=np.int64)[:, None] * n_sections + section_idx
    at = np.minimum(np.searchsorted(keys, retrieved), max(keys.size - 1, 0))
    hit = (section_idx >= 0) & (keys[at] == retrieved) if keys.size else np.zeros(section_idx.shape, bool)
    return hit, np.bincount(rows, minlength=n_rows).astype(np.int64)


def question_rows(
    questions: list[Question],
    section_ids: list[str],
    section_idx: np.ndarray,
    section_scores: np.ndarray,
    latency_ms: np.ndarray,
    measures: list[Measure],
    spans: EvidenceJudgement | None = None,
    chunks: tuple[list[str], np.ndarray, np.ndarray] | None = None,
) -> dict[str, list | np.ndarray]:
    """Columns of the per-question table (see :mod:`receval.results.format` for the schema).

    With ``spans`` (and ``chunks``: chunk ids, the (Q, K) chunk indices and scores),
    questions labelled with evidence are judged at chunk ranks and list the chunks
    they retrieved; the others as above, by section."""
    index = {sid: i for i, sid in enumerate(section_ids)}
    judged = judge(section_idx, questions, index)
    answerable = np.asarray([q.answerable for q in questions], dtype=bool)
    ids = np.asarray(section_ids, dtype=object)
    retrieved = [list(ids[row[row >= 0]]) for row in section_idx]
    scores = [row[~np.isnan(row)].astype(float).tolist() for row in section_scores]
    if spans is not None and spans.by_evidence.any():
        judged = _merge(judged, spans)
        chunk_ids, chunk_idx, chunk_scores = chunks
        chunk_ids = np.asarray(chunk_ids, dtype=object)
        for row in np.flatnonzero(spans.by_evidence):
            kept = chunk_idx[row] >= 0
            retrieved[row] = list(chunk_ids[chunk_idx[row][kept]])
            scores[row] = chunk_scores[row][kept].astype(float).tolist()
    rank = first_relevant_rank(judged)
    columns: dict[str, list | np.ndarray] = {
        "question_id": [q.id for q in questions],
        "kind": [q.kind for q in questions],
        "split": [q.split for q in questions],
        "question": [q.text for q in questions],
        "relevant": [list(q.relevant) + [e.label for e in q.evidence] for q in questions],
        "grades": [list(q.relevant.values()) + [1] * len(q.evidence) for q in questions],
        "retrieved": retrieved,
        "scores": scores,
        "first_relevant_rank": [int(r) if ok and r > 0 else None for r, ok in zip(rank, answerable)],
    }
    for measure in measures:
        values = measure(judged)
        columns[measure.name] = [float(v) if ok else None for v, ok in zip(values, answerable)]
    if spans is not None:
        columns.update(spans.columns)
    columns["latency_ms"] = latency_ms.astype(float).tolist()
    return columns


def _merge(judged: Judged, spans: EvidenceJudgement) -> Judged:
    """Section judgement for section-labelled rows, evidence judgement for the rest."""
    pick = spans.by_evidence[:, None]
    width = max(judged.ideal.shape[1], spans.judged.ideal.shape[1])

    def pad(a: np.ndarray) -> np.ndarray:
        return np.pad(a, ((0, 0), (0, width - a.shape[1])))

    return Judged(
        gains=np.where(pick, spans.judged.gains, judged.gains),
        ideal=np.where(pick, pad(spans.judged.ideal), pad(judged.ideal)),
        n_relevant=np.where(spans.by_evidence, spans.judged.n_relevant, judged.n_relevant),
        units=np.where(pick, spans.judged.found, judged.found),
        nonrelevant=None if judged.nonrelevant is None else judged.nonrelevant & ~pick,
        n_nonrelevant=None if judged.n_nonrelevant is None else np.where(spans.by_evidence, 0, judged.n_nonrelevant),
    )


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
