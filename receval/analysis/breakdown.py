"""Per-question breakdowns of stored runs: the derived ``overlap`` bucket column,
latency per stage, one interval per value of a column (``--by kind``) and each
question's rank per run (``--per-question``).

Overlap buckets (:func:`overlap_bucket`, of the stored ROUGE precision
:mod:`receval.measures.overlap` computes): ``low`` below the first threshold,
``medium`` up to (not including) the second, ``high`` from the second on."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from receval.stats.bootstrap import Interval
from receval.clients.calls import live_calls
from receval.core import numeric
from receval.core.errors import RecevalError, named
from receval.core.settings import BootstrapConfig
from receval.stats.pairing import grouped_intervals, mask_key
from receval.results.stored import Run
from receval.results.format import LATENCY, OVERLAP
from receval.stats.quantiles import quantile_interval

MAX_BY_VALUES = 32  # --by needs a column with a few values (kind, split), not question ids
#: ``--by`` names that group by another stored column: ``calls`` by each question's
#: number of search calls (runs whose retriever answered with trajectories).
BY_COLUMNS = {"calls": "n_calls"}


BUCKETS = pa.array(["low", "medium", "high"])


def _thresholds(thresholds: tuple[float, float]) -> tuple[float, float]:
    low, high = (float(t) for t in thresholds)
    if not 0.0 <= low <= high <= 1.0:
        raise ValueError(f"overlap thresholds {tuple(thresholds)}: give two values 0 <= low <= high <= 1")
    return low, high


def overlap_bucket(
    values: Iterable[float | None], thresholds: tuple[float, float] = (0.3, 0.6)
) -> list[str | None]:
    """``low`` (< thresholds[0]), ``medium`` (< thresholds[1]) or ``high``; None stays None."""
    low, high = _thresholds(thresholds)
    out: list[str | None] = []
    for value in values:
        if value is None or value != value:  # None or NaN
            out.append(None)
        elif value < low:
            out.append("low")
        elif value < high:
            out.append("medium")
        else:
            out.append("high")
    return out


@dataclass
class ByTable:
    column: str
    metric: str
    values: list[str]
    counts: list[int]  # scored questions per value (first run)
    cells: list[list[Interval | None]]  # [run][value]

    def to_dict(self, runs: list) -> dict:
        return {
            "column": self.column,
            "metric": self.metric,
            "values": [
                {"value": v, "n_questions": n} for v, n in zip(self.values, self.counts)
            ],
            "runs": [
                {
                    "run_dir": run.run_dir,
                    "label": run.label,
                    "values": {
                        v: (cell.as_dict() if cell is not None else None)
                        for v, cell in zip(self.values, row)
                    },
                }
                for run, row in zip(runs, self.cells)
            ],
        }


@dataclass
class QuestionRow:
    question_id: str
    kind: str | None
    split: str | None
    question: str | None
    ranks: list[int | None]  # per run; None: not retrieved (or absent, see below)
    absent: list[int]  # runs that do not have this question
    missed_by_all: bool

    def to_dict(self) -> dict:
        out = {
            "question_id": self.question_id,
            "kind": self.kind,
            "split": self.split,
            "question": self.question,
            "ranks": self.ranks,
            "missed_by_all": self.missed_by_all,
        }
        if self.absent:
            out["absent"] = self.absent
        return out



def with_overlap(run: Run, measure: str, thresholds: tuple[float, float], names: Mapping[str, str] | None = None) -> Run:
    """Add the derived column ``overlap`` (low / medium / high ``measure`` of each
    question against its relevant sections), for ``--by overlap`` and ``--where``."""
    if measure not in OVERLAP:
        raise RecevalError(f"{named(names, 'overlap_measure')} {measure}: use one of {', '.join(OVERLAP)}")
    if measure not in run.table.column_names or "overlap" in run.table.column_names:
        return run
    low, high = _thresholds(thresholds)
    values = run.values(measure)  # null -> NaN: no bucket
    codes = np.where(values < low, 0, np.where(values < high, 1, 2)).astype(np.int8)
    buckets = pa.DictionaryArray.from_arrays(pa.array(codes, mask=np.isnan(values)), BUCKETS).cast(pa.string())
    return run.filtered(run.table.append_column("overlap", buckets))


def check_by(runs: list[Run], column: str, names: Mapping[str, str] | None = None) -> None:
    """Every run must have ``column`` (``--by``): an error naming it otherwise."""
    stored = BY_COLUMNS.get(column, column)
    for run in runs:
        if stored not in run.table.column_names:
            hint = ("; --by calls needs runs whose retriever answered with its search calls" if column in BY_COLUMNS
                    else "; use kind, split or another string column")
            raise RecevalError(f"{named(names, 'by')} {column}: no column {stored!r} in {run.run_dir}{hint}")


def stage_latency(run: Run, level: float = 0.95) -> dict[str, dict]:
    """Per stage: p50 / p95 ms with their intervals at ``level`` (order statistics,
    :mod:`receval.stats.quantiles`) over the run's rows (the report passes
    :func:`receval.analysis.costs.answered`), and API calls per 1,000 questions: the mean
    of the stage's ``requests.<stage>`` column over those rows when it is stored, else
    the requests its answers took live over all the run's questions (run.json)."""
    facts = run.info.get("stages", {}) if isinstance(run.info.get("stages"), dict) else {}
    n_questions = numeric.count(run.info.get("n_questions")) or max(run.table.num_rows, 1)
    out = {}
    for name in run.table.column_names:
        if not name.startswith(f"{LATENCY}."):
            continue
        stage = name[len(LATENCY) + 1:]
        values = run.values(name)
        p50, p95 = (quantile_interval(values, q, level) for q in (0.5, 0.95))
        requests = f"requests.{stage}"
        if requests in run.table.column_names and run.table.num_rows:
            per_1000 = 1000.0 * float(np.mean(np.nan_to_num(run.values(requests))))
        else:
            # a replayed answer counts the request it took live
            per_1000 = 1000.0 * live_calls(facts.get(stage)) / n_questions
        out[stage] = {
            "p50": None if p50 is None else p50.value, "p95": None if p95 is None else p95.value,
            "p50_ci": None if p50 is None else [p50.lo, p50.hi], "p95_ci": None if p95 is None else [p95.lo, p95.hi],
            "api_calls_per_1000": per_1000,
        }
    return out


def by_table(
    runs: list[Run], column: str, metric: str, boot: BootstrapConfig, names: Mapping[str, str] | None = None
) -> ByTable:
    """One interval per run and value of ``column`` (a column with a few values: kind,
    split, overlap), over the questions that value scores on ``metric``."""
    stored = BY_COLUMNS.get(column, column)
    values: list[str] = []
    for run in runs:
        for v in run.strings(stored):
            if v is not None and str(v) not in values:
                values.append(str(v))
    if stored != column:  # counts in their natural order
        values.sort(key=int)
    if column == "overlap":  # buckets in their natural order
        values = [v for v in ("low", "medium", "high") if v in values] + [v for v in values if v not in ("low", "medium", "high")]
    if len(values) > MAX_BY_VALUES:
        raise RecevalError(
            f"{named(names, 'by')} {column}: {len(values)} distinct values; pick a column with a few "
            f"(at most {MAX_BY_VALUES}), e.g. kind or split"
        )
    items, where_item = [], {}
    counts = [0] * len(values)
    for r, run in enumerate(runs):
        scores = run.values(metric)
        col = np.asarray([None if v is None else str(v) for v in run.strings(stored)], dtype=object)
        for j, v in enumerate(values):
            mask = (col == v) & ~np.isnan(scores)
            if r == 0:
                counts[j] = int(mask.sum())
            if mask.any():
                where_item[(r, j)] = len(items)
                items.append((mask_key(run.ids_digest, mask), scores[mask]))
    intervals = grouped_intervals(items, boot)
    keep = [j for j in range(len(values)) if any((r, j) in where_item for r in range(len(runs)))]
    cells = [
        [intervals[where_item[(r, j)]] if (r, j) in where_item else None for j in keep]
        for r in range(len(runs))
    ]
    return ByTable(
        column=column, metric=metric, values=[values[j] for j in keep],
        counts=[counts[j] for j in keep], cells=cells,
    )


def ranks_per_question(runs: list[Run]) -> list[QuestionRow]:
    """Answerable questions (a non-null rr in some run), first run's order first."""
    order: list[str] = []
    info: dict[str, tuple] = {}
    per_run: list[dict[str, int | None]] = []
    for run in runs:
        scored = ~np.isnan(run.values("rr"))
        ranks = run.values("first_relevant_rank")
        kinds, splits, texts = run.strings("kind"), run.strings("split"), run.strings("question")
        mapping: dict[str, int | None] = {}
        for i, qid in enumerate(run.ids):
            if not scored[i]:
                continue
            mapping[qid] = None if np.isnan(ranks[i]) else int(ranks[i])
            if qid not in info:
                info[qid] = (kinds[i], splits[i], texts[i])
                order.append(qid)
        per_run.append(mapping)
    rows = []
    for qid in order:
        ranks = [m.get(qid) for m in per_run]
        absent = [i for i, m in enumerate(per_run) if qid not in m]
        present = [r for i, r in enumerate(ranks) if i not in absent]
        kind, split, text = info[qid]
        rows.append(QuestionRow(qid, kind, split, text, ranks, absent, all(r is None for r in present)))
    return rows
