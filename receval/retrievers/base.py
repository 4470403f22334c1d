"""The retriever protocol and the one search loop every retriever goes through.

A retriever is fitted on chunk texts once, then scores a batch of questions against
every chunk (a dense (B, D) block). ``search`` batches the questions, applies the
tie rule through :func:`receval.ranking.select_top`, and times each batch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from receval.core.progress import Progress
from receval.ranking import select_top

# Cap on one dense score block (questions x chunks), in floats: bounds memory on
# large corpora whatever the batch size.
MAX_BLOCK = 1 << 25


class Retriever(Protocol):
    name: str
    floor: float | None  # scores at or below are never retrieved (None: keep any finite)

    def fit(self, texts: list[str], tie_rank: np.ndarray) -> None:
        """Index the chunk texts; ``tie_rank`` is their id order (for stages that rank)."""
        ...

    def score(self, questions: list[str]) -> np.ndarray:
        """(B, D) scores of each question against each fitted chunk."""
        ...


@dataclass(frozen=True)
class Hits:
    """Top chunks of every question: ``chunk_idx`` (Q, depth) int32, -1 padded;
    ``scores`` (Q, depth) float64; ``latency_ms`` (Q,) amortised over each batch;
    ``stage_ms``: the same per stage of a multi-stage retriever (member retrievers,
    fusion, rerank), plus ``select`` for top-k selection; ``counts``: per-question
    counts a stage reports as ``question_counts`` (``pairs_scored``, ``requests.rerank``...)."""

    chunk_idx: np.ndarray
    scores: np.ndarray
    latency_ms: np.ndarray
    stage_ms: dict[str, np.ndarray]
    counts: dict[str, np.ndarray] = field(default_factory=dict)


def search(
    retriever: Retriever,
    questions: list[str],
    depth: int,
    tie_rank: np.ndarray,
    batch_size: int = 256,
    label: str | None = "searching",
) -> Hits:
    """Score all questions in batches and keep each one's best ``depth`` chunks.

    Latency per question is its batch's wall time (scoring and selection) divided by
    the batch size; ``search_batch=1`` times each question on its own. ``label``: the
    progress line's stage (:mod:`receval.core.progress`; ``None``: no line); it is updated
    after each batch, outside the timed part.
    """
    n_chunks = max(len(tie_rank), 1)
    step = max(1, min(batch_size, MAX_BLOCK // n_chunks))
    idx = np.full((len(questions), depth), -1, dtype=np.int32)
    scores = np.full((len(questions), depth), np.nan, dtype=np.float64)
    latency = np.zeros(len(questions), dtype=np.float64)
    stage_ms: dict[str, np.ndarray] = {}
    counts: dict[str, np.ndarray] = {}
    shown = None if label is not None else False
    with Progress(label or "", len(questions), shown, unit="questions") as line:
        for start in range(0, len(questions), step):
            batch = questions[start : start + step]
            began = time.perf_counter()
            if hasattr(retriever, "rank"):  # a multi-stage retriever that orders its own shortlist
                top_idx, top_scores = retriever.rank(batch, depth)
                scored = time.perf_counter()
            else:
                block = retriever.score(batch)
                scored = time.perf_counter()
                top_idx, top_scores = select_top(block, depth, tie_rank, floor=retriever.floor)
            elapsed = time.perf_counter() - began
            rows = slice(start, start + len(batch))
            idx[rows], scores[rows] = top_idx, top_scores
            own = getattr(retriever, "question_seconds", None)  # per-request wall times (concurrent http)
            latency[rows] = 1000.0 * (own if own is not None and len(own) == len(batch) else elapsed / len(batch))
            stages = getattr(retriever, "stage_seconds", None) or {retriever.name: scored - began}
            stages = {**stages, "select": elapsed - (scored - began)}
            for stage, seconds in stages.items():
                stage_ms.setdefault(stage, np.zeros(len(questions)))[rows] = 1000.0 * seconds / len(batch)
            for name, values in (getattr(retriever, "question_counts", None) or {}).items():
                counts.setdefault(name, np.zeros(len(questions)))[rows] = values
            line.advance(len(batch))
    return Hits(idx, scores, latency, stage_ms, counts)
