"""One measure family's declaration (:class:`Family`): the value object
:mod:`receval.scoring.declared` keeps in its registry and :mod:`receval.scoring.shipped`
fills with receval's own families."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: What a family's formula reads: a judged ranking of units (sections, documents,
#: evidence items: :class:`receval.scoring.measures.Judged`), or the per-chunk-rank
#: counts of the text sent (:class:`receval.scoring.chunks.ChunkRanking`).
UNITS, CHUNKS = "units", "chunks"
_FAMILY_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Family:
    """One measure family, declared once.

    ``name``: canonical, lower case, letters, digits and ``_`` (``ndcg``, ``f1``).
    ``formula``: the per-question function over all questions at once, ``(judged)`` or
    ``(judged, k)`` for units, ``(ranking, k)`` for chunks, returning (Q,) floats; its
    docstring states the formula and cites its source (the reference page prints it).
    ``help``: one sentence saying what it tells. ``label``: how tables title it (``nDCG``;
    None: the name). ``reads``: :data:`UNITS` or :data:`CHUNKS`. The name grammar:
    ``at_depth`` (the bare name, measured at the run's depth), ``at_k`` (``name@k``, k >= 1),
    ``at_budget`` (``name@300tok``). ``better``: ``"higher"`` or ``"lower"``. ``bounded``:
    every value lies in [0, 1]. ``empty``: what a question with nothing retrieved scores.
    ``trec_eval``: trec_eval's names for it, ``{k}`` standing for the cutoff
    (``("map", "map_cut_{k}")``; empty: none). ``aliases``: other names read as this one
    (``mrr``). ``stored``: a run writes it at each of ``metrics.ks`` (and at its depth).
    ``needs``: for chunks, the :class:`~receval.scoring.chunks.ChunkRanking` field it
    reads beyond the tokens (a run without it has no such measure). ``own_nulls``: its
    formula gives null itself where a question has nothing to score (nuggets), instead
    of null for every unanswerable question. ``no_cutoff``: why the bare family takes
    no ``@k``, for its error message."""

    name: str
    formula: Callable[..., np.ndarray]
    help: str
    label: str | None = None
    reads: str = UNITS
    at_depth: bool = False
    at_k: bool = True
    at_budget: bool = False
    better: str = "higher"
    bounded: bool = True
    empty: float = 0.0
    trec_eval: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    stored: bool = True
    needs: str | None = None
    own_nulls: bool = False
    no_cutoff: str = ": it is measured at the run's depth"

    def __post_init__(self):
        problems = []
        if not _FAMILY_NAME.match(self.name):
            problems.append(f"name {self.name!r}: use lower-case letters, digits and _, starting with a letter")
        if self.reads not in (UNITS, CHUNKS):
            problems.append(f"reads={self.reads!r}: use {UNITS!r} or {CHUNKS!r}")
        if self.better not in ("higher", "lower"):
            problems.append(f"better={self.better!r}: use 'higher' or 'lower'")
        if not (self.at_depth or self.at_k):
            problems.append("give at_depth or at_k: a name must be writable")
        if self.reads == CHUNKS and (self.at_depth or not self.at_k):
            problems.append("a chunk measure counts the first k chunks: at_k, not at_depth")
        if not callable(self.formula) or not (self.formula.__doc__ or "").strip():
            problems.append("formula: a function whose docstring states the formula and its source")
        if problems:
            raise ValueError(f"measure family {self.name!r}: " + "; ".join(problems))

    @property
    def title(self) -> str:
        """The label tables use (``MRR`` for ``rr``)."""
        return self.label or self.name

    @property
    def formula_text(self) -> str:
        """The formula, as its function's docstring states it."""
        return " ".join(self.formula.__doc__.split())

    def names(self) -> list[str]:
        """How a measure of the family is written: ``ap``, ``ap@k``, ``ap@Btok``."""
        return ([self.name] if self.at_depth else []) + ([f"{self.name}@k"] if self.at_k else []) + (
            [f"{self.name}@Btok"] if self.at_budget else [])
