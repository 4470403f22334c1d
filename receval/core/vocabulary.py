"""Names both sides spell alike: a measure's name and cutoff (:class:`MeasureName`,
canonical names following trec_eval and ir_measures: ``rr``, ``ndcg@10``), and the
per-question columns beside the measures. Which families exist, how their names parse,
label and compare is declared in :mod:`receval.scoring.declared`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, eq=False)
class MeasureName:
    """A measure and its cutoff, ``k`` ranks or a ``budget`` of tokens; ``name`` is
    canonical (``ndcg@5``, ``rr``, ``recall@300tok``). Equal to any measure name with the
    same three (a :class:`receval.scoring.declared.Measure` too)."""

    family: str
    k: int | None = None
    budget: int | None = None

    def __eq__(self, other) -> bool:
        if not isinstance(other, MeasureName):
            return NotImplemented
        return (self.family, self.k, self.budget) == (other.family, other.k, other.budget)

    def __hash__(self) -> int:
        return hash((self.family, self.k, self.budget))

    @property
    def name(self) -> str:
        if self.budget is not None:
            return f"{self.family}@{self.budget}tok"
        return self.family if self.k is None else f"{self.family}@{self.k}"


#: The largest token budget a name may give (a typo beyond it is refused, not allocated).
MAX_BUDGET = 100_000_000

#: Per-question columns beside the measures, named here so both sides spell them alike:
#: the pairs a re-ranker scored (min(first_size, retrieved)), and the money a question
#: cost (``cost_usd``, one ``cost_usd.<stage>`` per paid stage; :mod:`receval.measures.cost`).
PAIRS = "pairs_scored"
COST = "cost_usd"
