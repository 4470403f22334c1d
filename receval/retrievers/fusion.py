"""Fusion of member retrievers, at the level of chunks, before collapsing to sections.

Each member ranks every chunk; its best ``candidates`` chunks (by the one tie rule,
:func:`receval.ranking.select_top`) enter the fusion, the rest contribute nothing.
Fusing chunks rather than sections keeps every member's evidence at the granularity
it was scored at, and the fused ranking then collapses to sections exactly like a
single retriever's, so fused and plain runs are scored the same way.

- Reciprocal rank fusion (Cormack, Clarke & Buettcher 2009):
  ``score(c) = sum over members m holding c of 1 / (k + rank_m(c))``, k = 60 by default.
  A chunk 1st in one list and 3rd in the other scores 1/61 + 1/63 = 0.03227.
- Weighted score fusion: ``score(c) = sum over members m holding c of w_m * norm_m(c)``
  where norm is min-max (``(s - min) / (max - min)``, 1 when all are equal) or
  z-score (``(s - mean) / std``, 0 when std is 0) over the member's candidates for
  that question; weights default to equal (1 each).

A chunk that no member holds gets -inf, so it is never retrieved (``floor = None``).
"""

from __future__ import annotations

import time

import numpy as np

from receval.ranking import select_top


def candidates(scores: np.ndarray, size: int, tie_rank: np.ndarray, floor) -> tuple[np.ndarray, np.ndarray]:
    """Each row's best ``size`` chunks: (idx, scores), -1/NaN padded, by the tie rule."""
    return select_top(scores, size, tie_rank, floor=floor)


def rrf_contribution(idx: np.ndarray, k: float) -> np.ndarray:
    """1 / (k + rank) for each candidate position (rank counts from 1)."""
    ranks = np.arange(1, idx.shape[1] + 1, dtype=np.float64)
    return np.broadcast_to(1.0 / (k + ranks), idx.shape)


def normalised(top: np.ndarray, method: str) -> np.ndarray:
    """Min-max or z-score of each row's candidate scores (NaN padding stays NaN)."""
    top = top.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        if method == "minmax":
            low, high = np.nanmin(top, axis=1, keepdims=True), np.nanmax(top, axis=1, keepdims=True)
            span = high - low
            return np.where(span > 0, (top - low) / np.where(span > 0, span, 1), 1.0)
        mean = np.nanmean(top, axis=1, keepdims=True)
        std = np.nanstd(top, axis=1, keepdims=True)
        return np.where(std > 0, (top - mean) / np.where(std > 0, std, 1), 0.0)


def fuse(
    member_scores: list[np.ndarray],
    member_floors: list,
    tie_rank: np.ndarray,
    method: str = "rrf",
    k: float = 60.0,
    normalize: str = "minmax",
    weights: list[float] | None = None,
    size: int = 100,
) -> np.ndarray:
    """Fused (B, D) scores from each member's (B, D) scores."""
    n_rows, n_chunks = member_scores[0].shape
    fused = np.zeros((n_rows, n_chunks), dtype=np.float64)
    held = np.zeros((n_rows, n_chunks), dtype=bool)
    weights = list(weights) if weights else [1.0] * len(member_scores)
    for scores, floor, weight in zip(member_scores, member_floors, weights):
        idx, top = candidates(scores, size, tie_rank, floor)
        valid = idx >= 0
        part = rrf_contribution(idx, k) if method == "rrf" else weight * normalised(top, normalize)
        rows = np.broadcast_to(np.arange(n_rows)[:, None], idx.shape)
        np.add.at(fused, (rows[valid], idx[valid]), part[valid])
        held[rows[valid], idx[valid]] = True
    return np.where(held, fused, -np.inf)


class Fused:
    """A retriever made of member retrievers, fused per chunk (see module docstring)."""

    floor = None

    def __init__(self, name: str, members: list, method="rrf", k=60.0, normalize="minmax", weights=None, size=100):
        self.name, self.members = name, members
        self.method, self.k, self.normalize, self.weights, self.size = method, k, normalize, weights, size
        self.stage_seconds: dict[str, float] = {}

    def fit(self, texts: list[str], tie_rank: np.ndarray) -> None:
        self.tie_rank = tie_rank
        for member in self.members:
            member.fit(texts, tie_rank)

    def score(self, questions: list[str]) -> np.ndarray:
        self.stage_seconds = {}
        member_scores = []
        for member in self.members:
            began = time.perf_counter()
            member_scores.append(member.score(questions))
            self.stage_seconds[member.name] = time.perf_counter() - began
        began = time.perf_counter()
        fused = fuse(
            member_scores, [m.floor for m in self.members], self.tie_rank,
            self.method, self.k, self.normalize, self.weights, self.size,
        )
        self.stage_seconds["fusion"] = time.perf_counter() - began
        return fused
