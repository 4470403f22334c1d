"""Term counts as sparse matrices, shared by TF-IDF and BM25.

Chunks and questions are tokenised by the one :class:`~receval.retrievers.text.Tokenizer`; the
vocabulary is the chunks' tokens, in order of first appearance. Question tokens not
in it are dropped (they match no chunk).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from itertools import chain

import numpy as np
import scipy.sparse as sp

from receval.run.ranking import select_top, top_candidates
from receval.retrievers.base import Stage, StageOutput
from receval.retrievers.text import Tokenizer


class Vocabulary:
    """Token -> column, fixed by the fitted chunks, and the chunks' token ids.

    Built streaming, a batch of texts at a time, so only int32 token ids are held
    (not millions of token strings: a batch's token lists are freed before the next,
    and small batches keep the memory they leave behind small); saved and loaded as
    one ``.npz`` for the index cache.
    """

    BATCH = 2_000
    POSTINGS = 1 << 18  # tokens turned into (chunk, term, count) postings at a time

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

    def postings(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The fitted chunks' (chunk, term, count) of each distinct pair, in blocks of
        whole chunks (about :attr:`POSTINGS` tokens each), each block sorted by term then
        chunk (so each chunk's terms also come in term order): int32 chunks and terms,
        float64 counts. One sort per block; only a block's temporaries are held."""
        ends = np.cumsum(self.lengths)
        cut = np.searchsorted(ends, np.arange(self.POSTINGS, int(ends[-1]) if ends.size else 0, self.POSTINGS))
        bounds = np.unique(np.concatenate([[0], cut + 1, [len(self.lengths)]]))
        for first, last in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            begin, end = int(ends[first - 1]) if first else 0, int(ends[last - 1]) if last else 0
            width = last - first
            keys = self.doc_term_ids[begin:end] * np.int64(width)
            keys += np.repeat(np.arange(width, dtype=np.int64), self.lengths[first:last])
            keys.sort()
            starts = np.flatnonzero(np.diff(keys, prepend=-1))
            counts = np.diff(starts, append=keys.size).astype(np.float64)
            terms = keys[starts] // width
            chunks = keys[starts] - terms * width + first
            yield chunks.astype(np.int32), terms.astype(np.int32), counts

    def query_counts(self, tokenized: list[list[str]]) -> sp.csr_matrix:
        """(B, V) counts of known tokens in each question (repeats counted)."""
        get = self.ids.get
        cols, rows = [], []
        for row, tokens in enumerate(tokenized):
            known = [c for c in map(get, tokens) if c is not None]
            cols.extend(known)
            rows.extend([row] * len(known))
        return count_matrix(np.asarray(rows, np.int64), np.asarray(cols, np.int64), (len(tokenized), len(self)))


def _distinct(arrays: list[np.ndarray]) -> np.ndarray:
    """The sorted distinct values of int arrays (sort-based: no hashing)."""
    items = np.sort(np.concatenate(arrays or [np.zeros(0, np.int32)]))
    return items[np.flatnonzero(np.diff(items, prepend=-1))]


def _sum_looked_up(items: np.ndarray, lists: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Scores of the chunks ``items``: each term's addition (found by binary search in its
    sorted chunk list; 0 where absent) summed in the order of ``lists``."""
    total = np.zeros(items.size, dtype=np.float64)
    for chunks, adds in lists:
        where = np.minimum(np.searchsorted(chunks, items), chunks.size - 1)
        total += np.where(chunks[where] == items, adds[where], 0.0) if chunks.size else 0.0
    return total


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


class LexicalRetriever(Stage):
    """Shared fit/score: subclasses turn counts into chunk weights and question weights."""

    floor: float | None = 0.0
    counts_terms = True  # its vocabulary counts the run's tokens (pseudo-relevance feedback reads them)
    SPARSE = 16  # rank only the touched chunks when they are fewer than 1 in SPARSE
    BLOCK_BELOW = 20_000  # fewer chunks: one score block per batch is faster than per question

    def __init__(self, tokenizer: Tokenizer, vocabularies=None):
        self.tokenizer = tokenizer
        self.vocabularies = vocabularies  # shared source of token counts (the index cache)
        self.vocabulary: Vocabulary | None = None
        self.weights_t: sp.csr_matrix | None = None  # (V, D): a question sums its terms' rows
        self.tie_rank: np.ndarray | None = None
        self.term_max: np.ndarray | None = None  # (V,) the most each term adds to any score
        self.keep_counts = False  # also hold each chunk's term counts (RM3 needs them)
        self.doc_counts: sp.csr_matrix | None = None  # (D, V) term counts, when keep_counts

    def fit(self, texts: list[str], tie_rank=None) -> None:
        self.tie_rank = np.arange(len(texts)) if tie_rank is None else np.asarray(tie_rank)
        if self.vocabularies is not None:
            self.vocabulary = self.vocabularies(texts, self.tokenizer)
        else:
            self.vocabulary = Vocabulary.from_texts(texts, self.tokenizer)
        self.weights_t = term_major(self.vocabulary, self)
        if self.keep_counts:  # asked for by pseudo-relevance feedback, before the token ids go
            self.doc_counts = chunk_counts(self.vocabulary)
        if self.vocabularies is None:  # a private vocabulary: its token ids now live in the weights
            self.vocabulary.doc_term_ids = None
        self.index_weights(self.weights_t)

    def index_weights(self, table: sp.csr_matrix) -> None:
        """Hold ``table``, the (V, D) chunk weights (each term's chunks in id order), and
        each term's heaviest weight: what the term can add to any score."""
        self.weights_t, self.term_max = table, np.zeros(table.shape[0])
        held = np.flatnonzero(np.diff(table.indptr))
        if held.size:
            self.term_max[held] = np.maximum.reduceat(table.data, table.indptr[held])

    def release(self) -> None:
        """Drop the index (weights, vocabulary) once the run's questions are answered:
        the rest of the run (measures, the results file) does not need it."""
        self.weights_t = self.term_max = self.vocabulary = self.doc_counts = None

    def query_counts(self, questions: list[str]) -> sp.csr_matrix:
        """(B, V) counts of the fitted vocabulary's tokens in each question."""
        return self.vocabulary.query_counts(self.tokenizer.many(questions))

    def score(self, questions: list[str]) -> np.ndarray:
        """(B, D) scores: one sparse product of question weights and chunk weights."""
        return self.score_counts(self.query_counts(questions))

    def score_counts(self, counts: sp.csr_matrix) -> np.ndarray:
        """:meth:`score` of questions given as (B, V) term counts, or positive term
        weights (an expanded query, :mod:`receval.transforms.rm3`)."""
        return (self.question_weights(counts) @ self.weights_t).toarray()

    def rank(self, questions: list[str], depth: int) -> StageOutput:
        """Each question's top ``depth`` chunks (:meth:`rank_counts`), timed as the stage."""
        began = time.perf_counter()
        idx, top = self.rank_counts(self.query_counts(questions), depth)
        return StageOutput(idx, top, {self.name: time.perf_counter() - began})

    def rank_counts(self, counts: sp.csr_matrix, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """Each question's top ``depth`` chunks and scores, as ``select_top(score_counts(...))`` gives.

        No (B, D) block (except below ``BLOCK_BELOW`` chunks, where one is cheaper): each
        question adds its terms' weight rows into one reused score buffer (as bm25s
        does), or only its rare terms' when they settle the top (``_pruned``); takes the
        chunks that can make its top and keeps the best by the tie rule
        (:func:`~receval.run.ranking.top_candidates`). Cost follows the postings a question
        touches plus at most one O(D) scan, with O(D) memory. Needs positive weights
        (BM25's Lucene idf and TF-IDF's are), so partial sums only grow.
        """
        table = self.weights_t
        n_docs, n_questions = table.shape[1], counts.shape[0]
        if n_docs < self.BLOCK_BELOW:  # a small block: Python per question would cost more
            return select_top(self.score_counts(counts), depth, self.tie_rank, floor=self.floor)
        weights = self.question_weights(counts)
        scores = np.zeros(n_docs, dtype=np.float64)
        idx = np.full((n_questions, depth), -1, dtype=np.int32)
        top = np.full((n_questions, depth), np.nan, dtype=np.float64)
        for row in range(n_questions if depth and n_docs else 0):
            span = slice(weights.indptr[row], weights.indptr[row + 1])
            terms = weights.indices[span].tolist()
            factors = weights.data[span].tolist()
            found = self._pruned(scores, terms, factors, depth)
            if found is None:
                found = self._exhaustive(scores, terms, factors, depth)
            items, values = found
            above = values > self.floor
            items, values = top_candidates(items[above], values[above], depth, self.tie_rank)
            idx[row, : items.size], top[row, : items.size] = items, values
        return idx, top

    def _postings(self, term: int, factor: float) -> tuple[np.ndarray, np.ndarray]:
        """The chunks holding ``term`` and what it adds to their scores (times ``factor``)."""
        table = self.weights_t
        start, end = table.indptr[term], table.indptr[term + 1]
        data = table.data[start:end]
        return table.indices[start:end], data if factor == 1.0 else factor * data

    def _exhaustive(self, scores, terms, factors, depth):
        """Every term's postings summed into the buffer; the chunks that can make the top."""
        touched = []
        for term, factor in zip(terms, factors):  # in term order, as the sparse product sums
            chunks, adds = self._postings(term, factor)
            np.add.at(scores, chunks, adds)
            touched.append(chunks)
        if sum(map(len, touched)) * self.SPARSE < scores.size:  # few chunks touched: just those
            items = _distinct(touched)
            values = scores[items]
            scores[items] = 0.0  # the buffer is clean again for the next question
        else:  # most chunks touched: one scan of the buffer for those that can make the top
            items = np.flatnonzero(scores >= self._lowest_top_score(scores, touched, depth))
            values = scores[items]
            scores.fill(0.0)
        return items, values

    def _pruned(self, scores, terms, factors, depth):
        """The top candidates from the question's rare terms alone, when its common terms
        cannot lift any other chunk into the top (MaxScore, Turtle & Flood 1995); None
        when they could. Rare terms, rarest first, go into the buffer until the
        ``depth``-th best partial score (a lower bound on the final ``depth``-th) beats
        all that the remaining terms can add; then only chunks holding a rare term can
        make the top, and their exact scores are summed term by term in term order
        (the same floating-point sums as the buffer), common terms looked up by search."""
        lists = [self._postings(term, factor) for term, factor in zip(terms, factors)]
        order = sorted(range(len(lists)), key=lambda i: lists[i][0].size)
        can_add = [self.term_max[term] * factor for term, factor in zip(terms, factors)]
        rest = np.cumsum([can_add[i] for i in order][::-1])[::-1].tolist() + [0.0]
        budget, rare = scores.size // max(self.SPARSE, 1), []
        for j, i in enumerate(order[:-1]):
            budget -= lists[i][0].size
            if budget < 0:
                break
            np.add.at(scores, *lists[i])
            rare.append(lists[i][0])
            items = _distinct(rare)
            if items.size < depth:
                continue
            partial = scores[items]
            bound = np.partition(partial, items.size - depth)[items.size - depth] * (1 - 1e-9)
            if rest[j + 1] * (1 + 1e-9) < bound:  # a chunk holding no rare term scores below
                scores[items] = 0.0
                items = items[partial + rest[j + 1] * (1 + 1e-9) >= bound]
                return items, _sum_looked_up(items, lists)
        for chunks in rare:
            scores[chunks] = 0.0
        return None

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

    def fit_statistics(self, df: np.ndarray, lengths: np.ndarray) -> None:
        """What the weights need of the whole collection: each term's chunk count ``df``
        (float64) and each chunk's length in tokens."""
        raise NotImplementedError

    def chunk_weights(self, chunks: np.ndarray, terms: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """The weight of each (chunk, term, count) posting of a block of whole chunks,
        sorted by term then chunk (:meth:`Vocabulary.postings`)."""
        raise NotImplementedError

    def question_weights(self, counts: sp.csr_matrix) -> sp.csr_matrix:
        raise NotImplementedError


def chunk_counts(vocabulary: Vocabulary) -> sp.csr_matrix:
    """(D, V) term counts of the fitted chunks, built from their postings block by block."""
    n_docs, n_terms = len(vocabulary.lengths), len(vocabulary)
    blocks = list(vocabulary.postings())  # each (chunk, term) pair once
    if not blocks:
        return sp.csr_matrix((n_docs, n_terms))
    chunks, terms, counts = (np.concatenate(parts) for parts in zip(*blocks))
    return sp.csr_matrix((counts, (chunks, terms)), shape=(n_docs, n_terms))


def term_major(vocabulary: Vocabulary, retriever: LexicalRetriever) -> sp.csr_matrix:
    """(V, D) chunk weights, a term's chunks in id order: what a question sums.

    Built straight from the token ids, a block of chunks at a time (a counting sort:
    one pass counts each term's chunks, the next writes each block's weights at their
    term's place), so no (D, V) count matrix, transposed copy or per-token array
    beside the result is ever held: the peak is the weights plus one block."""
    n_terms, n_docs = len(vocabulary), len(vocabulary.lengths)
    df = np.zeros(n_terms, dtype=np.int64)
    for _, terms, _ in vocabulary.postings():
        df += np.bincount(terms, minlength=n_terms)
    retriever.fit_statistics(df.astype(np.float64), vocabulary.lengths)
    indptr = np.concatenate([[0], np.cumsum(df)])
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    data = np.empty(int(indptr[-1]), dtype=np.float64)
    filled = indptr[:-1].copy()  # where each term's next chunk goes
    for chunks, terms, counts in vocabulary.postings():  # by term, then chunk
        at = filled[terms] + (np.arange(terms.size) - np.searchsorted(terms, terms, side="left"))
        indices[at], data[at] = chunks, retriever.chunk_weights(chunks, terms, counts)
        filled += np.bincount(terms, minlength=n_terms)
    return sp.csr_matrix((data, indices, indptr), shape=(n_terms, n_docs))
