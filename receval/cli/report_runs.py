"""How ``receval report`` reads its runs (:mod:`receval.cli.report` computes the rest):

- :func:`streamed_runs`: one at a time (:mod:`receval.analysis.streamed`): each opened
  through the door, summarised (:class:`receval.analysis.summary.Summaries`, its latency
  :class:`receval.analysis.latency.Latencies`, the header's counts), then kept slim, so
  memory holds one whole run at a time whatever their number;
- :func:`loaded_runs`: every run whole, at once, for what needs their whole tables
  (``--labels``, ``--human``, ``--show``, ``--qrels``, ``--suite``: :func:`streams`).

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
from receval.analysis.settings import bootstrap_settings
from receval.analysis.summary import Summaries, check_floors, measure_names, question_counts, summaries
from receval.analysis.units import one_label_note
from receval.cli.options import FLAGS
from receval.cli.report_flags import floor_values, parse_thresholds
from receval.core.errors import RecevalError
from receval.core.progress import warn
from receval.core.settings import BootstrapConfig
from receval.results.discovery import find_runs, load_runs
from receval.results.door import open_run
from receval.results.identity import mixed_datasets
from receval.results.labels import Naming, naming_of
from receval.results.manifest import IncompleteRun
from receval.results.stored import UNUSED_COLUMNS, Run

UNREAD = frozenset({"question"})  # the question's text: only --per-question shows it


def load(args) -> list[Run]:
    """The runs named (TREC run files beside them with ``--qrels``), each with the derived
    ``overlap`` column, kept by ``--runs``."""
    thresholds = parse_thresholds(args.overlap_thresholds)
    skip = frozenset() if args.labels else UNUSED_COLUMNS  # re-scoring reads rankings and labels
    runs = load_runs(args.runs, qrels=args.qrels, names=FLAGS, skip=skip)
    runs = [with_overlap(run, args.overlap_measure, thresholds, FLAGS) for run in runs]
    if args.select_runs is not None:
        runs = filters.pick(runs, args.select_runs, option="--runs")
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


def streams(args, show) -> bool:
    """Whether the report can read its runs one at a time (:func:`streamed_runs`): not when
    it re-scores them (``--labels``), shows what they retrieved (``--show``, HTML),
    imports TREC runs (``--qrels``) or pools collections (``--suite``)."""
    return not (args.labels or args.human or args.qrels or args.suite or show is not None)


def order(args, headers: list[Run]) -> tuple[list[Run], tuple | None]:
    """The runs kept by ``--runs``, in the report's order (``--gate``: the baseline, then
    the run gated; a ``--baseline`` directory outside them first), and the gate's pair."""
    if args.select_runs is not None:
        headers = filters.pick(headers, args.select_runs, option="--runs")
    gated = None
    if args.gate is not None:
        rest, gated_run = split_baseline(headers, args.gate, option="--gate", narrow="--runs KEY=VALUE")
        headers, gated = [streamed.header(gated_run.run_dir), *rest], (str(gated_run.run_dir), str(rest[0].run_dir))
    if args.baseline is not None and "=" not in args.baseline and Path(args.baseline).is_dir():
        inside = {run.run_dir.resolve() for run in headers}
        if Path(args.baseline).resolve() not in inside:
            headers = [streamed.header(Path(args.baseline)), *headers]
    return headers, gated


class Stream:
    """The report's runs added one at a time (:func:`streamed_runs`): the first fixes the
    measures, what later runs read and what every run keeps; each run then adds its
    summary, latency and separation, and stays slim."""

    def __init__(self, args, metrics, floors, boot: BootstrapConfig):
        self.args, self.metrics, self.floors, self.boot = args, metrics, floors, boot
        self.by_names = [args.by_metric] if args.by_metric is not None else list(metrics or [])
        self.unread = UNUSED_COLUMNS | (frozenset() if args.per_question else UNREAD)
        self.kept: list[Run] = []
        self.names: list[str] | None = None

    def _derived(self, run: Run) -> Run:
        (run,) = with_derived([run], [*(self.metrics or []), self.args.metric, *self.floors, *self.by_names],
                              option="--metrics")
        return run

    def _first(self, run: Run) -> None:
        """What the first run fixes: the measures (by canonical name), the floors, the
        ``--by`` measures, the header's counts, the columns kept and those not read later."""
        args = self.args
        self.names, self.metric = measure_names([run], self.metrics, args.metric, metrics_option="--metrics",
                                                metric_option="--metric")
        self.floor_of = check_floors(floor_values(self.floors), [run], option="--fail-under")
        self.names += [name for name in self.floor_of if name not in self.names]
        if args.by is not None:
            self.by_names = [filters.canonical_measure(m, [run], option="--by-metric")
                             for m in self.by_names or ["hit@3"]]
        self.summaries = Summaries(self.names, self.metric, self.boot)
        self.latencies = Latencies(self.metric, self.boot)
        self.separated = streamed.Separated([name for name in self.names if name != self.metric])
        self.questions = question_counts([run], self.metric)
        self.stored = frozenset(run.measure_names)
        self.judged = judged = judged_column([run])
        shown = [*self.by_names, BY_COLUMNS.get(args.by, args.by)] if args.by else []
        self.keep = {self.metric, *self.names, *([judged] if judged else []), *shown,
                     *(("kind", "split", "question") if args.per_question else ())}
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
        if self.args.by is not None:
            check_by([run], self.args.by, FLAGS)
        self.summaries.add(run)
        self.latencies.add(run)
        self.separated.add(run)
        self.kept.append(streamed.slim(run, self.keep, self.kept[0] if self.kept else None))
        by = set(self.by_names if self.args.by else ())
        self.kept = streamed.drop(self.kept, self.separated.separated - {self.metric} - by)
        return True

    def finish(self, gated) -> Prepared:
        args, kept = self.args, self.kept
        # the digest names the ids in order, their count included
        self.questions["same_questions"] = all(run.ids_digest == kept[0].ids_digest for run in kept)
        self.questions["notes"] = [note for note in [one_label_note(kept)] if note]
        naming = naming_of(kept)
        base = 0 if gated is not None and args.baseline is None else None
        if args.baseline is not None:
            base, _ = filters.select_one(kept, args.baseline, option="--baseline")
        return Prepared(kept, self.names, self.metric, self.floor_of, self.by_names, self.boot, naming,
                        self.summaries.finish(naming), self.questions, self.latencies.finish(naming.labels), base,
                        gated, self.separated.separated, self.stored)


def streamed_runs(args, metrics, where, floors) -> Prepared | None:
    """The runs read one at a time (:class:`Stream`), so memory holds one whole run at a
    time. None when the runs do not all store the measures the first one does (then
    :func:`loaded_runs` decides which to show)."""
    thresholds = parse_thresholds(args.overlap_thresholds)
    named_dirs = {Path(p).resolve() for p in args.runs}
    headers, gated = order(args, [streamed.header(d) for d in find_runs(args.runs)])
    if mixed := mixed_datasets(headers):
        warn(mixed)
    boot = bootstrap_settings(headers, args.n_resamples, args.seed, args.level, args.method, FLAGS["bootstrap"])
    stream = Stream(args, metrics, floors, boot)
    for seen in headers:
        try:
            run = open_run(seen.run_dir, skip=stream.unread)
        except IncompleteRun as error:  # a job of a sweep: skipped, as one without results is
            if seen.run_dir.resolve() in named_dirs or gated is not None:
                raise
            warn(f"{error.problems[0]}; skipped")
            continue
        streamed.check_header(run, seen)
        run = with_overlap(run, args.overlap_measure, thresholds, FLAGS)
        (run,) = filters.filter_questions([run], where, option="--where")
        if not stream.add(run):
            return None
    if not stream.kept:
        raise RecevalError("no complete runs in " + ", ".join(map(str, args.runs)) + " (every job was skipped)")
    return stream.finish(gated)


def loaded_runs(args, metrics, where, floors) -> Prepared:
    """The runs read whole, every one at once (re-scoring, ``--show``, TREC runs, a suite)."""
    runs = original = load(args)
    unknown = getattr(args, "unknown_units", "skip")
    relabelled = relabel(runs, args.labels, unknown_units=unknown) if args.labels else None
    stored, runs = (runs, relabelled.runs) if relabelled else (runs, runs)
    if args.versus:
        stored = relabel(stored, args.versus, option="--versus", unknown_units=unknown).runs
    sampled_human = human_sample(args.human) if args.human else None  # a person's stratified sample
    human = (relabel(original, args.human, option="--human", unknown_units=unknown)
             if args.human and sampled_human is None else None)
    gated = None
    if args.gate is not None:  # the baseline first, then the run gated: the report of the two
        rest, gated_run = split_baseline(runs, args.gate, option="--gate", narrow="--runs KEY=VALUE")
        runs, gated = [gated_run, *rest], (str(gated_run.run_dir), str(rest[0].run_dir))
    if mixed := mixed_datasets(runs):
        warn(mixed)
    base = 0 if gated is not None and args.baseline is None else None
    if args.baseline is not None:
        base, base_run = filters.select_one(runs, args.baseline, option="--baseline")
        if base is None:  # a run directory outside RUNS: shown first
            runs.insert(0, base_run)
            base = 0
    runs = filters.filter_questions(runs, where, option="--where")
    if relabelled is not None and args.agreement:
        stored = filters.filter_questions(stored, where, option="--where")
    if human is not None:
        human.runs = with_derived(filters.filter_questions(human.runs, where, option="--where"), [args.metric], "--metric")
    by_names = [args.by_metric] if args.by_metric is not None else list(metrics or [])
    runs = with_derived(runs, [*(metrics or []), args.metric, *floors, *by_names], option="--metrics")
    names, metric = measure_names(runs, metrics, args.metric, metrics_option="--metrics", metric_option="--metric")
    floors = check_floors(floor_values(floors), runs, option="--fail-under")
    names += [name for name in floors if name not in names]
    if args.by is not None:
        check_by(runs, args.by, FLAGS)
        by_names = [filters.canonical_measure(m, runs, option="--by-metric") for m in by_names or ["hit@3"]]
    boot = bootstrap_settings(runs, args.n_resamples, args.seed, args.level, args.method, FLAGS["bootstrap"])
    naming = naming_of(runs)
    return Prepared(runs, names, metric, floors, by_names, boot, naming, summaries(runs, names, metric, boot, naming),
                    question_counts(runs, metric), latency_order(runs, naming.labels, metric, boot), base, gated,
                    relabelled=relabelled, stored=stored, human=human, sampled_human=sampled_human,
                    original=original)

