"""Measures derived from what a run stored, without re-running it.

- ``rr@k`` (MRR@k) for any ``k <= depth``: ``rr`` where ``first_relevant_rank <= k``,
  else 0 (null stays null: unanswerable questions are left out as for ``rr``).
- Any token budget (``hit@300tok``, ``recall@1000tok``, ``context_tokens@500tok``), and
  the chunk measures and hit, recall, precision, nDCG and AP at a k the run did not store,
  from its per-rank columns (:mod:`receval.analysis.budget`).
- Any numeric per-question column that is not a measure (``rouge1_p``, ``rougeL_p``,
  ``latency_ms``) can be averaged like one, with its bootstrap interval.

:func:`with_derived` adds the columns a report asks for; :func:`column_for`
names the column a user's ``--metrics`` entry means (``None``: not a derived one).
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa

from receval.analysis import budget
from receval.core.errors import RecevalError

_RR_AT = re.compile(r"^(?:m?rr)@(\d+)$", re.IGNORECASE)


def rr_at(rr: np.ndarray, first_relevant_rank: np.ndarray, k: int) -> np.ndarray:
    """MRR@k per question: ``rr * (first_relevant_rank <= k)``; NaN rr stays NaN."""
    within = np.nan_to_num(first_relevant_rank, nan=np.inf) <= k
    return np.where(np.isnan(rr), np.nan, np.where(within, rr, 0.0))


def rr_cutoff(name: str) -> int | None:
    """``'MRR@3'`` / ``'rr@3'`` -> 3; anything else -> None."""
    match = _RR_AT.match(name.strip())
    return int(match[1]) if match else None


def _depth(run) -> int | None:
    """The run's depth: the saved config's ``depth`` when it has one."""
    value = run.flat.get("depth") if run.flat else None
    return int(value) if isinstance(value, int) else None


def with_derived(runs: list, names: list[str], option: str = "metrics") -> list:
    """``runs`` with a column added for each ``rr@k``, token budget measure and other
    derivable measure among ``names`` (:mod:`receval.analysis.budget`) they do not hold."""
    parsed = list({p.name: p for p in map(budget.derivable, names) if p is not None}.values())
    if parsed:
        budget.check_units(runs, [p.name for p in parsed], option)
        runs = [budget.with_budget_columns(run, parsed, option) for run in runs]
    cutoffs = sorted({k for k in map(rr_cutoff, names) if k is not None})
    if not cutoffs:
        return runs
    out = []
    for run in runs:
        table = run.table
        depth = _depth(run)
        for k in cutoffs:
            if k < 1:
                raise RecevalError(f"{option}: rr@{k}: the cutoff must be >= 1, e.g. rr@3")
            if depth is not None and k > depth:
                raise RecevalError(
                    f"{option}: rr@{k} is beyond {run.run_dir}'s depth {depth}; "
                    f"use k <= {depth} (rr is MRR@{depth})"
                )
            column = f"rr@{k}"
            if column in table.column_names:
                continue
            values = rr_at(run.values("rr"), run.values("first_relevant_rank"), k)
            table = table.append_column(column, pa.array(values, pa.float64(), mask=np.isnan(values)))
        out.append(run.filtered(table))
    return out


def column_for(name: str, runs: list) -> str | None:
    """The column ``name`` means when it is an ``rr@k`` or a numeric non-measure
    column every run has; None when it is none of these (a measure, or unknown)."""
    k = rr_cutoff(name)
    candidate = f"rr@{k}" if k is not None else name.strip()
    if not runs or k is None and "@" in candidate:
        return None
    for run in runs:
        if candidate not in run.table.column_names:
            return None
        kind = run.table.schema.field(candidate).type
        if not (pa.types.is_floating(kind) or pa.types.is_integer(kind)):
            return None
    return candidate
