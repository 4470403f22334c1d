"""Rankings and labels -> per-question measures: the rows of ``results.parquet``.

:func:`judge` grades each retrieved unit (a section, or a document of a TREC run) by the
questions' labels, and :func:`question_rows` turns a ranking into the per-question
columns, every measure computed by :mod:`receval.scoring.measures`. A run calls it on its
collapsed section rankings (:mod:`receval.run.evaluate`); the read side on a stored ranking
with added labels or on an imported TREC run, so each is scored by the same code.
Unanswerable questions (no labels) get a ranking but no measures (null), and are left out
of every mean.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from receval.scoring.chunks import ChunkRanking
from receval.scoring.declared import Measure
from receval.scoring.measures import Judged, first_relevant_rank
from receval.scoring.questions import Question


@dataclass(frozen=True)
class EvidenceJudgement:
    """What the span step (:mod:`receval.measures.spans`) adds to a run's rows."""

    by_evidence: np.ndarray  # (Q,) bool: the question is judged on evidence, at chunk ranks
    judged: Judged  # for those rows (other rows: zero)
    columns: dict[str, list[float | None]]  # token measures, None for unanswerable rows
    ranking: ChunkRanking | None = None  # the per-chunk-rank counts they come from


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
    unit_ranks: np.ndarray | None = None,
) -> dict[str, list | np.ndarray]:
    """Columns of the per-question table (see :mod:`receval.results.format` for the schema).

    With ``spans`` (and ``chunks``: chunk ids, the (Q, K) chunk indices and scores),
    questions labelled with evidence are judged at chunk ranks and list the chunks
    they retrieved; the others as above, by section. Every row also gets the judged
    ranking a budget measure is derived from (:func:`unit_columns`); with ``unit_ranks``
    ((Q, K), the chunk rank of each section's first chunk), its ``retrieved_at``."""
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
    lengths = np.fromiter(map(len, retrieved), np.int64, len(retrieved))
    if unit_ranks is not None:
        by_evidence = spans.by_evidence if spans is not None else np.zeros(len(questions), bool)
        at = np.where(by_evidence[:, None], np.arange(1, unit_ranks.shape[1] + 1)[None, :], unit_ranks)
        columns["retrieved_at"] = [row[:n].tolist() for row, n in zip(at.astype(np.int64), lengths)]
    columns.update(unit_columns(judged, lengths, answerable))
    columns["latency_ms"] = latency_ms.astype(float).tolist()
    return columns


def unit_columns(judged: Judged, lengths: np.ndarray, answerable: np.ndarray) -> dict[str, list]:
    """The judged ranking as stored (:data:`receval.results.format.RANKS`): per retrieved
    unit its gain and the labelled units first reached there, per question its number of
    units and its ideal gains (trailing zeros left out); the last two null for a question
    without labels."""
    found = np.asarray(judged.found, dtype=np.int64)
    ideal = [row[row > 0].tolist() for row in judged.ideal]
    return {
        "retrieved_gain": [row[:n].tolist() for row, n in zip(judged.gains, lengths)],
        "retrieved_found": [row[:n].tolist() for row, n in zip(found, lengths)],
        "n_units": [int(n) if ok else None for n, ok in zip(judged.n_relevant, answerable)],
        "ideal_gains": [g if ok else None for g, ok in zip(ideal, answerable)],
    }


def judged_of(gains: np.ndarray, found: np.ndarray, n_units: np.ndarray, ideal: np.ndarray) -> Judged:
    """The :class:`Judged` ranking :func:`unit_columns` stored, back from its padded arrays:
    ``found`` are the units (evidence items counted, sections one each)."""
    return Judged(gains=gains, ideal=ideal, n_relevant=n_units.astype(np.int64), units=found.astype(np.int64))


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
