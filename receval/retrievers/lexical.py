"""Term counts as sparse matrices, shared by TF-IDF and BM25.

Chunks and questions are tokenised by the one :class:`~receval.text.Tokenizer`; the
vocabulary is the chunks' tokens, in order of first appearance. Question tokens not
in it are dropped (they match no chunk).
"""

from __future__ import annotations

from itertools import chain

import numpy as np
import scipy.sparse as sp

from receval.text import Tokenizer


class Vocabulary:
    """Token -> column, fixed by the fitted chunks."""

    def __init__(self, tokenized: list[list[str]]):
        ids: dict[str, int] = {}
        self.doc_term_ids = np.fromiter(
            (ids.setdefault(t, len(ids)) for t in chain.from_iterable(tokenized)), dtype=np.int64
        )
        self.lengths = np.fromiter((len(d) for d in tokenized), dtype=np.int64, count=len(tokenized))
        self.ids = ids

    def __len__(self) -> int:
        return len(self.ids)

    def doc_counts(self) -> sp.csr_matrix:
        """(D, V) term counts of the fitted chunks."""
        rows = np.repeat(np.arange(len(self.lengths)), self.lengths)
        return count_matrix(rows, self.doc_term_ids, (len(self.lengths), len(self)))

    def query_counts(self, tokenized: list[list[str]]) -> sp.csr_matrix:
        """(B, V) counts of known tokens in each question (repeats counted)."""
        get = self.ids.get
        cols, rows = [], []
        for row, tokens in enumerate(tokenized):
            known = [c for c in map(get, tokens) if c is not None]
            cols.extend(known)
            rows.extend([row] * len(known))
        return count_matrix(np.asarray(rows, np.int64), np.asarray(cols, np.int64), (len(tokenized), len(self)))


def count_matrix(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]) -> sp.csr_matrix:
    """CSR matrix with the number of times each (row, col) pair occurs."""
    data = np.ones(rows.size, dtype=np.float64)
    matrix = sp.csr_matrix((data, (rows, cols)), shape=shape)
    matrix.sum_duplicates()
    return matrix


def document_frequency(counts: sp.csr_matrix) -> np.ndarray:
    """Number of chunks holding each term (n in the idf formulas)."""
    return np.bincount(counts.indices, minlength=counts.shape[1]).astype(np.float64)


class LexicalRetriever:
    """Shared fit/score: subclasses turn counts into chunk weights and question weights."""

    floor: float | None = 0.0

    def __init__(self, tokenizer: Tokenizer):
        self.tokenizer = tokenizer
        self.vocabulary: Vocabulary | None = None
        self.weights_t: sp.csr_matrix | None = None  # (V, D)

    def fit(self, texts: list[str], tie_rank=None) -> None:
        self.vocabulary = Vocabulary(self.tokenizer.many(texts))
        self.weights_t = self.chunk_weights(self.vocabulary.doc_counts()).T.tocsr()

    def score(self, questions: list[str]) -> np.ndarray:
        counts = self.vocabulary.query_counts(self.tokenizer.many(questions))
        return (self.question_weights(counts) @ self.weights_t).toarray()

    def chunk_weights(self, counts: sp.csr_matrix) -> sp.csr_matrix:
        raise NotImplementedError

    def question_weights(self, counts: sp.csr_matrix) -> sp.csr_matrix:
        raise NotImplementedError
