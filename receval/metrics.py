"""Per-question ranking measures, each a small value object with a canonical name.

Every measure reads a :class:`Judged` ranking: for each question, the gain (grade) of
the section at each retrieved position, best first (0 = not relevant or nothing
retrieved there), plus the question's labels. A section is relevant when its grade
is >= 1; ungraded labels have grade 1. Formulas, with rel_i = 1 if gain_i >= 1:

- ``rr``: 1 / (rank of the first relevant section), 0 when none is retrieved
  (averaged over questions it is MRR@depth; trec_eval ``recip_rank``).
- ``hit@k``: 1 if any of the first k is relevant, else 0 (trec_eval ``success_k``).
- ``recall@k``: sum_{i<=k} rel_i / (number of relevant sections) (``recall_k``).
  Evidence items (:mod:`receval.measures.spans`) are the units instead: a position's gain is
  the number of items found there, and recall counts items.
- ``precision@k``: sum_{i<=k} rel_i / k, k counted even when fewer were retrieved
  (``P_k``).
- ``ndcg@k``: DCG@k / IDCG@k, DCG@k = sum_{i<=k} gain_i / log2(i + 1); IDCG@k is
  the DCG of all labels sorted by grade, cut at k (trec_eval ``ndcg_cut_k``,
  linear gain).

Each measure is a private vectorised function over all questions at once
(scikit-learn style); ``MEASURES`` is the one registry of names.
"""

from __future__ import annotations

import re
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
    """

    gains: np.ndarray
    ideal: np.ndarray
    n_relevant: np.ndarray
    units: np.ndarray | None = None

    @property
    def relevant(self) -> np.ndarray:
        return self.gains >= 1

    @property
    def found(self) -> np.ndarray:
        return self.relevant if self.units is None else self.units


def _discounts(n: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))


def _first_relevant_rank(judged: Judged) -> np.ndarray:
    """1-based rank of the first relevant section; 0 where none was retrieved."""
    rel = judged.relevant
    found = rel.any(axis=1)
    return np.where(found, rel.argmax(axis=1) + 1, 0)


def _reciprocal_rank(judged: Judged) -> np.ndarray:
    rank = _first_relevant_rank(judged)
    return np.where(rank > 0, 1.0 / np.maximum(rank, 1), 0.0)


def _hit(judged: Judged, k: int) -> np.ndarray:
    return judged.relevant[:, :k].any(axis=1).astype(np.float64)


def _recall(judged: Judged, k: int) -> np.ndarray:
    found = judged.found[:, :k].sum(axis=1)
    return found / np.maximum(judged.n_relevant, 1)


def _precision(judged: Judged, k: int) -> np.ndarray:
    return judged.relevant[:, :k].sum(axis=1) / k


def _ndcg(judged: Judged, k: int) -> np.ndarray:
    gains = judged.gains[:, :k]
    dcg = gains @ _discounts(gains.shape[1])
    ideal = judged.ideal[:, :k]
    idcg = ideal @ _discounts(ideal.shape[1])
    return np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0)


@dataclass(frozen=True)
class Measure:
    """A measure and its cutoff; ``name`` is canonical (``ndcg@5``, ``rr``)."""

    family: str
    k: int | None = None

    @property
    def name(self) -> str:
        return self.family if self.k is None else f"{self.family}@{self.k}"

    def __call__(self, judged: Judged) -> np.ndarray:
        function = _FAMILIES[self.family]
        return function(judged) if self.k is None else function(judged, self.k)


_FAMILIES = {
    "rr": _reciprocal_rank,
    "hit": _hit,
    "recall": _recall,
    "precision": _precision,
    "ndcg": _ndcg,
}
CUTOFF_FAMILIES = ("hit", "recall", "precision", "ndcg")
_NAME = re.compile(r"^(?P<family>[a-z]+)(?:@(?P<k>\d+))?$")


def parse_measure(name: str) -> Measure:
    """``'ndcg@5'`` -> ``Measure('ndcg', 5)``; raises ValueError naming the choices."""
    match = _NAME.match(name.strip().lower())
    family = match and match["family"]
    if family == "mrr":
        family = "rr"
    if not match or family not in _FAMILIES:
        raise ValueError(
            f"unknown measure {name!r}: use rr, or hit@k, recall@k, precision@k, ndcg@k"
        )
    k = int(match["k"]) if match["k"] else None
    if family in CUTOFF_FAMILIES and (k is None or k < 1):
        raise ValueError(f"measure {name!r} needs a cutoff k >= 1, e.g. {family}@3")
    if family == "rr" and k is not None:
        raise ValueError("rr takes no cutoff here: it is MRR@depth (set depth instead)")
    return Measure(family, k)


TOKEN_FAMILIES = ("token_recall", "token_precision", "token_iou", "context_tokens")
_TOKEN_NAME = re.compile(rf"^({'|'.join(TOKEN_FAMILIES)})@([1-9]\d*)$")


def is_token_measure(name: str) -> bool:
    """``token_precision@3`` and kin: stored per question by :mod:`receval.measures.spans`
    (computed from spans, not from a :class:`Judged` ranking)."""
    return bool(_TOKEN_NAME.match(name))


def lower_is_better(name: str) -> bool:
    """``context_tokens@k``: fewer tokens sent is the better run."""
    return name.startswith("context_tokens@")


def is_measure(name: str) -> bool:
    """True for a canonical measure name (``rr``, ``hit@3``, ``ndcg@10``...)."""
    try:
        return parse_measure(name).name == name
    except ValueError:
        return False


def measures_for(ks: list[int]) -> list[Measure]:
    """The stored measures: rr, then hit, recall, precision, ndcg at each k."""
    out = [Measure("rr")]
    for family in CUTOFF_FAMILIES:
        out.extend(Measure(family, k) for k in ks)
    return out


def first_relevant_rank(judged: Judged) -> np.ndarray:
    """Public alias: 1-based rank of the first relevant section, 0 when none."""
    return _first_relevant_rank(judged)


def measure_label(name: str) -> str:
    """A measure as tables and messages name it: ``MRR`` for ``rr``, ``MRR@3``, ``nDCG@5``."""
    if name == "rr":
        return "MRR"
    if name.startswith("rr@"):
        return "MRR@" + name[3:]
    if name.startswith("ndcg@"):
        return "nDCG@" + name[5:]
    return name
