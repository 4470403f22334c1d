"""``judge=oneshot``: a label-free first look, the weakest judge.

A hole is graded 1 when it is lexically close to one of its question's known relevant
units (the pool's ``reference`` lines), else 0. Closeness is BM25 with the reference's
words as the query (idf and length over every text in the pool), divided by the
reference's BM25 score against itself, so 1.0 means "as close as the known unit is to
itself"; ``judge.threshold`` (default 0.25) cuts it. It knows nothing of the question,
only of one passage that answers it: a unit answering in other words is missed, and a
unit copying the known one's topic is labelled relevant. The issue that asked for it
measured such a fill making a sweep's ranking worse; measure it against a reference
(``reference=qrels.txt``) before trusting it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from receval.run.components import Context, JudgeConfig, component
from receval.retrievers.text import Tokenizer
from receval.schema import range_


@dataclass
class OneshotJudgeConfig(JudgeConfig):
    kind: str = "oneshot"
    threshold: float = field(default=0.25, metadata=range_(0, 10))  # normalised BM25 at or above: grade 1
    k1: float = field(default=1.2, metadata=range_(0, 1000))
    b: float = field(default=0.75, metadata=range_(0, 1))


def _counts(texts: list[str], vocabulary: dict[str, int]) -> sparse.csr_matrix:
    tokenize = Tokenizer()
    rows, cols = [], []
    for row, text in enumerate(texts):
        ids = [vocabulary.setdefault(t, len(vocabulary)) for t in tokenize(text or "")]
        rows.extend([row] * len(ids))
        cols.extend(ids)
    data = np.ones(len(rows))
    return sparse.csr_matrix((data, (rows, cols)), shape=(len(texts), max(len(vocabulary), 1)))


class OneshotJudge:
    def __init__(self, threshold: float, k1: float, b: float):
        self.threshold, self.k1, self.b = float(threshold), float(k1), float(b)
        self.name = "oneshot:bm25"
        self.usage: dict[str, float] = {}

    def similarity(self, holes: list[str], references: list[str]) -> np.ndarray:
        """(holes, references) BM25 of each hole for each reference's words, / the reference's self-score."""
        vocabulary: dict[str, int] = {}
        counts = _counts([*holes, *references], vocabulary)
        counts = sparse.csr_matrix(counts, shape=(counts.shape[0], len(vocabulary) or 1))
        n_docs = counts.shape[0]
        df = np.bincount(counts.indices, minlength=counts.shape[1])
        idf = np.log(1 + (n_docs - df + 0.5) / (df + 0.5))
        lengths = np.asarray(counts.sum(axis=1)).ravel()
        norm = self.k1 * (1 - self.b + self.b * lengths / max(lengths.mean(), 1e-9))
        weights = counts.tocoo()
        tf = weights.data
        bm25 = tf * (self.k1 + 1) / (tf + norm[weights.row]) * idf[weights.col]
        weighted = sparse.csr_matrix((bm25, (weights.row, weights.col)), shape=counts.shape)
        queries = counts[len(holes):]
        scores = (weighted[: len(holes)] @ queries.T).toarray()
        own = np.asarray(weighted[len(holes):].multiply(queries).sum(axis=1)).ravel()
        return np.divide(scores, own[None, :], out=np.zeros_like(scores), where=own[None, :] > 0)

    def judge(self, records: list[dict], references: dict[str, list[str]]) -> list[tuple[int | None, dict]]:
        qids = list(references)
        ref_texts = [t for q in qids for t in references[q]]
        owner = np.repeat(np.arange(len(qids)), [len(references[q]) for q in qids])
        sim = self.similarity([r.get("text") or "" for r in records], ref_texts)
        row_of = {q: i for i, q in enumerate(qids)}
        mine = np.asarray([row_of.get(r["question_id"], -1) for r in records])
        sim = np.where(mine[:, None] == owner[None, :], sim, -np.inf) if ref_texts else np.full((len(records), 1), -np.inf)
        best = sim.max(axis=1)
        out = []
        for value in best:
            if not np.isfinite(value):
                out.append((None, {}))  # the question has no known relevant unit
            else:
                out.append((int(value >= self.threshold), {"similarity": round(float(value), 4), "threshold": self.threshold}))
        return out


@component("judge", "oneshot", OneshotJudgeConfig)
def build_oneshot_judge(node, context: Context) -> OneshotJudge:
    return OneshotJudge(node.threshold, node.k1, node.b)
