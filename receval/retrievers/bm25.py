"""Okapi BM25 (Robertson & Zaragoza 2009, "The Probabilistic Relevance Framework").

    score(q, d) = sum over question tokens t (repeats counted) of
                  idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
    idf(t)      = ln(1 + (N - n(t) + 0.5) / (n(t) + 0.5))

N chunks, n(t) chunks holding t, |d| the chunk's length in tokens, avgdl the mean
length. The per-(chunk, term) part is precomputed once into a sparse matrix (as
bm25s does); a search sums each question's term rows of it into one reused buffer
(:meth:`LexicalRetriever.rank`). This idf (the Lucene form) is always positive, so
every chunk sharing a token scores above zero.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dataclasses import dataclass, field

from receval.run.components import Context, RetrieverConfig, component
from receval.core.errors import ConfigError
from receval.retrievers.lexical import LexicalRetriever
from receval.schema import range_, range_problems
from receval.retrievers.text import Tokenizer


@dataclass
class BM25Config(RetrieverConfig):
    kind: str = "bm25"
    # term-frequency saturation; past a few dozen BM25 already scores raw term frequency,
    # so 1000 leaves room for any search while (k1 + 1) * tf cannot overflow
    k1: float = field(default=1.2, metadata=range_(0, 1000, hint="1.2 is usual"))
    # length normalisation (0: none, 1: full)
    b: float = field(default=0.75, metadata=range_(0, 1, hint="0.75 is usual"))

    @staticmethod
    def describe(node) -> str:
        return "bm25"


def bm25_idf(n_docs: int, df: np.ndarray) -> np.ndarray:
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))


class BM25(LexicalRetriever):
    name = "bm25"

    def __init__(self, tokenizer: Tokenizer, k1: float = 1.2, b: float = 0.75, vocabularies=None, checked=False):
        # checked: the values come from a validated run spec (receval.run.spec), not checked again
        problems = [] if checked else range_problems(BM25Config, {"k1": k1, "b": b}, "retriever")
        if problems:
            raise ConfigError(problems)
        super().__init__(tokenizer, vocabularies)
        self.k1, self.b = float(k1), float(b)

    def fit_statistics(self, df: np.ndarray, lengths: np.ndarray) -> None:
        n_docs = lengths.size
        avgdl = lengths.mean() if n_docs and lengths.mean() > 0 else 1.0
        self.idf = bm25_idf(n_docs, df)
        self.chunk_norm = self.k1 * (1.0 - self.b + self.b * lengths / avgdl)  # per chunk

    def chunk_weights(self, chunks: np.ndarray, terms: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """The term part of each (chunk, term) posting, written in place: one
        posting-sized temporary besides the result."""
        norm = self.chunk_norm[chunks]
        norm += counts  # tf + k1 * (1 - b + b * |d| / avgdl)
        weights = self.idf[terms]
        weights *= counts
        weights *= self.k1 + 1.0
        weights /= norm
        return weights

    def question_weights(self, counts: sp.csr_matrix) -> sp.csr_matrix:
        return counts


@component("retriever", "bm25", BM25Config)
def build_bm25(node, context: Context) -> BM25:
    return context.once(BM25Config, node, lambda: BM25(context.tokenizer, node.k1, node.b, context.vocabularies, context.checked))
