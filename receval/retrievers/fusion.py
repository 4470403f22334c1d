"""Fusion of member retrievers, at the level of chunks, before collapsing to sections.

Each member ranks every chunk; its best ``candidates`` chunks (by the one tie rule,
:func:`receval.run.ranking.select_top`) enter the fusion, the rest contribute nothing.
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
import warnings
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from receval.run import components
from receval.run.components import Context, RetrieverConfig, component
from receval.core.errors import ConfigError
from receval.run.ranking import select_top
from receval.retrievers.base import Block, Stage
from receval.schema import SHORTLIST, range_


class Normalize(StrEnum):
    minmax = "minmax"
    zscore = "zscore"


@dataclass
class RRFConfig:
    """Reciprocal rank fusion (``retriever/fusion=rrf``)."""

    kind: str = "rrf"
    # score = sum of 1 / (k + rank); past 1e6 every rank of a shortlist scores alike
    k: float = field(default=60.0, metadata=range_(0, 1e6, hint="60 is usual"))
    candidates: int = field(default=100, metadata=range_(*SHORTLIST))  # chunks each member contributes


@dataclass
class WeightedConfig:
    """Weighted score fusion (``retriever/fusion=weighted``)."""

    kind: str = "weighted"
    normalize: Normalize = Normalize.minmax  # over each member's candidates for a question
    # one per member ([] = equal); shares, not signs; 1e6 keeps weight * normalised score far from overflow
    weights: list[float] = field(default_factory=list, metadata=range_(0, 1e6, hint="weights are shares"))
    candidates: int = field(default=100, metadata=range_(*SHORTLIST))

    def problems(self) -> list[str]:
        if self.weights and sum(self.weights) <= 0:
            return [f"weights={list(self.weights)}: all zero; give at least one member a positive weight"]
        return []


@dataclass
class FusedConfig(RetrieverConfig):
    """Members (kinds like ``bm25``, or full nodes like ``{kind: dense, model: ...}``),
    fused per chunk by the ``fusion`` node."""

    kind: str = "fused"
    members: list[Any] = field(default_factory=lambda: ["tfidf", "bm25"])
    fusion: Any = field(default_factory=lambda: {"kind": "rrf"})

    def problems(self) -> list[str]:
        problems = [] if len(self.members) >= 2 else [
            f"members={list(self.members)}: fuse two or more retrievers"
        ]
        fusion = self.fusion
        weights = list((fusion.get("weights") if isinstance(fusion, dict) else getattr(fusion, "weights", None)) or [])
        if weights and len(weights) != len(self.members):
            problems.append(
                f"fusion.weights has {len(weights)} values for {len(self.members)} members: "
                "give one weight per member, or [] for equal weights"
            )
        return problems

    @staticmethod
    def parts(node, key: str) -> list[tuple[str, Any, str]]:
        members = [("retriever", m, f"{key}.members[{i}]") for i, m in enumerate(node.members)]
        return members + [("retriever/fusion", node.fusion, f"{key}.fusion")]

    @staticmethod
    def describe(node) -> str:
        names = "+".join(components.label("retriever", m) for m in node.members)
        return f"{node.fusion.kind}({names})"


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
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a row with no candidate (all NaN) stays NaN
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


class Fused(Stage):
    """A retriever made of member retrievers, fused per chunk (see module docstring)."""

    floor = None

    def __init__(self, name: str, members: list[Stage], method="rrf", k=60.0, normalize="minmax", weights=None, size=100):
        if len({member.name for member in members}) < len(members):
            raise ConfigError(f"retriever.members: {[m.name for m in members]} names one retriever twice")
        self.name, self.members = name, members
        self.method, self.k, self.normalize, self.weights, self.size = method, k, normalize, weights, size

    def fit(self, texts: list[str], tie_rank: np.ndarray) -> None:
        self.tie_rank = tie_rank
        for member in self.members:
            member.fit(texts, tie_rank)

    def children(self) -> tuple[Stage, ...]:
        return tuple(self.members)

    def timed(self) -> list[str]:
        return [member.name for member in self.members] + ["fusion"]

    def scored(self, questions: list[str]) -> Block:
        """The fused block, with each member's seconds under its name and ``fusion``'s."""
        seconds: dict[str, float] = {}
        member_scores = []
        for member in self.members:
            began = time.perf_counter()
            member_scores.append(member.score(questions))
            seconds[member.name] = time.perf_counter() - began
        began = time.perf_counter()
        fused = fuse(
            member_scores, [m.floor for m in self.members], self.tie_rank,
            self.method, self.k, self.normalize, self.weights, self.size,
        )
        seconds["fusion"] = time.perf_counter() - began
        return Block(fused, seconds)

    def score(self, questions: list[str]) -> np.ndarray:
        return self.scored(questions).scores


@component("retriever/fusion", "rrf", RRFConfig)
def build_rrf(node, context: Context) -> dict:
    return {"method": "rrf", "k": float(node.k), "size": int(node.candidates)}


@component("retriever/fusion", "weighted", WeightedConfig)
def build_weighted(node, context: Context) -> dict:
    return {
        "method": "weighted", "normalize": str(node.normalize),
        "weights": [float(w) for w in node.weights], "size": int(node.candidates),
    }


@component("retriever", "fused", FusedConfig)
def build_fused(node, context: Context) -> Fused:
    members = [
        components.build("retriever", member, context, f"retriever.members[{i}]")
        for i, member in enumerate(node.members)
    ]
    fusion = components.build("retriever/fusion", node.fusion, context, "retriever.fusion")
    return Fused(FusedConfig.describe(node), members, **fusion)
