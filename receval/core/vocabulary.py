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
    """A measure and its cutoff, ``k`` ranks or a ``budget`` of tokens; ``name`` is
    canonical (``ndcg@5``, ``rr``, ``recall@300tok``)."""

    family: str
    k: int | None = None
    budget: int | None = None

    @property
    def name(self) -> str:
        if self.budget is not None:
            return f"{self.family}@{self.budget}tok"
        return self.family if self.k is None else f"{self.family}@{self.k}"


CUTOFF_FAMILIES = ("hit", "recall", "precision", "ndcg", "ap", "judged")
#: Families with no cutoff: measured at the run's depth.
DEPTH_FAMILIES = ("rr", "ap", "rprec", "bpref")
#: trec_eval's names for receval's (``ap`` is ``map``; ``map`` is read as ``ap``).
#: Families measured at a token budget too (``hit@300tok``): the ranking is cut where the
#: retrieved chunks' tokens would pass the budget (:mod:`receval.scoring.budget`).
BUDGET_FAMILIES = ("rr", "hit", "recall", "precision", "ndcg", "ap")
_ALIASES = {"mrr": "rr", "map": "ap"}
_NAME = re.compile(r"^(?P<family>[a-z_]+)(?:@(?P<k>\d+)(?P<tok>tok)?)?$")
#: The largest token budget a name may give (a typo beyond it is refused, not allocated).
MAX_BUDGET = 100_000_000


def _budget(family: str, value: str, name: str) -> int:
    budget = int(value)
    if not 1 <= budget <= MAX_BUDGET:
        raise ValueError(f"measure {name!r}: a token budget is from 1 to {MAX_BUDGET:,}, e.g. {family}@300tok")
    return budget


def parse_measure(name: str) -> MeasureName:
    """``'ndcg@5'`` -> ``MeasureName('ndcg', 5)``, ``'hit@300tok'`` -> ``MeasureName('hit',
    budget=300)``; raises ValueError naming the choices."""
    match = _NAME.match(name.strip().lower())
    family = match and _ALIASES.get(match["family"], match["family"])
    if not match or family not in FAMILIES:
        raise ValueError(
            f"unknown measure {name!r}: use rr, ap (map), rprec, bpref, or hit@k, recall@k, "
            "precision@k, ndcg@k, ap@k, judged@k, or at a token budget hit@300tok (rr, hit, recall, "
            "precision, ndcg, ap)"
        )
    if match["tok"]:
        if family not in BUDGET_FAMILIES:
            raise ValueError(f"{family} takes no token budget; these do: {', '.join(BUDGET_FAMILIES)}")
        return MeasureName(family, budget=_budget(family, match["k"], name))
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
#: Measures of the text sent, over the first k *chunks* (before they are collapsed to
#: units), or within a token budget: the token measures, the share of the text repeated
#: (``redundancy``), the novelty-aware gain over the question's units (``alpha_ndcg``) and
#: the share of its nuggets supported (:mod:`receval.scoring.chunks` holds their formulas).
CHUNK_FAMILIES = (*TOKEN_FAMILIES, "redundancy", "alpha_ndcg", "nugget_recall", "vital_nugget_recall")
_TOKEN_NAME = re.compile(rf"^({'|'.join(CHUNK_FAMILIES)})@([1-9]\d*)(tok)?$")


def is_token_measure(name: str) -> bool:
    """``token_precision@3``, ``redundancy@5``, ``nugget_recall@300tok`` and kin: measures
    of the text of the first k chunks (or a token budget's), computed from per-chunk
    counts (:mod:`receval.scoring.chunks`), not from a :class:`Judged` ranking of units."""
    match = _TOKEN_NAME.match(name)
    return bool(match) and (not match[3] or int(match[2]) <= MAX_BUDGET)


def parse_chunk_measure(name: str) -> MeasureName:
    """``'redundancy@5'`` -> ``MeasureName('redundancy', 5)``, ``'context_tokens@300tok'`` ->
    ``MeasureName('context_tokens', budget=300)``; ValueError for any other name."""
    match = _TOKEN_NAME.match(name.strip().lower())
    if not match:
        raise ValueError(
            f"unknown measure {name!r}: these count the first k chunks or a token budget: "
            + ", ".join(f"{family}@k" for family in CHUNK_FAMILIES) + " (or @300tok)"
        )
    if match[3]:
        return MeasureName(match[1], budget=_budget(match[1], match[2], name))
    return MeasureName(match[1], int(match[2]))


def budget_of(name: str) -> int | None:
    """The token budget a measure's name gives (``recall@300tok`` -> 300), else None."""
    for parse in (parse_measure, parse_chunk_measure):
        try:
            return parse(name).budget
        except ValueError:
            continue
    return None


def lower_is_better(name: str) -> bool:
    """``context_tokens@k`` (fewer tokens sent) and ``redundancy@k`` (less of them
    repeated): the lower, the better the run."""
    return name.startswith(("context_tokens@", "redundancy@"))


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
    if name.startswith("alpha_ndcg@"):
        return "alpha-nDCG@" + name[11:]
    if name == "ap" or name.startswith("ap@"):  # the mean of ap is MAP, as rr's is MRR
        return "M" + name.upper()
    if name == "rprec":
        return "R-prec"
    return name
