"""Tests for the lexical retrievers (BM25, TF-IDF) and the shared search loop:
worked numbers, agreement with direct implementations of the documented formulas,
parameter effects, and argument checking."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from receval.core.errors import ConfigError
from receval.run.ranking import tie_ranks
from receval.retrievers import search
from receval.retrievers.bm25 import BM25, bm25_idf
from receval.retrievers.tfidf import TfIdf
from receval.retrievers.text import Tokenizer

WORKED = [
    "fixed deposit accounts pay monthly interest",  # A: 6 words, both query words
    "fixed rates never change here",  # B: 5 words, "fixed"
    "deposit boxes open each weekday",  # C: 5 words, "deposit"
]


def random_corpus(seed: int, n_docs: int = 15, vocab: int = 12):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(vocab)]
    docs = [" ".join(rng.choice(words, size=int(rng.integers(1, 13)))) for _ in range(n_docs)]
    questions = [
        " ".join(rng.choice(words + ["unknown", "zzz"], size=int(rng.integers(1, 7))))
        for _ in range(10)
    ]
    questions.append(f"{words[0]} {words[0]} {words[0]} {words[1]}")  # repeats counted
    return docs, questions


# --------------------------------------------------------------------------- BM25


def test_bm25_worked_example():
    tokenizer = Tokenizer()
    assert [len(tokenizer(t)) for t in WORKED] == [len(t.split()) for t in WORKED] == [6, 5, 5]
    bm25 = BM25(tokenizer, k1=1.2, b=0.75)
    bm25.fit(WORKED)
    scores = bm25.score(["fixed deposit"])
    np.testing.assert_allclose(scores, [[0.894, 0.482, 0.482]], atol=5e-4)
    # by hand: idf = ln(1 + 1.5/2.5) = ln 1.6, avgdl = 16/3
    idf = math.log(1.6)
    a = 2 * idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 6 / (16 / 3)))
    b = idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 5 / (16 / 3)))
    np.testing.assert_allclose(scores, [[a, b, b]], rtol=1e-12)


def bm25_direct(docs, questions, k1, b, tokenizer=Tokenizer()):
    """The module docstring's formula, term by term in plain Python."""
    tokenized = [tokenizer(d) for d in docs]
    n = len(tokenized)
    avgdl = sum(map(len, tokenized)) / n
    df = Counter(t for d in tokenized for t in set(d))
    out = np.zeros((len(questions), n))
    for qi, q in enumerate(questions):
        for di, d in enumerate(tokenized):
            tf = Counter(d)
            total = 0.0
            for t in tokenizer(q):  # repeats counted
                if tf[t] == 0:
                    continue
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                total += idf * tf[t] * (k1 + 1) / (tf[t] + k1 * (1 - b + b * len(d) / avgdl))
            out[qi, di] = total
    return out


@pytest.mark.parametrize("k1, b", [(1.2, 0.75), (0.5, 0.3), (2.0, 1.0), (1.5, 0.0), (0.0, 0.5)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bm25_agrees_with_direct_formula(k1, b, seed):
    docs, questions = random_corpus(seed)
    bm25 = BM25(Tokenizer(), k1=k1, b=b)
    bm25.fit(docs)
    expected = bm25_direct(docs, questions, k1, b)
    assert (expected > 0).any()
    np.testing.assert_allclose(bm25.score(questions), expected, rtol=0, atol=1e-9)


def test_bm25_repeated_question_token_counts_twice():
    bm25 = BM25(Tokenizer())
    bm25.fit(WORKED)
    once, twice = bm25.score(["fixed", "fixed fixed"])
    np.testing.assert_allclose(twice, 2 * once, rtol=1e-12)


def test_bm25_b_zero_removes_length_effect():
    docs = ["alpha beta", "alpha beta gamma delta epsilon zeta eta theta", "omega"]
    flat = BM25(Tokenizer(), k1=1.2, b=0.0)
    flat.fit(docs)
    s = flat.score(["alpha"])[0]
    assert s[0] == pytest.approx(s[1], rel=1e-12) and s[0] > 0 and s[2] == 0
    normed = BM25(Tokenizer(), k1=1.2, b=0.75)
    normed.fit(docs)
    s = normed.score(["alpha"])[0]
    assert s[0] > s[1]  # with b > 0 the shorter chunk wins


def test_bm25_k1_zero_is_idf_only():
    docs = ["cat", "cat cat cat", "cat dog dog dog dog", "bird"]
    bm25 = BM25(Tokenizer(), k1=0.0, b=0.75)
    bm25.fit(docs)
    idf = math.log(1 + (4 - 3 + 0.5) / (3 + 0.5))
    np.testing.assert_allclose(bm25.score(["cat"]), [[idf, idf, idf, 0.0]], rtol=1e-12)
    np.testing.assert_allclose(bm25_idf(4, np.array([3.0])), [idf])


def test_bm25_idf_always_positive():
    df = np.arange(0, 101, dtype=np.float64)
    assert (bm25_idf(100, df) > 0).all()
    assert (np.diff(bm25_idf(100, df)) < 0).all()


@pytest.mark.parametrize(
    "k1, b, message",
    [
        (-0.1, 0.75, r"retriever\.k1=-0\.1: out of range; use a number in \[0, 1000\]"),
        (float("nan"), 0.75, r"retriever\.k1=nan"),
        (1.2, 1.5, r"retriever\.b=1\.5: out of range; use a number in \[0, 1\]"),
        (1.2, -0.1, r"retriever\.b=-0\.1"),
        (1.2, float("nan"), r"retriever\.b=nan"),
    ],
)
def test_bm25_rejects_bad_parameters(k1, b, message):
    with pytest.raises(ConfigError, match=message):
        BM25(Tokenizer(), k1=k1, b=b)


# --------------------------------------------------------------------------- TF-IDF


def tfidf_direct(docs, questions, tokenizer=Tokenizer()):
    tokenized = [tokenizer(d) for d in docs]
    vocab = sorted({t for d in tokenized for t in d})
    col = {t: i for i, t in enumerate(vocab)}
    n = len(docs)

    def counts(tokens):
        v = np.zeros(len(vocab))
        for t in tokens:
            if t in col:
                v[col[t]] += 1
        return v

    tf = np.stack([counts(d) for d in tokenized])
    df = (tf > 0).sum(axis=0)
    idf = np.log((1 + n) / (1 + df)) + 1

    def unit(v):
        norm = np.linalg.norm(v)
        return v / norm if norm > 0 else v

    d = np.stack([unit(row * idf) for row in tf])
    q = np.stack([unit(counts(tokenizer(x)) * idf) for x in questions])
    return q @ d.T


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tfidf_agrees_with_direct_computation(seed):
    docs, questions = random_corpus(seed)
    tfidf = TfIdf(Tokenizer())
    tfidf.fit(docs)
    scores = tfidf.score(questions)
    np.testing.assert_allclose(scores, tfidf_direct(docs, questions), rtol=0, atol=1e-12)
    assert (scores >= 0).all() and (scores <= 1 + 1e-12).all()


def test_tfidf_small_worked_corpus():
    docs = ["the cat sat", "the dog sat sat", "a bird"]
    tfidf = TfIdf(Tokenizer())
    tfidf.fit(docs)
    # idf: the, sat -> ln(4/3) + 1; cat, dog, a, bird -> ln 2 + 1
    common, rare = math.log(4 / 3) + 1, math.log(2) + 1
    np.testing.assert_allclose(tfidf.idf, [common, rare, common, rare, rare, rare])
    score = tfidf.score(["cat"])[0]
    # cosine of "cat" with doc 0 = rare / |(common, rare, common)|
    assert score[0] == pytest.approx(rare / math.sqrt(2 * common**2 + rare**2), rel=1e-12)
    assert score[1] == 0 and score[2] == 0


def test_tfidf_question_identical_to_a_chunk_scores_one():
    docs, _ = random_corpus(3)
    docs = list(dict.fromkeys(docs))
    tfidf = TfIdf(Tokenizer())
    tfidf.fit(docs)
    scores = tfidf.score(docs)
    np.testing.assert_allclose(np.diag(scores), 1.0, rtol=0, atol=1e-12)
    assert (scores <= 1 + 1e-12).all()


@pytest.mark.parametrize("make", [lambda: TfIdf(Tokenizer()), lambda: BM25(Tokenizer())], ids=["tfidf", "bm25"])
def test_unknown_words_score_zero_and_retrieve_nothing(make):
    retriever = make()
    docs = WORKED
    retriever.fit(docs)
    scores = retriever.score(["zebra quokka", "", "fixed"])
    np.testing.assert_array_equal(scores[:2], np.zeros((2, 3)))
    assert (scores[2, [0, 1]] > 0).all()
    hits = search(retriever, ["zebra quokka", "", "fixed"], depth=4, tie_rank=np.arange(3))
    np.testing.assert_array_equal(hits.chunk_idx[:2], np.full((2, 4), -1))
    assert np.isnan(hits.scores[:2]).all()
    # "fixed" is in A (6 words) and B (5 words): B, the shorter, first for BM25; C never
    assert set(hits.chunk_idx[2, :2].tolist()) == {0, 1}
    np.testing.assert_array_equal(hits.chunk_idx[2, 2:], [-1, -1])
    assert hits.latency_ms.shape == (3,) and (hits.latency_ms >= 0).all()


def test_search_applies_tie_rule_and_batching_does_not_matter():
    docs = ["apple pie", "apple tart", "apple cake", "pear", "apple pie"]
    bm25 = BM25(Tokenizer())
    ids = [("s3", 0), ("s1", 1), ("s1", 0), ("s0", 0), ("s2", 0)]
    tie_rank = tie_ranks(ids)
    bm25.fit(docs, tie_rank)
    questions = ["apple", "pie", "pear apple", "nothing"] * 5
    one = search(bm25, questions, depth=5, tie_rank=tie_rank, batch_size=1)
    many = search(bm25, questions, depth=5, tie_rank=tie_rank, batch_size=256)
    np.testing.assert_array_equal(one.chunk_idx, many.chunk_idx)
    np.testing.assert_array_equal(one.scores, many.scores)
    # "pie": docs 0 and 4 are identical, so tied; id ("s2",0) < ("s3",0) puts 4 first
    np.testing.assert_array_equal(one.chunk_idx[1], [4, 0, -1, -1, -1])
    # "apple": 0, 1, 2, 4 all tied (same length, same tf): id order s0, s1@0, s1@1, s2, s3
    np.testing.assert_array_equal(one.chunk_idx[0], [2, 1, 4, 0, -1])
