"""Re-ranking: rescore the first stage's top ``first_size`` chunks with a second scorer.

The first stage (any retriever, fused or not) picks its best ``first_size`` chunks by
the tie rule; the second scorer (dense similarity by default; any retriever works)
scores just those, and its scores give the new order. Chunks outside the first
stage's list get -inf and are never retrieved, so re-ranking can reorder but never
add a chunk the first stage missed.
"""

from __future__ import annotations

import time

import numpy as np

from receval.ranking import select_top


class Reranked:
    floor = None

    def __init__(self, name: str, first, second, first_size: int = 50):
        self.name, self.first, self.second, self.first_size = name, first, second, first_size
        self.stage_seconds: dict[str, float] = {}

    def fit(self, texts: list[str], tie_rank: np.ndarray) -> None:
        self.tie_rank = tie_rank
        self.first.fit(texts, tie_rank)
        if self.second is not self.first and not _shared(self.first, self.second):
            self.second.fit(texts, tie_rank)

    def score(self, questions: list[str]) -> np.ndarray:
        began = time.perf_counter()
        first = self.first.score(questions)
        stages = dict(getattr(self.first, "stage_seconds", None) or {self.first.name: 0.0})
        if len(stages) == 1:
            stages = {next(iter(stages)): time.perf_counter() - began}
        began = time.perf_counter()
        idx, _ = select_top(first, self.first_size, self.tie_rank, floor=self.first.floor)
        second = self.second.score(questions)
        rows = np.broadcast_to(np.arange(len(questions))[:, None], idx.shape)
        valid = idx >= 0
        out = np.full(first.shape, -np.inf, dtype=np.float64)
        out[rows[valid], idx[valid]] = second[rows[valid], idx[valid]]
        stages["rerank"] = time.perf_counter() - began
        self.stage_seconds = stages
        return out


def _shared(first, second) -> bool:
    """True when ``second`` is one of ``first``'s members, already fitted."""
    return any(member is second for member in getattr(first, "members", ()))
