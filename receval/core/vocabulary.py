"""The measure vocabulary: canonical names (``rr``, ``ndcg@10``), how they parse, which
direction is better and how tables label them. Names only, no formulas (those are
:mod:`receval.scoring.measures`). Canonical names follow trec_eval and ir_measures
(``MRR``, ``nDCG@10``, ``MAP``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Every family of ranking measure (:mod:`receval.scoring.measures` holds one formula for each).
FAMILIES = ("rr", "hit", "recall", "precision", "ndcg", "ap", "rprec", "bpref", "judged")


@dataclass(frozen=True)
class MeasureName:
    """A measure and its cutoff; ``name`` is canonical (``ndcg@5``, ``rr``)."""

    family: str
    k: int | None = None

    @property
    def name(self) -> str:
        return self.family if self.k is None else f"{self.family}@{self.k}"


CUTOFF_FAMILIES = ("hit", "recall", "precision", "ndcg", "ap", "judged")
#: Families with no cutoff: measured at the run's depth.
DEPTH_FAMILIES = ("rr", "ap", "rprec", "bpref")
#: trec_eval's names for receval's (``ap`` is ``map``; ``map`` is read as ``ap``).
_ALIASES = {"mrr": "rr", "map": "ap"}
_NAME = re.compile(r"^(?P<family>[a-z]+)(?:@(?P<k>\d+))?$")


def parse_measure(name: str) -> MeasureName:
    """``'ndcg@5'`` -> ``MeasureName('ndcg', 5)``; raises ValueError naming the choices."""
    match = _NAME.match(name.strip().lower())
    family = match and _ALIASES.get(match["family"], match["family"])
    if not match or family not in FAMILIES:
        raise ValueError(
            f"unknown measure {name!r}: use rr, ap (map), rprec, bpref, or hit@k, recall@k, "
            "precision@k, ndcg@k, ap@k, judged@k"
        )
    k = int(match["k"]) if match["k"] else None
    if family in DEPTH_FAMILIES and k is None:
        return MeasureName(family)
    if family in CUTOFF_FAMILIES and (k is None or k < 1):
        raise ValueError(f"measure {name!r} needs a cutoff k >= 1, e.g. {family}@3")
    if family == "rr":
        raise ValueError("rr takes no cutoff here: it is MRR@depth (set depth instead)")
    if family not in CUTOFF_FAMILIES:
        raise ValueError(f"{family} takes no cutoff: it is measured at the run's depth")
    return MeasureName(family, k)


#: Per-question columns beside the measures, named here so both sides spell them alike:
#: the pairs a re-ranker scored (min(first_size, retrieved)), and the money a question
#: cost (``cost_usd``, one ``cost_usd.<stage>`` per paid stage; :mod:`receval.measures.cost`).
PAIRS = "pairs_scored"
COST = "cost_usd"

TOKEN_FAMILIES = ("token_recall", "token_precision", "token_iou", "context_tokens")
_TOKEN_NAME = re.compile(rf"^({'|'.join(TOKEN_FAMILIES)})@([1-9]\d*)$")


def is_token_measure(name: str) -> bool:
    """``token_precision@3`` and kin: stored per question by :mod:`receval.measures.spans`
    (computed from spans, not from a :class:`Judged` ranking)."""
    return bool(_TOKEN_NAME.match(name))


def lower_is_better(name: str) -> bool:
    """``context_tokens@k``: fewer tokens sent is the better run."""
    return name.startswith("context_tokens@")


def in_unit_interval(name: str) -> bool:
    """Measures whose per-question value lies in [0, 1], 1 the best: every ranking measure,
    ``rr@k`` and the token measures but ``context_tokens@k`` (a count). Where a question
    set's ceiling (1) and floor (0) are (:mod:`receval.stats.decidable`)."""
    if re.fullmatch(r"rr@[1-9]\d*", name):
        return True
    return is_measure(name) or (is_token_measure(name) and not lower_is_better(name))


def is_measure(name: str) -> bool:
    """True for a canonical measure name (``rr``, ``hit@3``, ``ndcg@10``...)."""
    try:
        return parse_measure(name).name == name
    except ValueError:
        return False



def measure_label(name: str) -> str:
    """A measure as tables and messages name it: ``MRR`` for ``rr``, ``MRR@3``, ``nDCG@5``."""
    if name == "rr":
        return "MRR"
    if name.startswith("rr@"):
        return "MRR@" + name[3:]
    if name.startswith("ndcg@"):
        return "nDCG@" + name[5:]
    if name == "ap" or name.startswith("ap@"):  # the mean of ap is MAP, as rr's is MRR
        return "M" + name.upper()
    if name == "rprec":
        return "R-prec"
    return name
