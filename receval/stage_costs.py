"""What each stage costs, for the report: pairs a re-ranker scored, money per 1,000
questions and the one-off index cost, shown beside the latency per stage.

Read from a stored run only (its ``pairs_scored`` and ``cost_usd`` columns and
``run.json``'s ``cost``; see :mod:`receval.cost`); nothing is re-priced here. The
report calls two hooks: :func:`cost_facts` per run and :func:`with_costs` on its
latency-per-stage table.
"""

from __future__ import annotations

import numpy as np

from receval import tables
from receval.cost import COLUMN
from receval.rerankers import PAIRS


def cost_facts(run) -> dict:
    """Per run: mean pairs scored per question, US dollars per 1,000 questions (in all
    and per stage), the index cost, and the stages whose tokens were estimated."""
    names = run.table.column_names
    facts: dict = {}
    if PAIRS in names:
        values = run.values(PAIRS)
        facts["pairs_per_question"] = float(np.nanmean(values)) if values.size else None
    from receval.choice import money  # the one place dollars per 1,000 questions are computed

    facts["usd_per_1000"] = money(run)  # 0 for a run whose stages call no API; None: paid, unpriced
    if COLUMN in names:
        facts["priced"] = True
        facts["usd_per_1000_by_stage"] = {
            name[len(COLUMN) + 1:]: float(np.mean(np.nan_to_num(run.values(name))) * 1000)
            for name in names if name.startswith(COLUMN + ".")
        }
    cost = run.info.get("cost") if isinstance(run.info.get("cost"), dict) else {}
    index = cost.get("index") if isinstance(cost.get("index"), dict) else {}
    if index:
        facts["index_usd"] = index.get("usd")
    if cost.get("tokens_estimated"):
        facts["tokens_estimated"] = list(cost["tokens_estimated"])
    return facts


def with_costs(table: tables.Table | None, runs: list) -> tables.Table | None:
    """The latency-per-stage table with pairs / question, $ / 1k questions and index $
    columns added, where any run has them (``runs``: the report's run summaries)."""
    if table is None:
        return None
    facts = [getattr(run, "costs", None) or {} for run in runs]
    added = [
        ("pairs / q", "pairs_per_question", lambda v: f"{v:.1f}"),
        ("$ / 1k q", "usd_per_1000", _usd),
        ("index $", "index_usd", _usd),
    ]
    priced = any(f.get("priced") for f in facts)  # $ columns only when some run was priced
    added = [
        column for column in added
        if any(f.get(column[1]) is not None for f in facts) and (column[1] != "usd_per_1000" or priced)
    ]
    if not added:
        return table
    estimated = any(f.get("tokens_estimated") for f in facts)
    for row, fact in zip(table.rows, facts):
        for _, key, show in added:
            value = fact.get(key)
            row.append("-" if value is None else show(value) + ("*" if key == "usd_per_1000" and fact.get("tokens_estimated") else ""))
    table.columns += [name for name, _, _ in added]
    if table.align:
        table.align += ["r"] * len(added)
    notes = [table.note] if table.note else []
    if any(key != "pairs_per_question" for _, key, _ in added):
        notes.append("$ from the prices in each run's cost.<stage> config; index $: embedding the corpus once")
    if estimated:
        notes.append("*: some tokens estimated (the API reported no usage)")
    table.note = "; ".join(notes)
    return table


def _usd(value: float) -> str:
    if value == 0:
        return "0"
    return f"{value:.4f}" if value < 1 else f"{value:.2f}"
