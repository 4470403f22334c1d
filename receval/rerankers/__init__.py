"""Re-rankers: a second stage re-scores the first stage's top ``first_size`` chunks.

A re-ranker (a component of the ``rerank`` group: :mod:`receval.rerankers.dense`, ...)
is a :class:`Scorer`: it scores each question's shortlist and returns a
:class:`Rescored` (scores, and what the call used). :class:`receval.run.stages.Reranked`
puts it after a first stage. A re-ranker never adds a chunk: the shortlist comes first
in its new order, then the first stage's chunks below the shortlist keep their order.
Ties among re-ranker scores follow the one tie rule (:mod:`receval.run.ranking`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from receval.clients.calls import Replay
from receval.run.components import RerankConfig
from receval.core import vocabulary
from receval.retrievers.base import Stage


PAIRS = vocabulary.PAIRS  # per-question column: pairs the re-ranker scored, min(first_size, retrieved)


@dataclass(frozen=True)
class Rescored:
    """One batch's shortlist scores, (B, n) float64, NaN where there is no chunk, and what
    the call used: per-question (B,) ``usage`` arrays (``requests``, ``input_tokens``,
    ``output_tokens``; see :mod:`receval.measures.cost`), ``tokens_estimated`` when counted here
    because the server did not report them."""

    scores: np.ndarray
    usage: dict[str, np.ndarray] = field(default_factory=dict)
    tokens_estimated: bool = False
    replay: Replay = Replay()  # answers replayed from the cache (:mod:`receval.clients.calls`)


class Scorer:
    """Base of every re-ranker; the neutral values are declared here, not probed."""

    name = "rerank"
    api_calls: int = 0  # paid requests so far (a property where a client counts them)
    retriever: Stage | None = None  # the retriever it scores with, when it is one (dense)
    ties_keep_order = False  # coarse grades (an LLM's 0-3): equal grades keep first-stage order

    def fit(self, texts: list[str], tie_rank: np.ndarray) -> None:
        raise NotImplementedError

    def rescore(self, questions: list[str], idx: np.ndarray) -> Rescored:
        """Scores of each question with its shortlisted chunks ``idx`` (-1: none)."""
        raise NotImplementedError


Reranker = Scorer  # the protocol's older name
RerankFields = RerankConfig  # fields every re-ranker has (receval.run.components.RerankConfig)


def pairs_of(questions: list[str], idx: np.ndarray, texts: list[str]) -> tuple[np.ndarray, np.ndarray, list]:
    """The shortlist as (question, chunk text) pairs, row by row: their rows, columns and texts."""
    rows, cols = np.nonzero(idx >= 0)
    return rows, cols, [(questions[r], texts[c]) for r, c in zip(rows.tolist(), idx[rows, cols].tolist())]


def placed(idx: np.ndarray, rows: np.ndarray, cols: np.ndarray, values: np.ndarray) -> np.ndarray:
    """A (B, n) score block holding ``values`` at (rows, cols), NaN elsewhere (no chunk)."""
    out = np.full(idx.shape, np.nan, dtype=np.float64)
    out[rows, cols] = values
    return out
