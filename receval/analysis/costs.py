"""What a stored run costs, read from it only (its ``latency_ms``, ``pairs_scored`` and
``cost_usd`` columns and ``run.json``'s ``cost`` and ``stages``; see :mod:`receval.measures.cost`);
nothing is re-priced here.

- :func:`cost_facts`: what the report shows beside the latency per stage: pairs a
  re-ranker scored, money per 1,000 questions and the one-off index cost.
- :func:`answered`: a run over the questions the report scores (unanswerable ones, with
  no value of the report's measure, left out), which every mean, latency and cost of
  the report is taken over.
- :func:`costs_of`: each cost ``select --prefer`` can rank by (``p50_ms``, ``chunks``,
  ``money``); :func:`latencies` for the noise rule of :mod:`receval.stats.cheaper`.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from receval.clients.calls import live_calls
from receval.core.errors import RunError
from receval.core.vocabulary import COST as COLUMN, PAIRS
from receval.results.format import LATENCY
from receval.results.stored import Run


def answered(run: Run, metric: str) -> Run:
    """``run`` over the questions it scores on ``metric`` (the report's header counts
    the others as unanswerable and leaves them out): the one view the report's means,
    latencies and costs are taken over."""
    scored = ~np.isnan(run.values(metric))
    return run if scored.all() else run.filtered(run.table.filter(pa.array(scored)))


def cost_facts(run: Run) -> dict:
    """Per run: mean pairs scored per question, US dollars per 1,000 questions (in all
    and per stage), the index cost, and the stages whose tokens were estimated; over
    the run's rows (the report passes :func:`answered`)."""
    names = run.table.column_names
    facts: dict = {}
    if PAIRS in names:
        values = run.values(PAIRS)
        facts["pairs_per_question"] = float(np.nanmean(values)) if values.size else None
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


def n_stages(run: Run) -> int:
    stages = run.info.get("stages")
    if isinstance(stages, dict) and stages:
        return len(stages)
    return max(1, sum(c.startswith(LATENCY + ".") for c in run.table.column_names))


def p50_ms(run: Run) -> float | None:
    if LATENCY not in run.table.column_names:
        return None
    values = run.values(LATENCY)
    values = values[~np.isnan(values)]
    return float(np.median(values)) if values.size else None


def money(run: Run) -> float | None:
    """The one place money per 1,000 questions is computed: US dollars per 1,000 questions
    from the per-question cost columns (:func:`question_money`); 0 for a run whose stages
    made no API call; None when a paid run recorded no cost."""
    values = question_money(run)
    if values is not None:
        return float(np.mean(values) * 1000) if values.size else None
    stages = run.info.get("stages")
    if isinstance(stages, dict) and stages and all(not live_calls(s) for s in stages.values()):
        return 0.0
    return None


def question_money(run: Run) -> np.ndarray | None:
    """Each question's US dollars (``cost_usd``, else the sum of ``cost_usd.<stage>``;
    missing counts as 0); None when the run stores no cost column. What money per 1,000
    questions and its interval over questions (:mod:`receval.analysis.summary`) are of."""
    names = [c for c in run.table.column_names if c == COLUMN or c.startswith(COLUMN + ".")]
    if COLUMN in names:
        names = [COLUMN]
    if not names:
        return None
    return np.asarray(sum(np.nan_to_num(run.values(c)) for c in names), dtype=np.float64)


def costs_of(run: Run) -> dict[str, float | None]:
    return {"p50_ms": p50_ms(run), "chunks": run.n_chunks, "money": money(run)}


def latencies(runs: list[Run], option: str = "prefer=p50_ms") -> list[np.ndarray]:
    """Each run's per-question latencies (ms), none missing; a run without any is an
    error naming ``option`` (how the caller chose latency as the cost)."""
    out = []
    for run in runs:
        latency = run.values(LATENCY)
        latency = latency[~np.isnan(latency)]
        if latency.size == 0:
            raise RunError(f"{option}: {run.run_dir} has no latency recorded; choose chunks or money")
        out.append(latency)
    return out
