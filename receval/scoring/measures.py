"""Per-question ranking measures: the formulas, one vectorised function per family over
all questions at once (scikit-learn style). Each is declared, with its name, label,
direction and trec_eval counterpart, in :mod:`receval.scoring.declared` (the one registry:
``Measure('ndcg', 10)`` computes through it).

Every measure reads a :class:`Judged` ranking: for each question, the gain (grade) of
the section at each retrieved position, best first (0 = not relevant or nothing
retrieved there), plus the question's labels. A section is relevant when its grade
is >= 1; ungraded labels have grade 1. Each family's formula, with rel_i = 1 if gain_i
>= 1, is the docstring of its function (the measures reference page,
``docs/pages/reference/measures.md``, is generated from them). Evidence items
(:mod:`receval.measures.spans`) are the units instead of sections for questions labelled
with them: a position's gain is the number of items found there, recall counts items,
and AP weighs each position by the items first found there, so an item reached twice
counts once.

At a token budget B (``hit@300tok``, ``recall@1000tok``; the families declared with
``at_budget``): each measure at a cutoff of its own per question, k_B = the units whose
first chunk the budget holds (:mod:`receval.scoring.budget`): ``rr@Btok`` is rr when the
first relevant rank is <= k_B, else 0; ``precision@Btok`` divides by k_B (0 when the
budget holds no unit, as when its first chunk alone passes B); ``ndcg@Btok`` cuts the
ideal ranking at k_B as ``ndcg@k`` cuts it at k (:meth:`~receval.scoring.declared.Measure.at`).

trec_eval has no graded AP, R-precision or bpref (only its relevance threshold ``-l``,
here fixed at grade 1); the graded measure is ``ndcg@k``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Judged:
    """A ranking judged against labels, for Q questions and depth K.

    ``gains`` (Q, K) float64: grade at each retrieved position; ``ideal`` (Q, L)
    float64: each question's label grades sorted descending, zero-padded;
    ``n_relevant`` (Q,) int: number of labels with grade >= 1; ``units`` (Q, K), when
    given: relevant units first reached at each position (evidence items: several
    can be found at one rank); by default one per relevant position.
    ``nonrelevant`` (Q, K) bool and ``n_nonrelevant`` (Q,) int, when given: retrieved
    positions judged not relevant, and each question's count of such judgements
    (read by ``bpref`` only); by default none.
    """

    gains: np.ndarray
    ideal: np.ndarray
    n_relevant: np.ndarray
    units: np.ndarray | None = None
    nonrelevant: np.ndarray | None = None
    n_nonrelevant: np.ndarray | None = None

    @property
    def relevant(self) -> np.ndarray:
        return self.gains >= 1

    @property
    def found(self) -> np.ndarray:
        return self.relevant if self.units is None else self.units


def _discounts(n: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))


def _cut(values: np.ndarray, k) -> np.ndarray:
    """``values`` (Q, W) at the positions before the cutoff, the columns past it dropped:
    ``k`` an int (every question's first k), None (all), or one cutoff per question (Q,)
    (a token budget's, :mod:`receval.scoring.budget`), positions at or past a question's own
    cutoff then 0 (False)."""
    if k is None or np.ndim(k) == 0:
        return values[:, :k]
    k = np.asarray(k, dtype=np.int64)
    width = min(values.shape[1], int(k.max(initial=0)))
    return values[:, :width] * (np.arange(width)[None, :] < k[:, None])


def _per_question(k, n_rows: int) -> np.ndarray:
    """The cutoff as a float (Q,) array (an int repeated)."""
    return np.broadcast_to(np.asarray(k, dtype=np.float64), (n_rows,))


def _first_relevant_rank(judged: Judged) -> np.ndarray:
    """1-based rank of the first relevant section; 0 where none was retrieved."""
    rel = judged.relevant
    found = rel.any(axis=1)
    return np.where(found, rel.argmax(axis=1) + 1, 0)


def reciprocal_rank(judged: Judged, k=None) -> np.ndarray:
    """1 / (rank of the first relevant section), 0 when none is retrieved (averaged over
    questions it is MRR@depth; trec_eval ``recip_rank``). At a budget, 0 when that rank is
    past k_B."""
    rank = _first_relevant_rank(judged)
    within = rank > 0 if k is None else (rank > 0) & (rank <= _per_question(k, rank.size))
    return np.where(within, 1.0 / np.maximum(rank, 1), 0.0)


def hit(judged: Judged, k) -> np.ndarray:
    """1 if any of the first k is relevant, else 0 (trec_eval ``success_k``)."""
    return _cut(judged.relevant, k).any(axis=1).astype(np.float64)


def recall(judged: Judged, k) -> np.ndarray:
    """sum_{i<=k} rel_i / (number of relevant sections) (trec_eval ``recall_k``)."""
    found = _cut(judged.found, k).sum(axis=1)
    return found / np.maximum(judged.n_relevant, 1)


def precision(judged: Judged, k) -> np.ndarray:
    """sum_{i<=k} rel_i / k, k counted even when fewer were retrieved (trec_eval ``P_k``); at
    a budget, / k_B (0 when the budget holds no unit)."""
    relevant = _cut(judged.relevant, k).sum(axis=1).astype(np.float64)
    k = _per_question(k, relevant.size)
    return np.divide(relevant, k, out=np.zeros_like(relevant), where=k > 0)


def judged_share(judged: Judged, k: int) -> np.ndarray:
    """The share of the first k positions holding a labelled unit (any grade, 0
    included), k counted even when fewer were retrieved: how much of what a run shows the
    labels can score at all (ir_measures ``Judged@k``; trec_eval ``P_k`` over qrels where
    every judgement counts as relevant, its ``-J`` judged-only count at k / k). A run whose
    judged@k is low is scored mostly on holes, see ``receval pool``."""
    labelled = judged.relevant if judged.nonrelevant is None else judged.relevant | judged.nonrelevant
    return labelled[:, :k].sum(axis=1) / k


def ndcg(judged: Judged, k) -> np.ndarray:
    """DCG@k / IDCG@k, DCG@k = sum_{i<=k} gain_i / log2(i + 1); IDCG@k is the DCG of all
    labels sorted by grade, cut at k (trec_eval ``ndcg_cut_k``, linear gain). At a budget,
    the ideal is cut at k_B."""
    gains = _cut(judged.gains, k)
    dcg = gains @ _discounts(gains.shape[1])
    ideal = _cut(judged.ideal, k)
    idcg = ideal @ _discounts(ideal.shape[1])
    return np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0)


def average_precision(judged: Judged, k=None) -> np.ndarray:
    """(1 / R) sum_{i<=k} rel_i * P@i, R = number of relevant sections, retrieved or not
    (trec_eval ``map_cut_k``); ``ap`` is ap at the run's depth (``map``, whose mean over
    questions is MAP)."""
    relevant = _cut(judged.relevant, k)
    precision = np.cumsum(relevant, axis=1) / np.arange(1, relevant.shape[1] + 1)
    total = (_cut(judged.found, k) * precision).sum(axis=1)
    return total / np.maximum(judged.n_relevant, 1)


def r_precision(judged: Judged) -> np.ndarray:
    """Relevant among the first R retrieved / R, R = number of relevant sections (trec_eval
    ``Rprec``)."""
    found = judged.found
    within = np.arange(found.shape[1])[None, :] < judged.n_relevant[:, None]
    return (found * within).sum(axis=1) / np.maximum(judged.n_relevant, 1)


def bpref(judged: Judged) -> np.ndarray:
    """(1 / R) sum over retrieved relevant r of 1 - min(n_r, R) / min(N, R), n_r = judged
    non-relevant sections ranked above r, N = judged non-relevant sections of the question;
    a term is 1 while n_r = 0 (trec_eval ``bpref``; Buckley & Voorhees, "Retrieval evaluation
    with incomplete information", SIGIR 2004). Caveat: it needs judged non-relevant sections
    (qrels score 0, :attr:`Judged.nonrelevant`); without them every retrieved relevant
    section scores 1 and bpref is recall at the depth."""
    n_rel = judged.n_relevant.astype(np.float64)[:, None]
    if judged.nonrelevant is None:  # nothing judged not relevant: every term is 1
        return recall(judged, judged.gains.shape[1])
    above = np.cumsum(judged.nonrelevant, axis=1)  # at a relevant rank: judged non-relevant above it
    cap = np.minimum(judged.n_nonrelevant[:, None], n_rel)
    penalty = np.divide(np.minimum(above, n_rel), cap, out=np.zeros(above.shape), where=(above > 0) & (cap > 0))
    return (judged.found * (1.0 - penalty)).sum(axis=1) / np.maximum(n_rel[:, 0], 1)


def first_relevant_rank(judged: Judged) -> np.ndarray:
    """Public alias: 1-based rank of the first relevant section, 0 when none."""
    return _first_relevant_rank(judged)
