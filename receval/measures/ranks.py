"""A run's chunk measures and the per-chunk-rank counts it stores for them.

The counts (:class:`receval.scoring.chunks.ChunkRanking`: each ranked chunk's tokens, the
tokens it adds to the union above it and to the units' tokens covered, alpha-nDCG's gains,
the budget tokenizer's counts, nugget support ranks) are computed once from the pages
(:mod:`receval.measures.spans`, :mod:`receval.measures.novelty`,
:mod:`receval.measures.nuggets`, :mod:`receval.measures.tokens`); :func:`chunk_columns`
turns them into the stored ``<family>@k`` columns with the formulas of
:mod:`receval.scoring.chunks`, and :func:`rank_columns` into the per-rank lists
(:data:`receval.results.format.RANKS`) the read side derives any k or token budget from.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from receval.chunking import Chunk
from receval.datasets import Question
from receval.measures.nuggets import page_text, support_ranks
from receval.measures.tokens import chunk_token_counts
from receval.scoring.chunks import ChunkRanking
from receval.scoring.declared import MeasureName, chunk_families, chunk_measure


def token_columns(ks: list[int], nuggets: bool = False) -> list[str]:
    """The stored chunk measure columns, ``<family>@k``, family by family (the declared chunk
    families a run stores, :func:`receval.scoring.declared.chunk_families`; the nugget ones
    only with nuggets)."""
    return [f"{family.name}@{k}" for family in chunk_families(nuggets) for k in ks]


def chunk_columns(ranking: ChunkRanking, ks: list[int], answerable: np.ndarray) -> dict[str, list[float | None]]:
    """Each chunk measure ``ranking`` has the counts for, at each of ``ks``: null for an
    unanswerable question (the nugget measures: for one without nuggets)."""
    columns: dict[str, list[float | None]] = {}
    for family in chunk_families():
        if family.needs is not None and getattr(ranking, family.needs) is None:
            continue
        scored = answerable if not family.own_nulls else np.ones(len(answerable), bool)
        for k in ks:
            values = chunk_measure(MeasureName(family.name, k), ranking, k)
            columns[f"{family.name}@{k}"] = [float(v) if ok and v == v else None for v, ok in zip(values, scored)]
    return columns


def _lists(values: np.ndarray, lengths: np.ndarray, kind=int) -> list[list]:
    return [row[:n].astype(kind).tolist() for row, n in zip(values, lengths)]


def rank_columns(ranking: ChunkRanking, answerable: np.ndarray) -> dict[str, list]:
    """The per-chunk-rank lists (each as long as its ranking) and per-question counts of
    ``ranking``, as :data:`receval.results.format.RANKS` names them; the units' counts null
    for a question without labels."""
    lengths = np.asarray(ranking.lengths, dtype=np.int64)
    columns: dict[str, list] = {
        "chunk_tokens": _lists(ranking.words, lengths),
        "chunk_new_tokens": _lists(ranking.new, lengths),
        "chunk_evidence_tokens": _lists(ranking.evidence, lengths),
        "evidence_tokens": [int(n) if ok else None for n, ok in zip(ranking.evidence_total, answerable)],
    }
    if ranking.tokens is not None:
        columns["chunk_llm_tokens"] = _lists(ranking.tokens, lengths)
    if ranking.novelty is not None:
        columns["chunk_novelty"] = _lists(ranking.novelty, lengths, float)
        ideal = [row[row > 0].astype(float).tolist() for row in ranking.novelty_ideal]
        columns["novelty_ideal"] = [g if ok else None for g, ok in zip(ideal, answerable)]
    if ranking.nugget_at is not None:
        counts = ranking.nugget_valid.sum(axis=1)
        columns["nugget_at"] = [row[:n].astype(int).tolist() if n else None for row, n in zip(ranking.nugget_at, counts)]
    return columns


def completed(
    ranking: ChunkRanking, questions: list[Question], chunks: list[Chunk], chunk_idx: np.ndarray,
    tokenizer: str | None, nugget_coverage: float, language: str,
) -> ChunkRanking:
    """``ranking`` (the span counts, :func:`receval.measures.spans.judge_spans`) with the
    budget tokenizer's counts (``metrics.tokenizer``, :mod:`receval.measures.tokens`) and the
    nuggets' support ranks (:mod:`receval.measures.nuggets`), where a run has them."""
    has_nuggets = any(q.nuggets for q in questions)
    if tokenizer is None and not has_nuggets:
        return ranking
    used = np.unique(chunk_idx[chunk_idx >= 0])
    texts = dict(zip(used.tolist(), (page_text(chunks[c]) for c in used.tolist())))
    lookup = _Texts(texts)
    if tokenizer is not None:
        ranking = replace(ranking, tokens=chunk_token_counts(tokenizer, lookup, chunk_idx))
    if has_nuggets:
        at, vital, valid = support_ranks(questions, lookup, chunk_idx, nugget_coverage, language)
        ranking = replace(ranking, nugget_at=at, nugget_vital=vital, nugget_valid=valid)
    return ranking


class _Texts:
    """The page texts of the ranked chunks, looked up by chunk index."""

    def __init__(self, texts: dict[int, str]):
        self.texts = texts

    def __getitem__(self, index: int) -> str:
        return self.texts[index]


def nugget_columns(questions: list[Question]) -> dict[str, list]:
    """Each question's nugget ids, texts and importance (null without nuggets)."""
    return {
        "nuggets": [[n.id for n in q.nuggets] if q.nuggets else None for q in questions],
        "nugget_texts": [[n.text for n in q.nuggets] if q.nuggets else None for q in questions],
        "nugget_importance": [["vital" if n.vital else "okay" for n in q.nuggets] if q.nuggets else None
                              for q in questions],
    }
