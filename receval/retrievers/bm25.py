"""Okapi BM25 (Robertson & Zaragoza 2009, "The Probabilistic Relevance Framework").

    score(q, d) = sum over question tokens t (repeats counted) of
                  idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
    idf(t)      = ln(1 + (N - n(t) + 0.5) / (n(t) + 0.5))

N chunks, n(t) chunks holding t, |d| the chunk's length in tokens, avgdl the mean
length. The per-(chunk, term) part is precomputed once into a sparse matrix (as
bm25s does), so scoring a batch of questions is one sparse product. This idf (the
Lucene form) is always positive, so every chunk sharing a token scores above zero.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dataclasses import dataclass

from receval.components import Context, component, finite
from receval.errors import ConfigError
from receval.retrievers.lexical import LexicalRetriever, document_frequency
from receval.text import Tokenizer


@dataclass
class BM25Config:
    kind: str = "bm25"
    k1: float = 1.2  # term-frequency saturation
    b: float = 0.75  # length normalisation (0: none, 1: full)

    def problems(self) -> list[str]:
        return finite("k1", self.k1, 0, hint=" (1.2 is usual)") + finite("b", self.b, 0, 1, hint=" (0.75 is usual)")

    @staticmethod
    def describe(node) -> str:
        return "bm25"


def bm25_idf(n_docs: int, df: np.ndarray) -> np.ndarray:
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))


class BM25(LexicalRetriever):
    name = "bm25"

    def __init__(self, tokenizer: Tokenizer, k1: float = 1.2, b: float = 0.75, vocabularies=None):
        problems = BM25Config(k1=k1, b=b).problems()
        if problems:
            raise ConfigError([f"retriever.{problem}" for problem in problems])
        super().__init__(tokenizer, vocabularies)
        self.k1, self.b = float(k1), float(b)

    def chunk_weights(self, counts: sp.csr_matrix) -> sp.csr_matrix:
        n_docs = counts.shape[0]
        lengths = np.asarray(counts.sum(axis=1)).ravel()
        avgdl = lengths.mean() if n_docs and lengths.mean() > 0 else 1.0
        idf = bm25_idf(n_docs, document_frequency(counts))
        rows = np.repeat(np.arange(n_docs), np.diff(counts.indptr))
        tf = counts.data
        norm = self.k1 * (1.0 - self.b + self.b * lengths[rows] / avgdl)
        weights = counts.copy()
        weights.data = idf[counts.indices] * tf * (self.k1 + 1.0) / (tf + norm)
        return weights

    def question_weights(self, counts: sp.csr_matrix) -> sp.csr_matrix:
        return counts


@component("retriever", "bm25", BM25Config)
def build_bm25(node, context: Context) -> BM25:
    return context.once(
        ("bm25", node.k1, node.b), lambda: BM25(context.tokenizer, node.k1, node.b, context.vocabularies)
    )
