"""The report as data: every run's means and intervals, the pairs against a
baseline, the breakdowns and the ``--fail-under`` floors, computed once from
stored runs by :func:`build_report`; :class:`Report` renders through
:mod:`receval.tables.report`."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from receval import chain, stage_costs
from receval.core import machine
from receval.bootstrap import Interval
from receval.core.errors import RecevalError
from receval.identity import mixed_datasets
from receval.results import configs, selection
from receval.results import labels as labels_mod
from receval.results import gate as gate_mod
from receval.results import show as show_mod
from receval.results.breakdown import ByTable, QuestionRow, by_table, ranks_per_question, stage_latency, with_overlap
from receval.results.derived import with_derived
from receval.results.discovery import load_runs, warn
from receval.results.units import one_label_note
from receval.results.pairing import BootSettings, Pair, bootstrap_settings, grouped_intervals, mask_key, paired
from receval.results.stored import Run
from receval.tables.report import ReportTables

OVERLAP_THRESHOLDS = (0.3, 0.6)  # low < 0.3 <= medium < 0.6 <= high
DEFAULT_METRICS = ("hit@1", "hit@3", "recall@3", "rr", "ndcg@5")


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
    stages: dict[str, dict] = field(default_factory=dict)  # stage -> p50, p95, api calls per 1,000
    costs: dict = field(default_factory=dict)  # pairs, $ per 1,000 questions, index $ (receval.stage_costs)
    settings: dict[str, Any] = field(default_factory=dict)  # its components' own keys, dotted
    notes: list[str] = field(default_factory=list)  # facts the run measured about itself

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
            "metrics": {name: iv.as_dict() for name, iv in self.metrics.items()},
            "latency_ms": {"p50": self.latency_p50, "p95": self.latency_p95},
            "stages": self.stages,
            "costs": self.costs,
            "notes": self.notes,
        }


@dataclass
class Report(ReportTables):
    """Everything the report shows, computed once; ``to_*`` only format it."""

    runs: list[RunSummary]
    params: list[str]  # what differs between the runs: the parameter columns (receval.results.labels)
    metrics: list[str]  # canonical measure names, in column order
    metric: str  # the measure with the CI column, the baseline pairs and the plot
    questions: dict  # header counts
    boot: BootSettings
    where: list[tuple[str, str]] = field(default_factory=list)
    baseline: int | None = None  # index into runs
    pairs: list[Pair] = field(default_factory=list)
    by: ByTable | None = None
    per_question: list[QuestionRow] | None = None
    floors: dict[str, float] = field(default_factory=dict)  # --fail-under
    by_more: list[ByTable] = field(default_factory=list)  # --by over further --metrics
    shown: list | None = None  # --show: receval.results.show.QuestionView per question
    gate: Any = None  # --gate: receval.results.gate.Gate
    chain: list[Pair] = field(default_factory=list)  # --chain: each run against the one before (receval.chain)
    cautions: list[str] = field(default_factory=list)  # what makes the table misleading (latencies under unlike load)

    # ------------------------------------------------------------- dict / json

    def to_dict(self) -> dict:
        out: dict[str, Any] = {
            "runs": [run.to_dict() for run in self.runs],
            "pairs": [self.pair_dict(p) for p in self.pairs],
            "params": self.params,
            "metrics": self.metrics,
            "metric": self.metric,
            "questions": self.questions,
            "where": {c: v for c, v in self.where},
            "bootstrap": self.boot.kwargs(),
            "baseline": self.runs[self.baseline].run_dir if self.baseline is not None else None,
        }
        if self.cautions:
            out["warnings"] = list(self.cautions)
        if self.floors:
            out["fail_under"] = {
                "floors": self.floors,
                "failures": self.failures(),
            }
        if self.chain:
            out["chain"] = [self.pair_dict(p) for p in self.chain]
        if self.by is not None:
            out["by"] = self.by.to_dict(self.runs)
        if self.by_more:  # --by over each further --metrics measure
            out["by_more"] = [b.to_dict(self.runs) for b in self.by_more]
        if self.per_question is not None:
            out["per_question"] = [row.to_dict() for row in self.per_question]
        return out

    @staticmethod
    def pair_dict(pair: Pair) -> dict:
        return {
            "baseline": pair.a,
            "run_dir": pair.b,
            "mean_baseline": pair.mean_a,
            "mean": pair.mean_b,
            **pair.to_dict(),
        }


    # ------------------------------------------------------------- checks and plot

    def failures(self) -> list[str]:
        """One line per run and metric whose mean is below its ``--fail-under`` floor."""
        lines = []
        for metric, floor in self.floors.items():
            for i, run in enumerate(self.runs):
                mean = run.metrics[metric].mean
                if mean < floor:
                    lines.append(
                        f"fail-under: #{i} {run.label}: {metric} {mean:.3f} < {floor:g} ({run.run_dir})"
                    )
        return lines


def _question_counts(runs: list[Run], metric: str) -> dict:
    first = runs[0]
    scored = ~np.isnan(first.values(metric))
    kinds = Counter(k for k, ok in zip(first.strings("kind"), scored) if ok)
    splits = Counter(first.strings("split"))
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


def check_floors(floors: dict[str, str], runs: list[Run]) -> dict[str, float]:
    out = {}
    for name, text in floors.items():
        try:
            value = float(text)
        except ValueError:
            raise RecevalError(
                f"--fail-under {name}={text}: {text!r} is not a number; use e.g. {name}=0.70"
            ) from None
        if not 0 <= value <= 1:
            raise RecevalError(
                f"--fail-under {name}={text}: floors are means between 0 and 1 (0.70, not 70)"
            )
        canonical = selection.canonical_measure(name, runs, option="--fail-under")
        if canonical in out:
            raise RecevalError(
                f"--fail-under {name}={text}: {canonical} is given twice; give each metric one floor"
            )
        out[canonical] = value
    return out


def run_notes(run: Run) -> list[str]:
    """What a run recorded about its own stages: chunks a dense model cut at its token
    limit (``truncated``), and an ANN index's recall against exact search."""
    info, notes = run.info or {}, []
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


def build_report(
    paths: list[str | Path | Run],
    metrics: list[str] | None = None,
    metric: str = "rr",
    by: str | None = None,
    by_metric: str | None = None,
    per_question: bool = False,
    baseline: str | None = None,
    where: list[tuple[str, str]] | None = None,
    floors: dict[str, str] | None = None,
    n_resamples: int | None = None,
    seed: int | None = None,
    level: float | None = None,
    method: str | None = None,
    intersect: bool = False,
    overlap_thresholds: tuple[float, float] = OVERLAP_THRESHOLDS,
    overlap_measure: str = "rouge1_p",
    qrels: str | Path | None = None,
    select_runs: str | None = None,
    show: list[str] | str | None = None,
    top: int = 5,
    gate: str | None = None,
    margin: float = 0.0,
    chain_steps: bool = False,
) -> Report:
    """Read the runs under ``paths`` (or take runs already loaded) and compute
    everything the report shows.

    With ``qrels``, a path that is a file is an external TREC run, scored beside the
    stored runs by the same measures (:mod:`receval.results.external`).

    ``select_runs`` keeps the runs a ``key=value`` selector matches (``--runs``);
    ``show`` (ids, ``misses``, ``changed`` or ``all``) fills :attr:`Report.shown`
    with each run's ``top`` sections; ``gate`` names the baseline the one other run
    is gated against (:mod:`receval.results.gate`), tolerating a drop of ``margin``.
    ``by_metric`` None: ``--by`` over each of ``metrics`` (hit@3 without them)."""
    where = list(where or [])
    given = list(paths) if paths and all(isinstance(p, Run) for p in paths) else load_runs(paths, qrels=qrels)
    loaded = [with_overlap(run, overlap_measure, overlap_thresholds) for run in given]
    if select_runs is not None:
        loaded = selection.pick(loaded, select_runs)
    gate_run = None
    if gate is not None:
        loaded, gate_run = gate_mod.split_baseline(loaded, gate)
    if mixed := mixed_datasets(loaded):
        warn(mixed)
    base_index = None
    if baseline is not None:
        base_index, base_run = selection.select_one(loaded, baseline)
        if base_index is None:  # a run directory outside RUNS: show it first
            loaded.insert(0, base_run)
            base_index = 0
    loaded = selection.filter_questions(loaded, where)
    by_names = [by_metric] if by_metric is not None else list(metrics or [])
    loaded = with_derived(loaded, [*(metrics or []), metric, *(floors or {}), *by_names])
    if gate_run is not None:
        gate_run = with_derived(selection.filter_questions([gate_run], where), [metric])[0]

    # measures: explicit ones must exist; missing defaults are dropped
    metric = selection.canonical_measure(metric, loaded, option="--metric")
    if metrics is None:
        names = [m for m in DEFAULT_METRICS if all(m in r.table.column_names for r in loaded)]
    else:
        names = [selection.canonical_measure(m, loaded, option="--metrics") for m in metrics]
    checked_floors = check_floors(floors or {}, loaded)
    for extra in [metric, *checked_floors]:
        if extra not in names:
            names.append(extra)
    names = list(dict.fromkeys(names))
    if by is not None:
        for run in loaded:
            if by not in run.table.column_names:
                raise RecevalError(
                    f"--by {by}: no column {by!r} in {run.run_dir}; use kind, split or "
                    "another string column"
                )
        by_names = [selection.canonical_measure(m, loaded, option="--by-metric") for m in by_names or ["hit@3"]]

    boot = bootstrap_settings(loaded, n_resamples, seed, level, method)
    naming = labels_mod.naming_of(loaded)
    labels = naming.labels

    # every run x measure interval: one bootstrap call per question set
    items = []
    for run in loaded:
        for name in names:
            values = run.values(name)
            scored = ~np.isnan(values)
            if not scored.any():
                raise RecevalError(f"{run.run_dir}: no question has a {name} value (all unanswerable?)")
            items.append((mask_key(run, scored), values[scored]))
    intervals = iter(grouped_intervals(items, boot))

    summaries = []
    for run, label, params in zip(loaded, labels, naming.params):
        metric_ivs = {name: next(intervals) for name in names}
        scored = ~np.isnan(run.values(metric))
        latency = run.values("latency_ms") if "latency_ms" in run.table.column_names else np.array([np.nan])
        p50, p95 = (
            (float(v) for v in np.nanpercentile(latency, [50, 95]))
            if not np.isnan(latency).all() else (None, None)
        )
        summaries.append(
            RunSummary(
                run_dir=str(run.run_dir),
                label=label,
                params=params,
                settings=configs.component_settings(run.config),
                n_chunks=run.n_chunks,
                n_questions=int(scored.sum()),
                n_unanswerable=int((~scored).sum()),
                metrics=metric_ivs,
                latency_p50=p50,
                latency_p95=p95,
                stages=stage_latency(run),
                costs=stage_costs.cost_facts(run),
                notes=run_notes(run),
            )
        )

    pairs: list[Pair] = []
    if base_index is not None and len(loaded) > 1:
        others = [r for i, r in enumerate(loaded) if i != base_index]
        pairs = paired(loaded[base_index], others, metric, boot, intersect)

    report = Report(
        runs=summaries,
        params=naming.columns,
        metrics=names,
        metric=metric,
        questions=_question_counts(loaded, metric),
        boot=boot,
        where=where,
        baseline=base_index,
        pairs=pairs,
        floors=checked_floors,
        cautions=latency_cautions(loaded, summaries),
    )
    if chain_steps and len(loaded) > 1:
        report.chain = chain.chain_pairs(loaded, metric, boot, intersect)
    if by is not None:
        report.by, *report.by_more = [by_table(loaded, by, m, boot) for m in by_names]
    if per_question:
        report.per_question = ranks_per_question(loaded)
    if show is not None:
        report.shown = show_mod.show(loaded, labels, show, top)
    if gate_run is not None:
        report.gate = gate_mod.gate_runs(loaded[0], gate_run, metric, boot, margin, intersect)
    return report
