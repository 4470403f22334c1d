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

from receval.components import Context, RetrieverConfig, component
from receval.retrievers.lexical import LexicalRetriever, document_frequency


@dataclass
class TfIdfConfig(RetrieverConfig):
    kind: str = "tfidf"


def weighted_unit_rows(counts: sp.csr_matrix, idf: np.ndarray) -> sp.csr_matrix:
    """tf * idf for each row, each row scaled to unit L2 norm (empty rows stay empty)."""
    matrix = counts.tocsr(copy=True)
    matrix.data *= idf[matrix.indices]
    rows = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
    norms = np.sqrt(np.bincount(rows, weights=matrix.data**2, minlength=matrix.shape[0]))
    matrix.data /= norms[rows]
    return matrix


class TfIdf(LexicalRetriever):
    name = "tfidf"

    def chunk_weights(self, counts: sp.csr_matrix) -> sp.csr_matrix:
        n_docs = counts.shape[0]
        self.idf = np.log((1.0 + n_docs) / (1.0 + document_frequency(counts))) + 1.0
        return weighted_unit_rows(counts, self.idf)

    def question_weights(self, counts: sp.csr_matrix) -> sp.csr_matrix:
        return weighted_unit_rows(counts, self.idf)


@component("retriever", "tfidf", TfIdfConfig)
def build_tfidf(node, context: Context) -> TfIdf:
    return context.once(TfIdfConfig, node, lambda: TfIdf(context.tokenizer, vocabularies=context.vocabularies))
