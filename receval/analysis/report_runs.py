"""How a report reads its runs (:mod:`receval.analysis.compose` computes the rest):

- :func:`streamed_runs`: one at a time (:mod:`receval.analysis.streamed`): each opened
  through the door, summarised (:class:`receval.analysis.summary.Summaries`, its latency
  :class:`receval.analysis.latency.Latencies`, the header's counts), then kept slim, so
  memory holds one whole run at a time whatever their number;
- :func:`loaded_runs`: every run whole, at once, for what needs their whole tables
  (``--labels``, ``--human``, ``--show``, ``--qrels``, ``--suite``: :func:`streams`).

Both read :class:`receval.analysis.report.ReportOptions`, the report's flags as plain values.

Both give a :class:`Prepared`: the same report either way (``tests/test_report_memory.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from receval.analysis import filters, streamed
from receval.analysis.breakdown import BY_COLUMNS, check_by, with_overlap
from receval.analysis.derived import with_derived
from receval.analysis.gate import split_baseline
from receval.analysis.holes import judged_column, relabel
from receval.analysis.humans import human_sample
from receval.analysis.latency import Latencies, latency_order
from receval.analysis.settings import BOOTSTRAP_ARGS, bootstrap_settings
from receval.analysis.summary import Summaries, check_floors, measure_names, question_counts, summaries
from receval.analysis.units import one_label_note
from receval.analysis.report import ReportOptions
from receval.analysis.summary import floor_values
from receval.core.errors import RecevalError, named
from receval.core.progress import warn
from receval.core.settings import BootstrapConfig
from receval.results.discovery import load_runs
from receval.results.door import header, open_run
from receval.results.identity import mixed_datasets
from receval.results.labels import Naming, naming_of
from receval.results.manifest import IncompleteRun
from receval.results.stored import UNUSED_COLUMNS, Run

UNREAD = frozenset({"question"})  # the question's text: only --per-question shows it


def load(options: ReportOptions) -> list[Run]:
    """The runs named (TREC run files beside them with ``--qrels``), each with the derived
    ``overlap`` column, kept by ``--runs``."""
    skip = frozenset() if options.labels else UNUSED_COLUMNS  # re-scoring reads rankings and labels
    runs = load_runs(list(options.runs), qrels=options.qrels, names=options.names, skip=skip)
    runs = [with_overlap(run, options.overlap_measure, options.overlap_thresholds, options.names) for run in runs]
    if options.select_runs is not None:
        runs = filters.pick(runs, options.select_runs, option="--runs")
    return runs


@dataclass
class Prepared:
    """The runs a report is over and what it computed of each (:func:`loaded_runs`, :func:`streamed_runs`)."""

    runs: list[Run]  # whole, or slim (receval.analysis.streamed.slim)
    names: list[str]
    metric: str
    floors: dict[str, float]
    by_names: list[str]
    boot: BootstrapConfig
    naming: Naming
    summary: list
    questions: dict
    latency: object
    base: int | None = None
    gated: tuple[str, str] | None = None
    separated: frozenset[str] = frozenset()
    stored_measures: frozenset[str] | None = None  # the measures the runs store (slim runs hold fewer)
    relabelled: object = None
    stored: list[Run] | None = None
    human: object = None
    sampled_human: object = None  # --human as a person's stratified sample (loaded runs only)
    original: list[Run] | None = None  # the runs as stored, before --labels (loaded runs only)


def streams(options: ReportOptions) -> bool:
    """Whether the report can read its runs one at a time (:func:`streamed_runs`): not when
    it re-scores them (``--labels``), shows what they retrieved (``--show``, HTML),
    imports TREC runs (``--qrels``, or a file given without it: the error says so) or pools
    collections (``--suite``)."""
    return not (options.labels or options.human or options.qrels or options.suite or options.show is not None
                or any(Path(path).is_file() for path in options.runs))  # a TREC run file: read with the rest


def order(options: ReportOptions, headers: list[Run]) -> tuple[list[Run], tuple | None]:
    """The runs kept by ``--runs``, in the report's order (``--gate``: the baseline, then
    the run gated; a ``--baseline`` directory outside them first), and the gate's pair."""
    if options.select_runs is not None:
        headers = filters.pick(headers, options.select_runs, option="--runs")
    gated = None
    if options.gate is not None:
        rest, gated_run = split_baseline(headers, options.gate, option="--gate", narrow="--runs KEY=VALUE")
        headers, gated = [header(gated_run.run_dir), *rest], (str(gated_run.run_dir), str(rest[0].run_dir))
    if options.baseline is not None and "=" not in options.baseline and Path(options.baseline).is_dir():
        inside = {run.run_dir.resolve() for run in headers}
        if Path(options.baseline).resolve() not in inside:
            headers = [header(Path(options.baseline)), *headers]
    return headers, gated


def _bootstrap_flags(options: ReportOptions) -> str:
    """What the bootstrap overrides are called in a warning (the flags, on the command line)."""
    return named(options.names, "bootstrap", BOOTSTRAP_ARGS)


class Stream:
    """The report's runs added one at a time (:func:`streamed_runs`): the first fixes the
    measures, what later runs read and what every run keeps; each run then adds its
    summary, latency and separation, and stays slim."""

    def __init__(self, options: ReportOptions, boot: BootstrapConfig):
        self.options, self.metrics, self.floors, self.boot = options, options.metrics, options.floors, boot
        self.by_names = [options.by_metric] if options.by_metric is not None else list(self.metrics or [])
        self.unread = UNUSED_COLUMNS | (frozenset() if options.per_question else UNREAD)
        self.kept: list[Run] = []
        self.names: list[str] | None = None

    def _derived(self, run: Run) -> Run:
        (run,) = with_derived([run], [*(self.metrics or []), self.options.metric, *self.floors, *self.by_names],
                              option="--metrics")
        return run

    def _first(self, run: Run) -> None:
        """What the first run fixes: the measures (by canonical name), the floors, the
        ``--by`` measures, the header's counts, the columns kept and those not read later."""
        options = self.options
        self.names, self.metric = measure_names([run], self.metrics, options.metric, metrics_option="--metrics",
                                                metric_option="--metric")
        self.floor_of = check_floors(floor_values(self.floors, option="--fail-under"), [run], option="--fail-under")
        self.names += [name for name in self.floor_of if name not in self.names]
        if options.by is not None:
            self.by_names = [filters.canonical_measure(m, [run], option="--by-metric")
                             for m in self.by_names or ["hit@3"]]
        self.summaries = Summaries(self.names, self.metric, self.boot)
        self.latencies = Latencies(self.metric, self.boot)
        self.separated = streamed.Separated([name for name in self.names if name != self.metric])
        self.questions = question_counts([run], self.metric)
        self.stored = frozenset(run.measure_names)
        self.judged = judged = judged_column([run])
        shown = [*self.by_names, BY_COLUMNS.get(options.by, options.by)] if options.by else []
        self.keep = {self.metric, *self.names, *([judged] if judged else []), *shown,
                     *(("kind", "split", "question") if options.per_question else ())}
        needed = {*self.keep, *self.floor_of, "rr"}  # rr@k is derived from rr
        self.unread |= frozenset(m for m in run.measure_names if m not in needed)  # later runs' measures not shown

    def add(self, run: Run) -> bool:
        """Add ``run`` (opened, questions kept); False when it lacks a measure the first one
        fixed, or its ``judged@k`` (the loaded path then picks those every run stores)."""
        run = self._derived(run)
        if self.names is None:
            self._first(run)
        elif any(name not in run.table.column_names for name in self.names) or judged_column([run]) != self.judged:
            return False
        if self.options.by is not None:
            check_by([run], self.options.by, self.options.names)
        self.summaries.add(run)
        self.latencies.add(run)
        self.separated.add(run)
        self.kept.append(streamed.slim(run, self.keep, self.kept[0] if self.kept else None))
        by = set(self.by_names if self.options.by else ())
        self.kept = streamed.drop(self.kept, self.separated.separated - {self.metric} - by)
        return True

    def finish(self, gated) -> Prepared:
        options, kept = self.options, self.kept
        # the digest names the ids in order, their count included
        self.questions["same_questions"] = all(run.ids_digest == kept[0].ids_digest for run in kept)
        self.questions["notes"] = [note for note in [one_label_note(kept)] if note]
        naming = naming_of(kept)
        base = 0 if gated is not None and options.baseline is None else None
        if options.baseline is not None:
            base, _ = filters.select_one(kept, options.baseline, option="--baseline")
        return Prepared(kept, self.names, self.metric, self.floor_of, self.by_names, self.boot, naming,
                        self.summaries.finish(naming), self.questions, self.latencies.finish(naming.labels), base,
                        gated, self.separated.separated, self.stored)


def streamed_runs(options: ReportOptions) -> Prepared | None:
    """The runs read one at a time (:class:`Stream`), so memory holds one whole run at a
    time. None when the runs do not all store the measures the first one does (then
    :func:`loaded_runs` decides which to show)."""
    thresholds, where = options.overlap_thresholds, options.where
    named_dirs = {Path(p).resolve() for p in options.runs}
    headers, gated = order(options, load_runs(list(options.runs), headers=True))
    if mixed := mixed_datasets(headers):
        warn(mixed)
    boot = bootstrap_settings(headers, options.n_resamples, options.seed, options.level, options.method,
                              _bootstrap_flags(options))
    stream = Stream(options, boot)
    for seen in headers:
        try:
            run = open_run(seen.run_dir, skip=stream.unread)
        except IncompleteRun as error:  # a job of a sweep: skipped, as one without results is
            if seen.run_dir.resolve() in named_dirs or gated is not None:
                raise
            warn(f"{error.problems[0]}; skipped")
            continue
        streamed.check_header(run, seen)
        run = with_overlap(run, options.overlap_measure, thresholds, options.names)
        (run,) = filters.filter_questions([run], where, option="--where")
        if not stream.add(run):
            return None
    if not stream.kept:
        raise RecevalError("no complete runs in " + ", ".join(map(str, options.runs)) + " (every job was skipped)")
    return stream.finish(gated)


def loaded_runs(options: ReportOptions) -> Prepared:
    """The runs read whole, every one at once (re-scoring, ``--show``, TREC runs, a suite)."""
    metrics, where, floors = options.metrics, options.where, options.floors
    runs = original = load(options)
    unknown = options.unknown_units
    relabelled = relabel(runs, options.labels, unknown_units=unknown) if options.labels else None
    stored, runs = (runs, relabelled.runs) if relabelled else (runs, runs)
    if options.versus:
        stored = relabel(stored, options.versus, option="--versus", unknown_units=unknown).runs
    sampled_human = human_sample(options.human) if options.human else None  # a person's stratified sample
    human = (relabel(original, options.human, option="--human", unknown_units=unknown)
             if options.human and sampled_human is None else None)
    gated = None
    if options.gate is not None:  # the baseline first, then the run gated: the report of the two
        rest, gated_run = split_baseline(runs, options.gate, option="--gate", narrow="--runs KEY=VALUE")
        runs, gated = [gated_run, *rest], (str(gated_run.run_dir), str(rest[0].run_dir))
    if mixed := mixed_datasets(runs):
        warn(mixed)
    base = 0 if gated is not None and options.baseline is None else None
    if options.baseline is not None:
        base, base_run = filters.select_one(runs, options.baseline, option="--baseline")
        if base is None:  # a run directory outside RUNS: shown first
            runs.insert(0, base_run)
            base = 0
    runs = filters.filter_questions(runs, where, option="--where")
    if relabelled is not None and options.agreement:
        stored = filters.filter_questions(stored, where, option="--where")
    if human is not None:
        human.runs = with_derived(filters.filter_questions(human.runs, where, option="--where"), [options.metric], "--metric")
    by_names = [options.by_metric] if options.by_metric is not None else list(metrics or [])
    runs = with_derived(runs, [*(metrics or []), options.metric, *floors, *by_names], option="--metrics")
    names, metric = measure_names(runs, metrics, options.metric, metrics_option="--metrics", metric_option="--metric")
    floors = check_floors(floor_values(floors, option="--fail-under"), runs, option="--fail-under")
    names += [name for name in floors if name not in names]
    if options.by is not None:
        check_by(runs, options.by, options.names)
        by_names = [filters.canonical_measure(m, runs, option="--by-metric") for m in by_names or ["hit@3"]]
    boot = bootstrap_settings(runs, options.n_resamples, options.seed, options.level, options.method,
                              _bootstrap_flags(options))
    naming = naming_of(runs)
    return Prepared(runs, names, metric, floors, by_names, boot, naming, summaries(runs, names, metric, boot, naming),
                    question_counts(runs, metric), latency_order(runs, naming.labels, metric, boot), base, gated,
                    relabelled=relabelled, stored=stored, human=human, sampled_human=sampled_human,
                    original=original)

