"""One :class:`~receval.scoring.family.Family` per measure family, in the one registry both
sides read (as trec_eval's ``m_*.c`` table or ir_measures' measure objects are).

A declaration says everything receval needs to know of a family: its name and how a
measure of it is written (``ndcg@10``, ``rr``, ``hit@300tok``), how tables title it, which
way is better, its formula (the per-question function, source cited in its docstring),
trec_eval's name for it, a line of help and what a question with nothing retrieved
scores. From the registry follow the measures a run stores (:func:`measures_for`,
:func:`chunk_families`), the names ``report --metrics`` and the other read-side commands
take (:func:`parse_measure`, :func:`is_measure`, :func:`measure_label`,
:func:`lower_is_better`), the measures reference page (``docs/gen_reference.py``) and
the agreement tests against pytrec_eval (``trec_eval`` of each declaration).

The shipped families are declared in :mod:`receval.scoring.shipped`; adding one is a
:func:`declare` call (see "Adding a measure" on the measures reference page).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from receval.core.vocabulary import MAX_BUDGET, MeasureName
from receval.scoring.family import CHUNKS, UNITS, Family
from receval.scoring.shipped import SHIPPED

_NAME = re.compile(r"^(?P<family>[a-z][a-z0-9_]*)(?:@(?P<k>\d+)(?P<tok>tok)?)?$")
_CHUNK_NAME = re.compile(r"^(?P<family>[a-z][a-z0-9_]*)@(?P<k>[1-9]\d*)(?P<tok>tok)?$")

__all__ = [
    "CHUNKS", "MAX_BUDGET", "UNITS", "budget_of", "chunk_families", "chunk_measure", "declare", "families", "Family",
    "family", "family_of", "find", "in_unit_interval", "is_measure", "is_token_measure", "lower_is_better",
    "Measure", "measure_label", "MeasureName", "measures_for", "parse_chunk_measure", "parse_measure",
    "trec_eval_name", "withdraw",
]

_REGISTRY: dict[str, Family] = {}
_ALIASES: dict[str, str] = {}


def _add(new: Family) -> None:
    taken = set(_REGISTRY) | set(_ALIASES)
    clash = [n for n in (new.name, *new.aliases) if n in taken]
    if clash:
        raise ValueError(f"measure family {new.name!r}: {', '.join(clash)} is already declared")
    _REGISTRY[new.name] = new
    _ALIASES.update((alias, new.name) for alias in new.aliases)


for _shipped in SHIPPED:  # receval's own families first, in their order
    _add(_shipped)


def declare(new: Family) -> Family:
    """Add ``new`` to the registry (after the shipped families): from here on a run stores
    it, the read side takes its names and the reference page lists it. A name or alias
    already declared is an error."""
    _add(new)
    return new


def withdraw(name: str) -> None:
    """Remove a family :func:`declare` added (a test's, once done); receval's own stay."""
    if name not in _REGISTRY or any(name == shipped.name for shipped in SHIPPED):
        raise ValueError(f"withdraw {name!r}: only a family declare() added can be withdrawn")
    gone = _REGISTRY.pop(name)
    for alias in gone.aliases:
        _ALIASES.pop(alias, None)


def families(reads: str | None = None) -> list[Family]:
    """Every declared family in declaration order (only those reading ``reads``)."""
    return [f for f in _REGISTRY.values() if reads is None or f.reads == reads]


def find(name: str) -> Family | None:
    """The family ``name`` (canonical or alias) names, else None."""
    return _REGISTRY.get(_ALIASES.get(name, name))


def family(name: str) -> Family:
    """The family ``name`` names; ValueError for an undeclared one."""
    found = find(name)
    if found is None:
        raise ValueError(f"no measure family {name!r}: declared are {', '.join(_REGISTRY)}")
    return found


def chunk_families(nuggets: bool = True) -> list[Family]:
    """The chunk families a run stores at each k (the nugget ones only with nuggets)."""
    return [f for f in families(CHUNKS) if f.stored and (nuggets or f.needs != "nugget_at")]


# ----------------------------------------------------------------- the name grammar


def _budget(family: str, value: str, name: str) -> int:
    budget = int(value)
    if not 1 <= budget <= MAX_BUDGET:
        raise ValueError(f"measure {name!r}: a token budget is from 1 to {MAX_BUDGET:,}, e.g. {family}@300tok")
    return budget


def _unknown(name: str) -> ValueError:
    units = families(UNITS)
    depth = ", ".join(f.name + "".join(f" ({a})" for a in f.aliases) for f in units if f.at_depth)
    cutoff = ", ".join(f"{f.name}@k" for f in units if f.at_k)
    budget = ", ".join(f.name for f in units if f.at_budget)
    return ValueError(f"unknown measure {name!r}: use {depth}, or {cutoff}, or at a token budget hit@300tok ({budget})")


def parse_measure(name: str) -> Measure:
    """``'ndcg@5'`` -> ``Measure('ndcg', 5)``, ``'hit@300tok'`` -> ``Measure('hit',
    budget=300)``: a measure of units; raises ValueError naming the choices."""
    match = _NAME.match(name.strip().lower())
    declared = match and find(match["family"])
    if not declared or declared.reads != UNITS:
        raise _unknown(name)
    if match["tok"]:
        if not declared.at_budget:
            budget = ", ".join(f.name for f in families(UNITS) if f.at_budget)
            raise ValueError(f"{declared.name} takes no token budget; these do: {budget}")
        return Measure(declared.name, budget=_budget(declared.name, match["k"], name))
    k = int(match["k"]) if match["k"] else None
    if declared.at_depth and k is None:
        return Measure(declared.name)
    if declared.at_k and (k is None or k < 1):
        raise ValueError(f"measure {name!r} needs a cutoff k >= 1, e.g. {declared.name}@3")
    if not declared.at_k:
        raise ValueError(f"{declared.name} takes no cutoff{declared.no_cutoff}")
    return Measure(declared.name, k)


def _chunk_family(match) -> Family | None:
    declared = match and find(match["family"])
    return declared if declared and declared.reads == CHUNKS else None


def is_token_measure(name: str) -> bool:
    """``token_precision@3``, ``redundancy@5``, ``nugget_recall@300tok`` and kin (canonical
    names): measures of the text of the first k chunks (or a token budget's), computed from
    per-chunk counts (:mod:`receval.scoring.chunks`), not from a judged ranking of units."""
    match = _CHUNK_NAME.match(name)
    return _chunk_family(match) is not None and (not match["tok"] or int(match["k"]) <= MAX_BUDGET)


def parse_chunk_measure(name: str) -> MeasureName:
    """``'redundancy@5'`` -> ``MeasureName('redundancy', 5)``, ``'context_tokens@300tok'`` ->
    ``MeasureName('context_tokens', budget=300)``; ValueError for any other name."""
    match = _CHUNK_NAME.match(name.strip().lower())
    declared = _chunk_family(match)
    if declared is None:
        raise ValueError(
            f"unknown measure {name!r}: these count the first k chunks or a token budget: "
            + ", ".join(f"{f.name}@k" for f in families(CHUNKS)) + " (or @300tok)"
        )
    if match["tok"]:
        return MeasureName(declared.name, budget=_budget(declared.name, match["k"], name))
    return MeasureName(declared.name, int(match["k"]))


def budget_of(name: str) -> int | None:
    """The token budget a measure's name gives (``recall@300tok`` -> 300), else None."""
    for parse in (parse_measure, parse_chunk_measure):
        try:
            return parse(name).budget
        except ValueError:
            continue
    return None


def is_measure(name: str) -> bool:
    """True for a canonical name of a measure of units (``rr``, ``hit@3``, ``ndcg@10``...)."""
    try:
        return parse_measure(name).name == name
    except ValueError:
        return False


def family_of(name: str) -> Family | None:
    """The family a canonical column name starts with (``ndcg`` for ``ndcg@5``), else None."""
    return _REGISTRY.get(name.split("@", 1)[0])


def lower_is_better(name: str) -> bool:
    """``context_tokens@k`` (fewer tokens sent), ``redundancy@k`` (less of them repeated),
    any family declared ``better="lower"``: the lower, the better the run."""
    declared = family_of(name)
    return declared is not None and declared.better == "lower"


def in_unit_interval(name: str) -> bool:
    """Measures whose per-question value lies in [0, 1], 1 the best: every bounded family
    where higher is better, and ``rr@k``. Where a question set's ceiling (1) and floor (0)
    are (:mod:`receval.stats.decidable`)."""
    if re.fullmatch(r"rr@[1-9]\d*", name):
        return True
    if not (is_measure(name) or is_token_measure(name)):
        return False
    declared = family_of(name)
    return declared.bounded and declared.better == "higher"


def measure_label(name: str) -> str:
    """A measure as tables and messages name it: ``MRR`` for ``rr``, ``MRR@3``, ``nDCG@5``;
    any other column as it is."""
    declared = family_of(name)
    return name if declared is None else declared.title + name[len(declared.name):]


def trec_eval_name(measure: MeasureName) -> str | None:
    """trec_eval's name for ``measure`` (``ndcg@10`` -> ``ndcg_cut_10``), None without one."""
    if measure.budget is not None:
        return None
    for name in family(measure.family).trec_eval:
        if ("{k}" in name) == (measure.k is not None):
            return name.format(k=measure.k)
    return None


# ----------------------------------------------------------------- computing


@dataclass(frozen=True, eq=False)
class Measure(MeasureName):
    """A measure of units (:class:`receval.core.vocabulary.MeasureName`) that computes
    itself with its family's formula."""

    def __call__(self, judged) -> np.ndarray:
        if self.budget is not None:
            raise ValueError(f"{self.name} is measured at a token budget: use Measure.at with each question's cutoff")
        formula = family(self.family).formula
        return formula(judged) if self.k is None else formula(judged, self.k)

    def at(self, judged, cutoffs: np.ndarray) -> np.ndarray:
        """The measure at one cutoff per question (Q,): the units a token budget holds
        (:func:`receval.scoring.budget.units_within`); every rule as at a fixed k."""
        declared = family(self.family)
        if not declared.at_budget:
            raise ValueError(f"{self.family} takes no per-question cutoff")
        return declared.formula(judged, np.asarray(cutoffs, dtype=np.int64))


def measures_for(ks: list[int]) -> list[Measure]:
    """The measures of units a run stores: each family measured at its depth (rr, ap,
    rprec, bpref), then each family with a cutoff at every k (hit, recall, precision,
    ndcg, ap, judged), in declaration order."""
    units = [f for f in families(UNITS) if f.stored]
    out = [Measure(f.name) for f in units if f.at_depth]
    for declared in units:
        if declared.at_k:
            out.extend(Measure(declared.name, k) for k in ks)
    return out


def chunk_measure(name: MeasureName, ranking, k) -> np.ndarray:
    """The chunk measure ``name`` over the first ``k`` chunks (int or one per question)."""
    return family(name.family).formula(ranking, k)
