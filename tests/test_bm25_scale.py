"""The lexical retrievers' sparse search (``rank``) against brute force, on data full of ties."""

from __future__ import annotations

import numpy as np
import pytest

from receval.run.ranking import select_top
from receval.retrievers import search
from receval.retrievers.bm25 import BM25
from receval.retrievers.tfidf import TfIdf
from receval.retrievers.text import Tokenizer


def tied_corpus(seed: int, n_docs: int = 300, vocab: int = 12) -> tuple[list[str], list[str], np.ndarray]:
    """Short documents over a tiny vocabulary, a third of them exact copies (so equal
    scores at every rank, the k-th included); shuffled ids for the tie rule."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(vocab)]
    docs = [" ".join(rng.choice(words, size=rng.integers(1, 5))) for _ in range(n_docs * 2 // 3)]
    docs += [docs[i] for i in rng.integers(0, len(docs), size=n_docs - len(docs))]
    questions = [" ".join(rng.choice(words + ["unknown"], size=rng.integers(0, 4))) for _ in range(80)]
    return docs, questions, rng.permutation(n_docs)


def brute_bm25(docs: list[str], questions: list[str], k1: float = 1.2, b: float = 0.75) -> np.ndarray:
    """(Q, D) BM25 scores straight from the formula, one (question, doc) pair at a time."""
    tokenized = [d.split() for d in docs]
    avgdl = np.mean([len(d) for d in tokenized])
    n = len(docs)
    n_holding = {t: sum(t in d for d in tokenized) for q in questions for t in q.split()}
    scores = np.zeros((len(questions), n))
    for qi, question in enumerate(questions):
        for di, doc in enumerate(tokenized):
            for term in question.split():
                tf, df = doc.count(term), n_holding[term]
                if tf:
                    idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
                    scores[qi, di] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(doc) / avgdl))
    return scores


def brute_top(scores: np.ndarray, k: int, tie_rank: np.ndarray) -> list[list[int]]:
    """Positive-scoring docs by score (rounded off float noise), then id order."""
    return [
        sorted(np.flatnonzero(row > 0), key=lambda d: (-round(row[d], 9), tie_rank[d]))[:k] for row in scores
    ]


# SPARSE 0: rank only the touched chunks; 10**9: select over the whole score buffer; None: one block
@pytest.mark.parametrize("sparse", [0, 10**9, None], ids=["touched", "buffer", "block"])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("depth", [1, 10, 400])
@pytest.mark.slow
def test_bm25_search_is_brute_force_with_the_tie_rule(seed, depth, sparse):
    docs, questions, tie_rank = tied_corpus(seed)
    bm25 = BM25(Tokenizer())
    bm25.SPARSE, bm25.BLOCK_BELOW = sparse, 0 if sparse is not None else 10**9
    bm25.fit(docs, tie_rank)
    hits = search(bm25, questions, depth, tie_rank, batch_size=7)
    brute = brute_bm25(docs, questions)
    expected = brute_top(brute, depth, tie_rank)
    for row, want in enumerate(expected):
        got = hits.chunk_idx[row]
        assert got[: len(want)].tolist() == want
        assert (got[len(want) :] == -1).all()
        np.testing.assert_allclose(hits.scores[row, : len(want)], brute[row, want], rtol=1e-12)
    # the data is worth its name: the k-th score is shared with a doc left out, so the tie rule decides
    cut_ties = sum(
        len(w) == depth and np.isclose(s, s[w[-1]]).sum() > np.isclose(s[w], s[w[-1]]).sum()
        for w, s in zip(expected, brute)
    )
    assert depth == 400 or cut_ties > 0


@pytest.mark.parametrize("sparse", [0, 10**9], ids=["touched", "buffer"])
@pytest.mark.parametrize("make", [lambda: BM25(Tokenizer(), k1=0.9, b=0.3), lambda: TfIdf(Tokenizer())])
def test_rank_gives_what_the_dense_block_gives(make, sparse):
    docs, questions, tie_rank = tied_corpus(3)
    retriever = make()
    retriever.SPARSE, retriever.BLOCK_BELOW = sparse, 0  # per question, small as the corpus is
    retriever.fit(docs, tie_rank)
    out = retriever.rank(questions, 10)
    idx, scores = out.idx, out.scores
    want_idx, want_scores = select_top(retriever.score(questions), 10, tie_rank, floor=retriever.floor)
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_allclose(scores, want_scores, rtol=1e-12)
    assert idx.dtype == np.int32 and scores.dtype == np.float64


def test_rank_with_nothing_to_rank():
    bm25 = BM25(Tokenizer())
    bm25.BLOCK_BELOW = 0
    bm25.fit(["a b", "b c"], np.array([1, 0]))
    out = bm25.rank(["b", "zzz"], 0)
    idx, scores = out.idx, out.scores
    assert idx.shape == scores.shape == (2, 0)
    out = bm25.rank(["b", "zzz", ""], 3)
    idx, scores = out.idx, out.scores
    np.testing.assert_array_equal(idx, [[1, 0, -1], [-1, -1, -1], [-1, -1, -1]])  # tied: id order


@pytest.mark.parametrize("make", [lambda: BM25(Tokenizer()), lambda: TfIdf(Tokenizer())], ids=["bm25", "tfidf"])
def test_pruned_search_on_zipf_words_is_exact(make, monkeypatch):
    """Zipf words, as in real text: rare question words usually settle the top alone
    (the pruned path), common ones only add; results must not change either way."""
    rng = np.random.default_rng(5)
    words = np.array([f"w{i}" for i in range(400)])
    docs = [" ".join(words[(rng.zipf(1.3, size=rng.integers(3, 30)) - 1) % 400]) for _ in range(2000)]
    docs += docs[:300]  # exact copies: ties at the cut
    questions = [" ".join(rng.choice(d.split(), size=3)) for d in rng.choice(docs, size=150)]
    tie_rank = rng.permutation(len(docs))
    retriever = make()
    retriever.SPARSE, retriever.BLOCK_BELOW = 2, 0  # per question; rare terms may cover half the chunks
    retriever.fit(docs, tie_rank)
    pruned, method = [], type(retriever)._pruned
    monkeypatch.setattr(type(retriever), "_pruned", lambda *a: pruned.append(method(*a)) or pruned[-1])
    out = retriever.rank(questions, 10)
    idx, scores = out.idx, out.scores
    want_idx, want_scores = select_top(retriever.score(questions), 10, tie_rank, floor=retriever.floor)
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_array_equal(scores, want_scores)  # the same floating-point sums, bit for bit
    assert sum(p is not None for p in pruned) > 50  # the pruned path did most of the work
