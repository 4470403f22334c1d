"""Re-ranking: a second stage re-scores the first stage's top ``first_size`` chunks.

The first stage (any retriever, fused or not) ranks every chunk by the tie rule; a
re-ranker (a component of the ``rerank`` group: :mod:`receval.rerankers.dense`, ...)
scores just its shortlist, and those scores re-order it. A re-ranker never adds a
chunk: the shortlist comes first in its new order, then the first stage's chunks
below the shortlist keep their order after it (their stored scores are the first
stage's). Ties among re-ranker scores follow the one tie rule (:mod:`receval.ranking`).
"""

from __future__ import annotations

import time
from typing import Protocol

import numpy as np

from receval.ranking import select_top, sort_candidates
from receval.components import RerankConfig


PAIRS = "pairs_scored"  # per-question column: pairs the re-ranker scored, min(first_size, retrieved)


class Reranker(Protocol):
    name: str

    def fit(self, texts: list[str], tie_rank: np.ndarray) -> None: ...

    def rescore(self, questions: list[str], idx: np.ndarray) -> np.ndarray:
        """(B, n) scores of each question with its shortlisted chunks ``idx`` (-1: none).

        A remote re-ranker also sets ``usage``: per-question (B,) arrays of this call's
        ``requests``, ``input_tokens`` and ``output_tokens`` (see :mod:`receval.cost`)."""
        ...


RerankFields = RerankConfig  # fields every re-ranker has (receval.components.RerankConfig)


class Reranked:
    """A first stage followed by a re-ranker; ranks directly (``rank``), not by one score block."""

    floor = None

    def __init__(self, first, reranker: Reranker, first_size: int):
        self.first, self.reranker, self.first_size = first, reranker, first_size
        self.name = first.name
        self.members = [first]
        self.stage_seconds: dict[str, float] = {}

    def fit(self, texts: list[str], tie_rank: np.ndarray) -> None:
        self.tie_rank = tie_rank
        self.first.fit(texts, tie_rank)
        fitted = getattr(self.reranker, "retriever", None)
        if fitted is None or not _holds(self.first, fitted):
            self.reranker.fit(texts, tie_rank)

    def rank(self, questions: list[str], depth: int) -> tuple[np.ndarray, np.ndarray]:
        """Each question's top ``depth`` chunk indices and scores after re-ranking."""
        began = time.perf_counter()
        block = self.first.score(questions)
        stages = dict(getattr(self.first, "stage_seconds", None) or {})
        if not stages:
            stages = {self.first.name: time.perf_counter() - began}
        began = time.perf_counter()
        idx, scores = select_top(block, max(depth, self.first_size), self.tie_rank, floor=self.first.floor)
        short = idx[:, : self.first_size]
        new = np.asarray(self.reranker.rescore(questions, short), dtype=np.float64)
        self.tokens_estimated = set(getattr(self.first, "tokens_estimated", None) or ())  # a transform's
        if getattr(self.reranker, "tokens_estimated", False):
            self.tokens_estimated.add("rerank")
        self.question_counts = dict(getattr(self.first, "question_counts", None) or {})  # a transform's
        self.question_counts[PAIRS] = (short >= 0).sum(axis=1).astype(np.float64)
        for name, values in (getattr(self.reranker, "usage", None) or {}).items():
            self.question_counts[f"{name}.rerank"] = np.asarray(values, dtype=np.float64)
        keep = bool(getattr(self.reranker, "ties_keep_order", False))  # coarse grades: first-stage order
        short, new = sort_candidates(short, np.where(short >= 0, new, np.nan), self.tie_rank, keep)
        idx = np.concatenate([short, idx[:, self.first_size :]], axis=1)[:, :depth]
        scores = np.concatenate([new, scores[:, self.first_size :]], axis=1)[:, :depth]
        stages["rerank"] = time.perf_counter() - began
        self.stage_seconds = stages
        return idx, scores


def pairs_of(questions: list[str], idx: np.ndarray, texts: list[str]) -> tuple[np.ndarray, np.ndarray, list]:
    """The shortlist as (question, chunk text) pairs, row by row: their rows, columns and texts."""
    rows, cols = np.nonzero(idx >= 0)
    return rows, cols, [(questions[r], texts[c]) for r, c in zip(rows.tolist(), idx[rows, cols].tolist())]


def placed(idx: np.ndarray, rows: np.ndarray, cols: np.ndarray, values: np.ndarray) -> np.ndarray:
    """A (B, n) score block holding ``values`` at (rows, cols), NaN elsewhere (no chunk)."""
    out = np.full(idx.shape, np.nan, dtype=np.float64)
    out[rows, cols] = values
    return out


def _holds(first, retriever) -> bool:
    """True when ``retriever`` is the first stage or one of its members, or the stage a
    query transform searches with (already fitted)."""
    if first is retriever:
        return True
    inner = [first.first] if hasattr(first, "transform") else []
    return any(_holds(member, retriever) for member in [*getattr(first, "members", ()), *inner])

