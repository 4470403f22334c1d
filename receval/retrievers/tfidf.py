"""TF-IDF with cosine similarity.

Weights: tf(t, d) * idf(t) with raw counts and the smoothed idf of scikit-learn's
``TfidfVectorizer`` (``smooth_idf=True``):

    idf(t) = ln((1 + N) / (1 + n(t))) + 1

Chunk and question vectors are L2-normalised, so their dot product is the cosine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from receval.run.components import Context, RetrieverConfig, component
from receval.retrievers.lexical import LexicalRetriever


@dataclass
class TfIdfConfig(RetrieverConfig):
    kind: str = "tfidf"


def unit_rows(rows: np.ndarray, weights: np.ndarray, n_rows: int) -> np.ndarray:
    """``weights`` (entries of rows ``rows``, each row's in column order, rows
    interleaved or not) scaled in place so each row has unit L2 norm (empty rows stay
    empty); a row's squares are summed in its column order."""
    norms = np.sqrt(np.bincount(rows, weights=weights**2, minlength=n_rows))
    weights /= norms[rows]
    return weights


def weighted_unit_rows(counts: sp.csr_matrix, idf: np.ndarray) -> sp.csr_matrix:
    """tf * idf for each row, each row scaled to unit L2 norm (empty rows stay empty)."""
    matrix = counts.tocsr(copy=True)
    matrix.data *= idf[matrix.indices]
    rows = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
    unit_rows(rows, matrix.data, matrix.shape[0])
    return matrix


class TfIdf(LexicalRetriever):
    name = "tfidf"

    def fit_statistics(self, df: np.ndarray, lengths: np.ndarray) -> None:
        self.idf = np.log((1.0 + lengths.size) / (1.0 + df)) + 1.0

    def chunk_weights(self, chunks: np.ndarray, terms: np.ndarray, counts: np.ndarray) -> np.ndarray:
        first = int(chunks.min()) if chunks.size else 0  # a block holds whole chunks
        rows = chunks - first
        # each chunk's entries come in term order, as in a chunk-major matrix: the same sums
        return unit_rows(rows, counts * self.idf[terms], int(rows.max()) + 1 if rows.size else 0)

    def question_weights(self, counts: sp.csr_matrix) -> sp.csr_matrix:
        return weighted_unit_rows(counts, self.idf)


@component("retriever", "tfidf", TfIdfConfig)
def build_tfidf(node, context: Context) -> TfIdf:
    return context.once(TfIdfConfig, node, lambda: TfIdf(context.tokenizer, vocabularies=context.vocabularies))
