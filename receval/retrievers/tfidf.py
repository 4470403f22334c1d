"""TF-IDF with cosine similarity.

Weights: tf(t, d) * idf(t) with raw counts and the smoothed idf of scikit-learn's
``TfidfVectorizer`` (``smooth_idf=True``):

    idf(t) = ln((1 + N) / (1 + n(t))) + 1

Chunk and question vectors are L2-normalised, so their dot product is the cosine.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from receval.retrievers.lexical import LexicalRetriever, document_frequency


def l2_normalise(matrix: sp.csr_matrix) -> sp.csr_matrix:
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
    scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    return sp.diags(scale) @ matrix


class TfIdf(LexicalRetriever):
    name = "tfidf"

    def chunk_weights(self, counts: sp.csr_matrix) -> sp.csr_matrix:
        n_docs = counts.shape[0]
        self.idf = np.log((1.0 + n_docs) / (1.0 + document_frequency(counts))) + 1.0
        return l2_normalise(counts @ sp.diags(self.idf))

    def question_weights(self, counts: sp.csr_matrix) -> sp.csr_matrix:
        return l2_normalise(counts @ sp.diags(self.idf))
