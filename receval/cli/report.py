"""Report stored runs side by side: ``receval report RUNS...``.

::

    receval report runs/2026-11-29/10-00-00            # a sweep, run dirs, a folder of sweeps
    receval report RUNS... --by kind --per-question --baseline retriever=tfidf
    receval report RUNS... --split test --fail-under hit@3=0.70 --format markdown

One row per run, in sweep order: the config values that differ between the runs,
the number of chunks, hit@1, hit@3, recall@3, MRR with its bootstrap interval,
nDCG@5 and per-question latency p50/p95. Every figure is derived from the stored
per-question columns (MRR = mean of ``rr`` over the answerable questions);
unanswerable questions (null measures) are left out and counted in the header.

- ``--metrics hit@1,rr,...`` picks the columns; ``--metric`` the one with the
  interval column, the baseline differences and the plot (default ``rr``).
- ``--by COLUMN`` (kind, split, ...): ``--by-metric`` (default hit@3) per value.
  ``--by calls``: by each question's number of search calls (a trajectory run's ``n_calls``).
- ``--per-question``: each question's rank of its first relevant section per run
  (``-`` when not retrieved); questions every run misses are marked ``x``.
- ``--baseline SELECTOR`` (a run dir, or ``key=value[,key=value]`` matching one run):
  every other run's paired difference, its interval, questions fixed and broken.
- ``--by overlap``: the derived column ``overlap`` buckets each question's ROUGE-1
  precision against its relevant sections (low / medium / high,
  ``--overlap-thresholds 0.3,0.6``), to see whether scores come from copied words.
- ``--split test`` / ``--where COLUMN=VALUE``: score only those questions.
- ``--fail-under hit@3=0.70[,rr=0.6]``: exit status 1 when a run's mean is below.
- ``--runs KEY=VALUE[,...]``: keep the runs whose saved config matches, across sweeps.
- ``--show q18,q19|misses|changed [--top 5]``: what came back for those questions.
- ``--gate BASELINE_RUN [--margin M]``: exit 1 when the paired interval of RUN -
  BASELINE lies entirely below -M; one line either way.
- ``--metrics rr@3,rouge1_p``: MRR@k and numeric columns are averaged like measures.
- ``--test randomization|t|bootstrap``: a p-value per paired difference shown (resamples
  and seed from the bootstrap settings); ``--correct holm|bh|maxt`` over every pair shown
  (``--baseline``, ``--chain``, ``--all-pairs``); each pair's Hedges' g_z with its interval
  and the smallest difference the questions can detect; ``--detect D``: questions needed
  to detect D. ``--ranks``: each run's rank with a bootstrap interval; ``--calibrate``:
  each test's A/A type I rate on null pairs built from the runs' own differences.
- ``--labels labels.jsonl`` (repeatable): re-score every run from its stored ranking with
  these labels added (``receval judge`` writes them); the runs on disk are not
  changed, a label contradicting a stored one is listed and not applied, so is one for a
  question no run has, a unit no run retrieved or labels (``--unknown-units apply``
  applies those) or a relevant grade on an unanswerable question; none applying is an
  error. Every other option works on the re-scored numbers. ``--agreement``: Kendall tau (bootstrap
  interval over questions) between the runs' order under the stored and the stored +
  added labels, whether the winner or ``select``'s choice changes
  (:mod:`receval.analysis.holes`), and how many human labels would pin the judge's error
  rate to +- ``--precision`` (default 0.05), drawn uniformly or by its grade
  (:mod:`receval.analysis.humans`). Labels of a budgeted pool (``pool --budget``) are
  a sample: the measures are estimated from it, with intervals over the judging
  (:mod:`receval.analysis.estimate`). ``--human`` labels of a sample drawn by
  ``pool --for-humans`` are corrected by prediction-powered inference over that design.
- ``--suite``: runs of the same configurations on several collections (told apart by
  their dataset fingerprint): per collection each configuration's mean and its difference
  against ``--baseline`` (default the first configuration), the difference pooled over
  collections (random effects and fixed effect, tau^2, I^2), mean over collections and
  Borda rank with two-level bootstrap and rank intervals; ``--plot``: the forest plot.
- ``--format table|markdown|csv|json|latex|html``, ``--out FILE``, ``--plot FILE.png|.svg``.
  ``csv`` is one row per run (with ``--per-question``: one row per question).

Intervals use the first run's saved ``bootstrap`` config unless ``--n-resamples``,
``--seed``, ``--level`` or ``--method`` are given; they repeat exactly. Exit status:
0, 1 for ``--fail-under``, 2 for a user error (one line).

The flags and how their values read: :mod:`receval.cli.report_flags`.
"""

from __future__ import annotations

import json
import sys

from receval.analysis import filters
from receval.analysis import show as shown_questions
from receval.analysis.breakdown import by_table, check_by, ranks_per_question, with_overlap
from receval.analysis.chain import chain_pairs
from receval.analysis.derived import with_derived
from receval.analysis.gate import gate_runs, split_baseline
from receval.analysis.holes import judged_cautions, label_agreement, ppi_intervals, relabel
from receval.analysis.humans import certifications, human_sample, judge_labels, stratified_ppi
from receval.analysis.pairs import every_pair, paired
from receval.analysis.report import Report
from receval.analysis.settings import bootstrap_settings
from receval.analysis.significance import sureness
from receval.analysis.suite import Suite
from receval.analysis.summary import check_floors, latency_cautions, measure_names, question_counts, summaries
from receval.cli import options
from receval.cli.options import FLAGS
from receval.cli.report_flags import (
    build_parser, floor_values, parse_floors, parse_metrics, parse_show, parse_thresholds,
)
from receval.cli.suite import compute_suite, write_suite
from receval.core import outputs
from receval.core.errors import RecevalError, exit_on_error
from receval.core.progress import warn
from receval.render import html, tables
from receval.render import report as rendered
from receval.render.show import to_text
from receval.results.discovery import load_runs
from receval.results.identity import mixed_datasets
from receval.results.labels import naming_of
from receval.results.stored import UNUSED_COLUMNS, Run
from receval.stats.gate import Gate, check_margin

__all__ = ["main", "report_for"]


# ----------------------------------------------------------------- what the report computes


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


def compute(args) -> Report | Gate:
    """Everything ``receval report`` shows for parsed ``args``, composed from the
    functions of :mod:`receval.analysis`: load -> runs and questions kept -> measures ->
    summaries -> pairs, chain, ``--by``, per question, ``--show``; or the ``--gate``."""
    metrics = parse_metrics(args.metrics)
    where = options.question_filters(args)
    floors = parse_floors(args.fail_under)
    show = parse_show(args.show) if args.show is not None else ("all" if args.format == "html" else None)
    margin = check_margin(args.margin, option="--margin")
    if args.agreement and not args.labels:
        raise RecevalError("--agreement compares label sets: add --labels LABELS.jsonl")
    if args.human and not args.labels:
        raise RecevalError("--human corrects a judge's labels: give the judge's with --labels")
    if args.versus and not args.agreement:
        raise RecevalError("--versus names the labels --agreement compares against: add --agreement")
    runs = original = load(args)
    unknown = getattr(args, "unknown_units", "skip")
    relabelled = relabel(runs, args.labels, unknown_units=unknown) if args.labels else None
    stored, runs = (runs, relabelled.runs) if relabelled else (runs, runs)
    if args.versus:
        stored = relabel(stored, args.versus, option="--versus", unknown_units=unknown).runs
    sampled_human = human_sample(args.human) if args.human else None
    human = (relabel(original, args.human, option="--human", unknown_units=unknown)
             if args.human and sampled_human is None else None)
    gated = None
    if args.gate is not None:
        runs, gated = split_baseline(runs, args.gate, option="--gate", narrow="--runs KEY=VALUE")
    if mixed := mixed_datasets(runs):
        warn(mixed)
    base = None
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
    if gated is not None:
        gated = with_derived(filters.filter_questions([gated], where, option="--where"), [args.metric], "--metrics")[0]
    names, metric = measure_names(runs, metrics, args.metric, metrics_option="--metrics", metric_option="--metric")
    floors = check_floors(floor_values(floors), runs, option="--fail-under")
    names += [name for name in floors if name not in names]
    if args.by is not None:
        check_by(runs, args.by, FLAGS)
        by_names = [filters.canonical_measure(m, runs, option="--by-metric") for m in by_names or ["hit@3"]]
    boot = bootstrap_settings(runs, args.n_resamples, args.seed, args.level, args.method, FLAGS["bootstrap"])
    if gated is not None:
        return gate_runs(runs[0], gated, metric, boot, margin, args.intersect, option="--intersect")
    naming = naming_of(runs)
    summary = summaries(runs, names, metric, boot, naming)
    report = Report(
        runs=summary, params=naming.columns, metrics=names, metric=metric, questions=question_counts(runs, metric),
        boot=boot, where=where, baseline=base, floors=floors,
        cautions=latency_cautions(runs, summary) + judged_cautions(runs, naming.labels, metric),
        relabelled=relabelled.cautions() if relabelled else [],
    )
    if relabelled is not None and relabelled.estimation is not None:
        relabelled.estimation.judge_intervals(runs, [metric, *names], boot.level, boot.n_resamples, boot.seed)
        report.estimation = relabelled.estimation
    if human is not None:
        report.ppi = ppi_intervals(runs, human.runs, human.questions, metric, boot.level)
        report.relabelled += [f"--human: {line}" for line in human.cautions()]
    if sampled_human is not None:
        stored_runs = {run.run_dir: run for run in filters.filter_questions(original, where, option="--where")}
        if any(run.run_dir not in stored_runs for run in runs):
            raise RecevalError("--human: the person's sample corrects the runs given as RUN; give --baseline among them")
        report.stratified_ppi = stratified_ppi(
            [stored_runs[run.run_dir] for run in runs], judge_labels(args.labels), sampled_human,
            metric, boot.level, min(boot.n_resamples, 500), boot.seed)
    if relabelled is not None and args.agreement:
        report.certify = certifications(args.labels, args.precision, boot.level)
    if relabelled is not None and args.agreement:
        report.label_agreement = label_agreement(
            with_derived(stored, [metric], "--metric"), runs, metric, boot,
            what="stored + " + ", ".join(args.versus) if args.versus else "stored labels",
        )
    if base is not None and len(runs) > 1:
        others = [run for i, run in enumerate(runs) if i != base]
        report.pairs = paired(runs[base], others, metric, boot, args.intersect, option="--intersect")
    if args.chain and len(runs) > 1:
        report.chain = chain_pairs(runs, metric, boot, args.intersect, option="--intersect")
    if args.by is not None:
        report.by, *report.by_more = [by_table(runs, args.by, m, boot, FLAGS) for m in by_names]
    if args.per_question:
        report.per_question = ranks_per_question(runs)
    if args.all_pairs and len(runs) > 1:
        report.all_pairs = every_pair(runs, metric, boot, args.intersect, option="--intersect")
    if args.detect is not None and not 0 < args.detect < float("inf"):
        raise RecevalError(f"--detect {args.detect}: give the difference to detect, a number > 0 (e.g. 0.02)")
    test = args.test or ("randomization" if args.correct or args.detect is not None else None)
    if test is not None and not report.shown_pairs():
        raise RecevalError(f"--{'test' if args.test else 'correct/--detect'}: no pair is shown; add --baseline RUN, --chain or --all-pairs")
    if test is not None or args.ranks or args.calibrate:
        report.sure = sureness(
            runs, report.shown_pairs(), metric, boot, test, args.correct,
            args.detect, args.ranks, args.calibrate, args.intersect,
        )
    if show is not None:
        report.shown = shown_questions.show(runs, naming.labels, show, args.top, FLAGS)
    return report


def report_for(argv: list[str]) -> Report | Gate | Suite:
    """What ``receval report ARGV`` computes, before it is rendered (for tests
    and for a notebook that wants the whole report)."""
    args = build_parser().parse_args(argv)
    return compute_suite(args, load(args)) if args.suite else compute(args)


def main(argv: list[str] | None = None) -> int:
    with exit_on_error():
        args = build_parser().parse_args(argv)
        inputs = [*args.runs, *([args.qrels] if args.qrels else [])]
        for flag in ("out", "plot"):
            outputs.check_output(getattr(args, flag), force=args.force, protected_dirs=inputs, flag=f"--{flag}")
        if args.suite:
            write_suite(args, compute_suite(args, load(args)))
            return 0
        report = compute(args)
        if isinstance(report, Gate):  # one line either way, exit 1 on a regression
            print(report.line)
            return report.exit_code
        if args.plot:
            rendered.plot(report, args.plot)
        if args.format == "html":
            options.write_output(html.render(report), args.out)
        elif report.shown is not None:
            text = (json.dumps([v.to_dict() for v in report.shown], indent=2) + "\n"
                    if args.format == "json" else to_text(report.shown, args.show))
            options.write_output(text, args.out)
        elif args.format == "table" and args.out is None:
            tables.print_rich(rendered.header_lines(report), rendered.tables_of(report))
        else:
            options.write_output(rendered.render(report, args.format), args.out)
        if args.plot:
            print(f"receval: wrote {args.plot}", file=sys.stderr)
        failures = report.failures()
        for line in failures:
            print(f"receval: fail-under: {line}", file=sys.stderr)
        sys.stderr.flush()
        return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
