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
    """Token -> column, fixed by the fitted chunks, and the chunks' token ids.

    Built streaming, a batch of texts at a time, so only int32 token ids are held
    (not millions of token strings); saved and loaded as one ``.npz`` for the index
    cache.
    """

    BATCH = 20_000

    def __init__(self, tokens: list[str], doc_term_ids: np.ndarray, lengths: np.ndarray):
        self.ids = {token: i for i, token in enumerate(tokens)}
        self.doc_term_ids, self.lengths = doc_term_ids, lengths

    @classmethod
    def from_texts(cls, texts: list[str], tokenizer: Tokenizer) -> Vocabulary:
        ids: dict[str, int] = {}
        parts, lengths = [], []
        for start in range(0, len(texts), cls.BATCH):
            tokenized = tokenizer.many(texts[start : start + cls.BATCH])
            lengths.append(np.fromiter(map(len, tokenized), np.int64, len(tokenized)))
            parts.append(
                np.fromiter((ids.setdefault(t, len(ids)) for t in chain.from_iterable(tokenized)), np.int32)
            )
        vocabulary = cls([], _concat(parts, np.int32), _concat(lengths, np.int64))
        vocabulary.ids = ids
        return vocabulary

    def save(self, path, **extra: np.ndarray) -> None:
        """``extra``: arrays stored beside (the index cache's checksum)."""
        tokens = np.array(list(self.ids), dtype=str) if self.ids else np.array([], dtype="<U1")
        np.savez(path, tokens=tokens, doc_term_ids=self.doc_term_ids, lengths=self.lengths, **extra)

    @classmethod
    def load(cls, path) -> Vocabulary:
        with np.load(path, allow_pickle=False) as data:
            return cls(data["tokens"].tolist(), data["doc_term_ids"], data["lengths"])

    def __len__(self) -> int:
        return len(self.ids)

    def doc_counts(self) -> sp.csr_matrix:
        """(D, V) term counts of the fitted chunks (rows are already in chunk order)."""
        indptr = np.concatenate([[0], np.cumsum(self.lengths)])
        data = np.ones(self.doc_term_ids.size, dtype=np.float64)
        indices = self.doc_term_ids.copy()  # sum_duplicates sorts and compacts in place
        matrix = sp.csr_matrix((data, indices, indptr), shape=(len(self.lengths), len(self)))
        matrix.sum_duplicates()
        return matrix

    def query_counts(self, tokenized: list[list[str]]) -> sp.csr_matrix:
        """(B, V) counts of known tokens in each question (repeats counted)."""
        get = self.ids.get
        cols, rows = [], []
        for row, tokens in enumerate(tokenized):
            known = [c for c in map(get, tokens) if c is not None]
            cols.extend(known)
            rows.extend([row] * len(known))
        return count_matrix(np.asarray(rows, np.int64), np.asarray(cols, np.int64), (len(tokenized), len(self)))


def _concat(parts: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


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

    def __init__(self, tokenizer: Tokenizer, vocabularies=None):
        self.tokenizer = tokenizer
        self.vocabularies = vocabularies  # shared source of token counts (the index cache)
        self.vocabulary: Vocabulary | None = None
        self.weights_t: sp.csr_matrix | None = None  # (V, D): a question sums its terms' rows

    def fit(self, texts: list[str], tie_rank=None) -> None:
        if self.vocabularies is not None:
            self.vocabulary = self.vocabularies(texts, self.tokenizer)
        else:
            self.vocabulary = Vocabulary.from_texts(texts, self.tokenizer)
        self.weights_t = self.chunk_weights(self.vocabulary.doc_counts()).T.tocsr()

    def score(self, questions: list[str]) -> np.ndarray:
        """(B, D) scores: one sparse product of question weights and chunk weights."""
        counts = self.vocabulary.query_counts(self.tokenizer.many(questions))
        return (self.question_weights(counts) @ self.weights_t).toarray()

    def chunk_weights(self, counts: sp.csr_matrix) -> sp.csr_matrix:
        raise NotImplementedError

    def question_weights(self, counts: sp.csr_matrix) -> sp.csr_matrix:
        raise NotImplementedError
