"""RM3 pseudo-relevance feedback for the lexical first stages (``bm25``, ``tfidf``).

Relevance model 3 (Lavrenko & Croft 2001; Abdul-Jaleel et al., UMass at TREC 2004),
in the form Anserini's ``Rm3Reranker`` computes it. For a question q:

1. the first stage ranks the chunks for q; its best ``fb_docs`` chunks F (the one tie
   rule) are taken as relevant, each weighted by its score s(d);
2. the relevance model ``RM(w) = sum over d in F of s(d) * c(w, d) / |d|`` (c: counts
   of the run's tokenizer, |d| the chunk's tokens) keeps its ``fb_terms`` heaviest
   terms (ties by vocabulary order, :func:`receval.run.ranking.top_candidates`), English
   stopwords left out unless ``skip_stopwords=false``, and is scaled to sum to 1;
3. the question searched is ``original_weight * q / |q| + (1 - original_weight) * RM``
   (q: the question's term counts, scaled to sum to 1), scored by the same stage as
   a weighted question (:meth:`receval.retrievers.lexical.LexicalRetriever.rank_counts`).

Worked example (``tests/test_transforms.py``): chunks "apple banana", "apple cherry
cherry", "banana date", "cherry date", BM25 with b = 0; the question "apple" with
fb_docs 2, fb_terms 2, original_weight 0.5 is searched as apple 7/9, cherry 2/9.

Vectorized: one sparse product (questions x chunks) @ (chunks x terms) builds every
question's relevance model at once; only the ``fb_terms`` cut goes question by question.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from receval.run.components import Context, TransformConfig, component
from receval.core.errors import ConfigError
from receval.run.ranking import top_candidates
from receval.retrievers.lexical import LexicalRetriever
from receval.retrievers.text import Tokenizer
from receval.schema import SHORTLIST, range_
from receval.transforms import TRANSFORM, Spent, Transformed


@dataclass
class Rm3Config(TransformConfig):
    kind: str = "rm3"
    fb_docs: int = field(default=10, metadata=range_(*SHORTLIST))  # chunks taken as relevant per question
    fb_terms: int = field(default=10, metadata=range_(1, 100_000))  # terms of the relevance model kept
    # share of the original question in the expanded one (1: no expansion)
    original_weight: float = field(default=0.5, metadata=range_(0, 1))
    skip_stopwords: bool = True  # feedback terms leave out the stopwords of tokenizer.language

    @staticmethod
    def describe(node) -> str:
        return f"rm3({node.fb_docs},{node.fb_terms},{node.original_weight:g})"


def unit_l1(matrix: sp.csr_matrix) -> sp.csr_matrix:
    """Each row scaled to sum to 1 (empty rows stay empty)."""
    sums = np.asarray(matrix.sum(axis=1)).ravel()
    return sp.diags(np.divide(1.0, sums, out=np.zeros_like(sums), where=sums > 0)) @ matrix


def relevance_model(
    fb_idx: np.ndarray, fb_scores: np.ndarray, doc_counts: sp.csr_matrix, allowed: np.ndarray, fb_terms: int
) -> sp.csr_matrix:
    """(B, V) relevance models from each question's feedback chunks ``fb_idx`` (-1 padded)
    and their scores: ``sum_d s(d) c(w, d) / |d|`` over ``allowed`` terms, cut to the
    ``fb_terms`` heaviest, scaled to sum to 1."""
    n_rows, n_docs = fb_idx.shape[0], doc_counts.shape[0]
    held = fb_idx >= 0
    rows = np.broadcast_to(np.arange(n_rows)[:, None], fb_idx.shape)[held]
    docs = fb_idx[held].astype(np.int64)
    lengths = np.asarray(doc_counts.sum(axis=1)).ravel()
    weights = np.divide(fb_scores[held], lengths[docs], out=np.zeros(docs.size), where=lengths[docs] > 0)
    feedback = sp.csr_matrix((weights, (rows, docs)), shape=(n_rows, n_docs))
    model = (feedback @ doc_counts).tocsr()
    model = (model @ sp.diags(allowed.astype(np.float64))).tocsr()
    model.eliminate_zeros()
    order = np.arange(model.shape[1], dtype=np.int64)  # ties: vocabulary order
    out_rows, out_cols, out_vals = [], [], []
    for row in range(n_rows):  # one cut per question (its touched terms), not per chunk
        span = slice(model.indptr[row], model.indptr[row + 1])
        terms, values = top_candidates(model.indices[span], model.data[span], fb_terms, order)
        out_rows.append(np.full(terms.size, row))
        out_cols.append(terms)
        out_vals.append(values)
    cut = sp.csr_matrix(
        (np.concatenate(out_vals or [np.zeros(0)]), (np.concatenate(out_rows or [np.zeros(0, int)]),
                                                    np.concatenate(out_cols or [np.zeros(0, int)]))),
        shape=model.shape,
    )
    return unit_l1(cut)


def expanded(counts: sp.csr_matrix, model: sp.csr_matrix, original_weight: float) -> sp.csr_matrix:
    """``original_weight * q / |q| + (1 - original_weight) * RM``, per question."""
    return (original_weight * unit_l1(counts.astype(np.float64)) + (1.0 - original_weight) * model).tocsr()


class Rm3:
    """RM3's settings; :meth:`wrap` puts it in front of a lexical first stage."""

    api_calls = 0

    def __init__(self, fb_docs: int, fb_terms: int, original_weight: float, skip_stopwords: bool, tokenizer: Tokenizer):
        self.fb_docs, self.fb_terms, self.original_weight = int(fb_docs), int(fb_terms), float(original_weight)
        self.skip_stopwords, self.tokenizer = bool(skip_stopwords), tokenizer

    def wrap(self, first, fusion: dict) -> "Expanded":
        if not (isinstance(first, LexicalRetriever) and first.counts_terms):
            raise ConfigError(
                f"transform=rm3 needs a lexical first stage (retriever=bm25 or tfidf), not {first.name}: "
                "pseudo-relevance feedback re-weights the terms such a stage scores; use transform=hyde "
                "or multi_query with other retrievers"
            )
        first.keep_counts = True
        return Expanded(first, self)

    def allowed_terms(self, vocabulary) -> np.ndarray:
        """(V,) True for every term that may be a feedback term."""
        allowed = np.ones(len(vocabulary), dtype=bool)
        if self.skip_stopwords:
            for token in self.tokenizer.stopword_terms():  # as the index spells them
                term = vocabulary.ids.get(token)
                if term is not None:
                    allowed[term] = False
        return allowed

    def facts(self) -> dict:
        return {"kind": "rm3", "fb_docs": self.fb_docs, "fb_terms": self.fb_terms,
                "original_weight": self.original_weight}


class Expanded(Transformed):
    """A lexical first stage searched with RM3-expanded questions."""

    def fit(self, texts: list[str], tie_rank: np.ndarray) -> None:
        super().fit(texts, tie_rank)
        self.allowed = self.transform.allowed_terms(self.first.vocabulary)

    def expand(self, questions: list[str]) -> sp.csr_matrix:
        """(B, V) expanded question weights (the feedback search included)."""
        rm3, first = self.transform, self.first
        counts = first.query_counts(questions)
        fb_idx, fb_scores = first.rank_counts(counts, rm3.fb_docs)
        model = relevance_model(fb_idx, fb_scores, first.doc_counts, self.allowed, rm3.fb_terms)
        return expanded(counts, model, rm3.original_weight)

    def _score(self, questions: list[str], spent: Spent) -> np.ndarray:
        weights = spent.own(TRANSFORM, lambda: self.expand(questions))
        return spent.inner(self.first, lambda: self.first.score_counts(weights))

    def _rank(self, questions: list[str], depth: int, spent: Spent) -> tuple[np.ndarray, np.ndarray]:
        weights = spent.own(TRANSFORM, lambda: self.expand(questions))
        return spent.inner(self.first, lambda: self.first.rank_counts(weights, depth))


@component("transform", "rm3", Rm3Config)
def build_rm3(node, context: Context) -> Rm3:
    tokenizer = context.tokenizer or Tokenizer()
    return Rm3(node.fb_docs, node.fb_terms, node.original_weight, node.skip_stopwords, tokenizer)
