"""Term counts as sparse matrices, shared by TF-IDF and BM25.

Chunks and questions are tokenised by the one :class:`~receval.text.Tokenizer`; the
vocabulary is the chunks' tokens, in order of first appearance. Question tokens not
in it are dropped (they match no chunk).
"""

from __future__ import annotations

from itertools import chain

import numpy as np
import scipy.sparse as sp

from receval.ranking import top_candidates
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
        ids = _Numbering()
        parts, lengths = [], []
        for start in range(0, len(texts), cls.BATCH):
            tokenized = tokenizer.many(texts[start : start + cls.BATCH])
            lengths.append(np.fromiter(map(len, tokenized), np.int64, len(tokenized)))
            parts.append(np.fromiter(map(ids.__getitem__, chain.from_iterable(tokenized)), np.int32))
        vocabulary = cls([], _concat(parts, np.int32), _concat(lengths, np.int64))
        vocabulary.ids = dict(ids)  # a plain dict: looking up an unknown token must not add it
        return vocabulary

    def save(self, path) -> None:
        tokens = np.array(list(self.ids), dtype=str) if self.ids else np.array([], dtype="<U1")
        np.savez(path, tokens=tokens, doc_term_ids=self.doc_term_ids, lengths=self.lengths)

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


class _Numbering(dict):
    """Token -> id, numbering a token the first time it is looked up (in C for known ones)."""

    def __missing__(self, token: str) -> int:
        self[token] = number = len(self)
        return number


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
    SPARSE = 16  # rank only the touched chunks when they are fewer than 1 in SPARSE

    def __init__(self, tokenizer: Tokenizer, vocabularies=None):
        self.tokenizer = tokenizer
        self.vocabularies = vocabularies  # shared source of token counts (the index cache)
        self.vocabulary: Vocabulary | None = None
        self.weights_t: sp.csr_matrix | None = None  # (V, D): a question sums its terms' rows
        self.tie_rank: np.ndarray | None = None

    def fit(self, texts: list[str], tie_rank=None) -> None:
        self.tie_rank = np.arange(len(texts)) if tie_rank is None else np.asarray(tie_rank)
        if self.vocabularies is not None:
            self.vocabulary = self.vocabularies(texts, self.tokenizer)
        else:
            self.vocabulary = Vocabulary.from_texts(texts, self.tokenizer)
        self.weights_t = self.chunk_weights(self.vocabulary.doc_counts()).T.tocsr()

    def score(self, questions: list[str]) -> np.ndarray:
        """(B, D) scores: one sparse product of question weights and chunk weights."""
        counts = self.vocabulary.query_counts(self.tokenizer.many(questions))
        return (self.question_weights(counts) @ self.weights_t).toarray()

    def rank(self, questions: list[str], depth: int) -> tuple[np.ndarray, np.ndarray]:
        """Each question's top ``depth`` chunks and scores, as ``select_top(score(...))`` gives.

        No (B, D) block: each question adds its terms' weight rows into one reused
        score buffer (as bm25s does), takes the chunks that can make its top (those it
        touched, or when it touched many, those scoring at least a bound found on its
        rarest terms) and keeps the best by the tie rule
        (:func:`~receval.ranking.top_candidates`). Cost follows the postings a question
        touches plus at most one O(D) scan, with O(D) memory.
        """
        weights = self.question_weights(self.vocabulary.query_counts(self.tokenizer.many(questions)))
        table = self.weights_t
        n_docs = table.shape[1]
        scores = np.zeros(n_docs, dtype=np.float64)
        idx = np.full((len(questions), depth), -1, dtype=np.int32)
        top = np.full((len(questions), depth), np.nan, dtype=np.float64)
        for row in range(len(questions)):
            span = slice(weights.indptr[row], weights.indptr[row + 1])
            touched = []
            for term, weight in zip(weights.indices[span].tolist(), weights.data[span].tolist()):
                start, end = table.indptr[term], table.indptr[term + 1]
                postings = table.data[start:end]
                touched.append(table.indices[start:end])
                np.add.at(scores, touched[-1], postings if weight == 1.0 else weight * postings)
            if sum(map(len, touched)) * self.SPARSE < n_docs:  # few chunks touched: rank just those
                items = np.sort(np.concatenate(touched or [np.zeros(0, np.int32)]))
                items = items[np.flatnonzero(np.diff(items, prepend=-1))]  # each chunk once
                values = scores[items]
                scores[items] = 0.0  # the buffer is clean again for the next question
            else:  # most chunks touched: one scan of the buffer for those that can make the top
                items = np.flatnonzero(scores >= self._lowest_top_score(scores, touched, depth))
                values = scores[items]
                scores.fill(0.0)
            above = values > self.floor
            found, found_scores = top_candidates(items[above], values[above], depth, self.tie_rank)
            idx[row, : found.size], top[row, : found.size] = found, found_scores
        return idx, top

    def _lowest_top_score(self, scores: np.ndarray, touched: list[np.ndarray], depth: int) -> float:
        """A lower bound on a question's ``depth``-th best score: the ``depth``-th best
        among the chunks of its rarest term held by at least ``depth`` chunks (a heavy
        term, so the bound is tight and few chunks reach it). Every chunk of the true
        top ``depth``, and every chunk tied with its last, scores at or above it; the
        tie rule then picks among them."""
        sizes = [postings.size for postings in touched]
        enough = [size for size in sizes if size >= depth]
        if not enough:  # no bound: every chunk above the floor is a candidate
            return np.nextafter(self.floor, np.inf)
        chunks = touched[sizes.index(min(enough))]
        return np.partition(scores[chunks], chunks.size - depth)[chunks.size - depth]

    def chunk_weights(self, counts: sp.csr_matrix) -> sp.csr_matrix:
        raise NotImplementedError

    def question_weights(self, counts: sp.csr_matrix) -> sp.csr_matrix:
        raise NotImplementedError
