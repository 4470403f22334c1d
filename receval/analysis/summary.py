"""Per-run means and intervals: what the report's main table shows, from stored runs.

- :func:`measure_names`: the measures asked for, by canonical name (an explicit one must
  be stored; a default one a run lacks is left out).
- :func:`summaries`: one :class:`RunSummary` per run: every measure's mean and bootstrap
  interval (one bootstrap call per question set), latency p50 / p95 with their
  order-statistic intervals (:mod:`receval.stats.quantiles`), stages, costs (money per
  1,000 questions with its bootstrap interval), notes. All of them over the questions
  the run scores on the report's measure (:func:`receval.analysis.costs.answered`): the
  header counts the others as unanswerable, left out of every mean, latency and cost.
- :func:`question_counts`: the header's counts; :func:`latency_cautions`: what makes
  the latencies misleading.
- :func:`check_floors` / :func:`failures`: means below a floor (``--fail-under``).

Each takes runs already filtered (:mod:`receval.analysis.filters`) and with their
derived columns (:mod:`receval.analysis.derived`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from receval.analysis import costs, filters
from receval.analysis.breakdown import stage_latency
from receval.analysis.units import one_label_note
from receval.core.settings import BootstrapConfig
from receval.core import machine, numeric
from receval.core.errors import RecevalError
from receval.results import configs
from receval.results.labels import Naming
from receval.results.stored import Run
from receval.results.format import LATENCY
from receval.stats.bootstrap import Interval
from receval.stats.quantiles import QuantileInterval, quantile_interval
from receval.stats.paired import LARGE
from receval.stats.pairing import grouped_intervals, mask_key

DEFAULT_METRICS = ("hit@1", "hit@3", "recall@3", "rr", "ndcg@5")
LATENCY_QUANTILES = {"p50": 0.5, "p95": 0.95}  # the latency quantiles the report shows


@dataclass
class RunSummary:
    run_dir: str
    label: str
    params: dict[str, Any]  # column -> what differs, as it applies to this run (receval.results.labels)
    n_chunks: int | None
    n_questions: int  # scored (answerable) questions, after --where
    n_unanswerable: int
    metrics: dict[str, Interval]
    latency_p50: float | None
    latency_p95: float | None
    latency: dict[str, QuantileInterval] = field(default_factory=dict)  # p50, p95 with intervals
    repeats: int = 1  # timing.repeats: each question's latency is the median of this many timings
    stages: dict[str, dict] = field(default_factory=dict)  # stage -> p50, p95, api calls per 1,000
    costs: dict = field(default_factory=dict)  # pairs, $ per 1,000 questions, index $ (receval.analysis.costs)
    settings: dict[str, Any] = field(default_factory=dict)  # its components' own keys, dotted
    notes: list[str] = field(default_factory=list)  # facts the run measured about itself
    fewer: dict[str, int] = field(default_factory=dict)  # measure -> its questions, where fewer than n_questions

    def to_dict(self) -> dict:
        """``params``: the table's columns (short names) and every setting of the run's
        components (``retriever.k1``, ``rerank.first_size``, ...): only what applies to it."""
        params = {**self.settings, **self.params}
        return {
            "run_dir": self.run_dir,
            "label": self.label,
            "params": {k: configs.jsonable(v) for k, v in params.items()},
            "n_chunks": self.n_chunks,
            "n_questions": self.n_questions,
            "n_unanswerable": self.n_unanswerable,
            "metrics": {name: {**iv.as_dict(), **({"n": self.fewer[name]} if name in self.fewer else {})}
                        for name, iv in self.metrics.items()},
            "latency_ms": {
                "p50": self.latency_p50, "p95": self.latency_p95,
                **{f"{name}_ci": [q.lo, q.hi] for name, q in self.latency.items()},
                "n": next((q.n for q in self.latency.values()), 0), "repeats": self.repeats,
            },
            "stages": self.stages,
            "costs": self.costs,
            "notes": self.notes,
        }


def measure_names(
    runs: list[Run], metrics: list[str] | None, metric: str, floors: list[str] = (),
    metrics_option: str = "metrics", metric_option: str = "metric",
) -> tuple[list[str], str]:
    """(the measures shown, in column order, and ``metric`` by its canonical name): the
    ``metrics`` asked for (None: :data:`DEFAULT_METRICS` every run stores), then
    ``metric`` and the ``floors``' measures if not among them. An unknown measure, or one
    a run does not store, is an error naming the option it came from."""
    metric = filters.canonical_measure(metric, runs, option=metric_option)
    if metrics is None:
        names = [m for m in DEFAULT_METRICS if all(m in r.table.column_names for r in runs)]
    else:
        names = [filters.canonical_measure(m, runs, option=metrics_option) for m in metrics]
    for extra in [metric, *floors]:
        if extra not in names:
            names.append(extra)
    return list(dict.fromkeys(names)), metric


def summaries(runs: list[Run], names: list[str], metric: str, boot: BootstrapConfig, naming: Naming) -> list[RunSummary]:
    """One :class:`RunSummary` per run: each of ``names`` with its interval (every run x
    measure interval, and every run's money per question, from one bootstrap call per
    question set), ``metric``'s scored questions, latency p50/p95 with their intervals,
    stages, costs and notes; ``naming`` labels the runs. Everything is over the questions
    scored on ``metric`` (:func:`receval.analysis.costs.answered`)."""
    builder = Summaries(names, metric, boot)
    for run in runs:
        builder.add(run)
    return builder.finish(naming)


class Summaries:
    """:func:`summaries` one run at a time, so a caller can drop each run's table once
    added (``report`` over runs of a million questions): :meth:`add` keeps the run's
    per-run facts and, for a mean over at most :data:`receval.stats.paired.LARGE`
    questions, its values (the bootstrap draws are shared by every run over the same
    questions, so those intervals wait for :meth:`finish`); above that, its t interval
    at once (:func:`receval.stats.pairing.grouped_intervals`): the values are not kept."""

    def __init__(self, names: list[str], metric: str, boot: BootstrapConfig):
        self.names, self.metric, self.boot = names, metric, boot
        self.items: list[tuple[bytes, np.ndarray | Interval]] = []  # values, or the interval already found
        self.money: list[int | None] = []  # per run: its index into items, or None
        self.out: list[RunSummary] = []

    def _item(self, key: bytes, values: np.ndarray) -> int:
        if len(values) > LARGE:
            (values,) = grouped_intervals([(key, values)], self.boot)
        self.items.append((key, values))
        return len(self.items) - 1

    def add(self, run: Run) -> None:
        scored = ~np.isnan(run.values(self.metric))
        key = mask_key(run.ids_digest, scored)
        fewer = {}
        for name in self.names:
            values = run.values(name)
            kept = scored & ~np.isnan(values)
            if not kept.any():
                raise RecevalError(f"{run.run_dir}: no question has a {name} value (all unanswerable?)")
            if kept.sum() < scored.sum():
                fewer[name] = int(kept.sum())
            self._item(key if kept.all() or np.array_equal(kept, scored) else mask_key(run.ids_digest, kept),
                       values[kept])
        kept = costs.answered(run, self.metric)
        spent = costs.question_money(kept)
        self.money.append(self._item(key, spent * 1000.0) if spent is not None and spent.size else None)
        latency = latency_intervals(kept, self.boot.level)
        self.out.append(RunSummary(
            run_dir=str(run.run_dir), label="", params={}, settings=configs.component_settings(run.config),
            n_chunks=run.n_chunks, n_questions=int(kept.table.num_rows),
            n_unanswerable=int(run.table.num_rows - kept.table.num_rows), metrics={},
            latency_p50=latency["p50"].value if "p50" in latency else None,
            latency_p95=latency["p95"].value if "p95" in latency else None,
            latency=latency, repeats=repeats_of(run), stages=stage_latency(kept, self.boot.level),
            costs=costs.cost_facts(kept), fewer=fewer,
            notes=run_notes(run) + [f"{name}: the mean over the {n} of the {int(scored.sum())} questions scored that have "
                                    "a value for it" for name, n in fewer.items()],
        ))

    def finish(self, naming: Naming) -> list[RunSummary]:
        """The summaries of the runs added, in order, labelled by ``naming``."""
        waiting = [i for i, (_, item) in enumerate(self.items) if not isinstance(item, Interval)]
        found = dict(zip(waiting, grouped_intervals([self.items[i] for i in waiting], self.boot)))
        intervals = [found.get(i, item) for i, (_, item) in enumerate(self.items)]
        per_run = len(self.names)
        for r, (summary, label, params) in enumerate(zip(self.out, naming.labels, naming.params)):
            start = r * per_run + sum(1 for m in self.money[:r] if m is not None)
            summary.label, summary.params = label, params
            summary.metrics = dict(zip(self.names, intervals[start:start + per_run]))
            if self.money[r] is not None:
                interval = intervals[self.money[r]]
                summary.costs["usd_per_1000_ci"] = [interval.lo, interval.hi]
        return self.out


def latency_intervals(run: Run, level: float) -> dict[str, QuantileInterval]:
    """The run's latency p50 and p95 over its rows, each with its order-statistic
    interval at ``level`` (:mod:`receval.stats.quantiles`); empty when it stores none."""
    if LATENCY not in run.table.column_names:
        return {}
    values = run.values(LATENCY)
    found = {name: quantile_interval(values, q, level) for name, q in LATENCY_QUANTILES.items()}
    return {name: q for name, q in found.items() if q is not None}


def repeats_of(run: Run) -> int:
    """How many timings each question's stored latency is the median of (run.json's
    ``timing.repeats``; 1 for a run timed once, or saved before the key existed)."""
    timing = (run.info or {}).get("timing")
    found = numeric.count(timing.get("repeats")) if isinstance(timing, Mapping) else None
    return found if found else 1


def question_counts(runs: list[Run], metric: str) -> dict:
    """The header's counts over the first run's questions: scored and unanswerable on
    ``metric``, per kind and per split (both over the scored questions, so each adds up
    to ``n_scored``), whether every run has the same questions, and what
    the labels say about the measures (:mod:`receval.analysis.units`)."""
    first = runs[0]
    scored = ~np.isnan(first.values(metric))
    kinds = Counter(k for k, ok in zip(first.strings("kind"), scored) if ok)
    splits = Counter(s for s, ok in zip(first.strings("split"), scored) if ok)  # the same questions as kinds
    same = all(len(r.ids) == len(first.ids) and r.ids_digest == first.ids_digest for r in runs)
    return {
        "n_questions": int(len(first.ids)),
        "n_scored": int(scored.sum()),
        "n_unanswerable": int((~scored).sum()),
        "kinds": {str(k): n for k, n in kinds.items()},
        "splits": {str(k): n for k, n in splits.items()},
        "same_questions": same,
        "notes": [note for note in [one_label_note(runs)] if note],  # what the labels say about the measures
    }


def floor_values(floors: Mapping[str, str], option: str = "floors") -> dict[str, float]:
    """Floors given as text (``--fail-under hit@3=0.70``) as numbers, each a mean between
    0 and 1; an error naming ``option`` otherwise."""
    out = {}
    for name, text in floors.items():
        try:
            value = float(text)
        except ValueError:
            raise RecevalError(f"{option} {name}={text}: {text!r} is not a number; use e.g. {name}=0.70") from None
        if not 0 <= value <= 1:
            raise RecevalError(f"{option} {name}={text}: floors are means between 0 and 1 (0.70, not 70)")
        out[name] = value
    return out


def check_floors(floors: Mapping[str, float], runs: list[Run], option: str = "floors") -> dict[str, float]:
    """``floors`` (measure -> a mean between 0 and 1) by canonical measure name; a floor
    that is not a number or not in [0, 1], a measure not stored, or one given twice
    under two names is an error naming ``option``."""
    out: dict[str, float] = {}
    for name, value in floors.items():
        floor = numeric.real(value)
        if floor is None:
            raise RecevalError(f"{option} {name}={value!r}: not a number; use a mean between 0 and 1, e.g. 0.70")
        if not 0 <= floor <= 1:
            raise RecevalError(f"{option} {name}={value!r}: floors are means between 0 and 1 (0.70, not 70)")
        canonical = filters.canonical_measure(name, runs, option=option)
        if canonical in out:
            raise RecevalError(
                f"{option} {name}={value!r}: {canonical} is given twice; give each metric one floor"
            )
        out[canonical] = floor
    return out


def failures(summaries: list[RunSummary], floors: Mapping[str, float]) -> list[str]:
    """One line per run and measure whose mean is below its floor, ``#<index> <label>:
    <measure> <mean> < <floor> (<run folder>)`` (none: every run clears every floor);
    ``floors`` from :func:`check_floors`."""
    lines = []
    for metric, floor in floors.items():
        for i, run in enumerate(summaries):
            mean = run.metrics[metric].mean
            if mean < floor:
                lines.append(f"#{i} {run.label}: {metric} {mean:.3f} < {floor:g} ({run.run_dir})")
    return lines


def replay_note(info: Mapping) -> str | None:
    """The mark of a run whose remote answers were replayed from the cache (``run.json``'s
    ``replayed``): its latencies and costs are the ones those answers had live."""
    replayed = info.get("replayed") if isinstance(info, Mapping) else None
    if isinstance(replayed, bool) or not isinstance(replayed, int) or replayed <= 0:
        return None
    return (f"replayed: {replayed} remote answers read from the cache; their latency and cost are "
            "the ones they had live (the replay's own wall time is in run.json)")


def run_notes(run: Run) -> list[str]:
    """What a run recorded about its own stages: chunks a dense model cut at its token
    limit (``truncated``), an ANN index's recall against exact search, and whether its
    remote answers were replayed (:func:`replay_note`)."""
    info, notes = run.info or {}, []
    replayed = replay_note(info)
    if replayed:
        notes.append(replayed)
    for stage, count in (info.get("truncated") or {}).items():
        if count:
            notes.append(f"{stage}: {count} of {run.n_chunks} chunks longer than the model's limit were cut")
    for key, value in info.items():
        if key.startswith("ann_recall@") and isinstance(value, (int, float)):
            notes.append(f"{key} {value:.3f} (the ANN index's top-k against exact search)")
    return notes


def latency_cautions(runs: list[Run], summaries: list[RunSummary]) -> list[str]:
    """A warning when the report shows latencies of runs timed under very different
    machine load (:func:`receval.core.machine.load_warning`)."""
    timed = [
        (f"#{i} {summary.label}", (run.info or {}).get("machine"))
        for i, (run, summary) in enumerate(zip(runs, summaries))
        if summary.latency_p50 is not None
    ]
    found = machine.load_warning(timed)
    return [found] if found else []
