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

from receval.errors import ConfigError
from receval.retrievers.lexical import LexicalRetriever, document_frequency
from receval.text import Tokenizer


def bm25_idf(n_docs: int, df: np.ndarray) -> np.ndarray:
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))


class BM25(LexicalRetriever):
    name = "bm25"

    def __init__(self, tokenizer: Tokenizer, k1: float = 1.2, b: float = 0.75, vocabularies=None):
        if not k1 >= 0:
            raise ConfigError(f"retriever.k1={k1}: use a value >= 0 (1.2 is usual)")
        if not 0 <= b <= 1:
            raise ConfigError(f"retriever.b={b}: use a value from 0 to 1 (0.75 is usual)")
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
