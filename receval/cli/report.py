"""Report stored runs side by side: ``receval report RUNS...``.

::

    receval report runs/2026-11-29/10-00-00            # a sweep, run dirs, a folder of sweeps
    receval report RUNS... --by kind --per-question --baseline retriever=tfidf
    receval report RUNS... --split test --fail-under hit@3=0.70 --format markdown

One row per run, in sweep order: the config values that differ between the runs,
the number of chunks, hit@1, hit@3, recall@3, MRR with its bootstrap interval and
nDCG@5; then each run's latency p50 and p95 with their order-statistic intervals and
the runs it is shown faster than, by ``select``'s one rule (stages first: a pipeline is
never faster than one it contains; the clock only beyond 10% and the sweep's noise),
latency per stage and cost per question with their intervals. Every figure is derived
from the stored per-question columns (MRR = mean of ``rr`` over the answerable
questions); unanswerable questions (null measures) are left out of every mean, latency
and cost, and counted in the header.

- ``--metrics hit@1,rr,...`` picks the columns; ``--metric`` the one with the
  interval column, the baseline differences and the plot (default ``rr``).
- ``--by COLUMN`` (kind, split, ...): ``--by-metric`` (default hit@3) per value.
  ``--by calls``: by each question's number of search calls (a trajectory run's ``n_calls``).
- ``--per-question``: each question's rank of its first relevant section per run
  (``-`` when not retrieved); questions every run misses are marked ``x``.
- ``--baseline SELECTOR`` (a run dir, or ``key=value[,key=value]`` matching one run):
  every other run's paired difference with its interval, p-value and verdict (better,
  worse, not shown: :mod:`receval.stats.paired`), questions fixed and broken.
- ``--by overlap``: the derived column ``overlap`` buckets each question's ROUGE-1
  precision against its relevant sections (low / medium / high,
  ``--overlap-thresholds 0.3,0.6``), to see whether scores come from copied words.
- ``--split test`` / ``--where COLUMN=VALUE``: score only those questions.
- ``--fail-under hit@3=0.70[,rr=0.6]``: exit status 1 when a run's mean is below.
- ``--runs KEY=VALUE[,...]``: keep the runs whose saved config matches, across sweeps.
- ``--show q18,q19|misses|changed [--top 5]``: what came back for those questions.
- ``--gate BASELINE_RUN [--margin M]``: the verdict read off the paired interval of
  RUN - BASELINE (:mod:`receval.stats.gate`): pass (exit 0), fail (exit 1) or undecided
  (exit 3), one line first, then the report of the two runs, in every format (JSON
  ``gate``, CSV ``gate_*`` columns); with ``--out`` the line goes to stderr too.
- ``--metrics rr@3,rouge1_p``: MRR@k and numeric columns are averaged like measures.
- Every pair shown (``--baseline``, ``--chain``, ``--all-pairs``) carries its p-value and
  verdict from one paired procedure, its interval the differences that procedure keeps
  (resamples and seed from the bootstrap settings). ``--correct holm|bh``: the pairs shown
  as one family, p-values adjusted and intervals at the corrected levels; ``--effects``:
  each pair's Hedges' g_z with its interval and the smallest difference the questions can
  detect; ``--detect D``: questions needed to detect D. ``--ranks``: each run's rank with
  a bootstrap interval; ``--calibrate``: the procedure's A/A type I rate on null pairs
  built from the runs' own differences.
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
  ``csv`` is one row per run (with ``--per-question``: one row per question; with
  ``--show``: one row per result shown, and ``--show`` in Markdown is its text fenced).

When the questions cannot decide between the runs (no paired difference on ``--metric``
reaches its minimum detectable difference, or a measure shown sits at its ceiling or
floor in every run), a header line says so and suggests the fix; ``undecided`` in the
JSON (:mod:`receval.analysis.decidable`).

The runs are read one at a time (:mod:`receval.analysis.streamed`): each is summarised,
then only the columns the comparisons across runs need stay, so memory holds one whole run
at a time (``--labels``, ``--human``, ``--show``, ``--qrels`` and ``--suite`` read every run
whole). A mean over more than 10,000 questions gets the t interval of the mean, as the
header says (:func:`receval.stats.pairing.grouped_intervals`).

Intervals use the first run's saved ``bootstrap`` config unless ``--n-resamples``,
``--seed``, ``--level`` or ``--method`` are given; they repeat exactly. Exit status:
0, 1 for ``--fail-under`` or a failed ``--gate``, 3 for an undecided ``--gate``, 2 for a
user error (one line).

The flags and how their values read: :mod:`receval.cli.report_flags`.
"""

from __future__ import annotations

import sys

from receval.analysis import filters, show as shown_questions
from receval.analysis.breakdown import by_table, ranks_per_question
from receval.analysis.chain import chain_pairs
from receval.analysis.decidable import undecided
from receval.analysis.costs import answered
from receval.analysis.derived import with_derived
from receval.analysis.gate import gate_runs
from receval.analysis.holes import judged_cautions, label_agreement, ppi_intervals
from receval.analysis.humans import certifications, judge_labels, stratified_ppi
from receval.analysis.pairs import every_pair, paired
from receval.analysis.report import Report
from receval.analysis.significance import correct_family, sureness
from receval.analysis.suite import Suite
from receval.analysis.summary import latency_cautions
from receval.cli import options
from receval.cli.options import FLAGS
from receval.cli.report_flags import build_parser, parse_floors, parse_metrics, parse_show
from receval.cli.report_runs import load, loaded_runs, streamed_runs, streams
from receval.cli.suite import compute_suite, write_suite
from receval.core import outputs
from receval.core.errors import RecevalError, exit_on_error
from receval.render import html, tables
from receval.render import report as rendered
from receval.render import show as shown_views
from receval.stats.gate import check_margin

__all__ = ["main", "report_for"]

def compute(args) -> Report:
    """Everything ``receval report`` shows for parsed ``args``, composed from the
    functions of :mod:`receval.analysis`: load -> runs and questions kept -> measures ->
    summaries -> the ``--gate``, pairs, chain, ``--by``, per question, ``--show``. With
    ``--gate`` the report is of the baseline and the run gated, the baseline first and
    the pairs against it (unless ``--baseline`` names another), and ``report.gate`` holds
    the verdict."""
    if args.test is not None:
        raise RecevalError(
            f"--test {args.test}: every pair shown now has its p-value and verdict from one paired procedure "
            "(the sign-flip randomization test and the interval it keeps); drop --test (--effects adds g_z)"
        )
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
    found = streamed_runs(args, metrics, where, floors) if streams(args, show) else None
    found = found or loaded_runs(args, metrics, where, floors)
    runs, names, metric, boot, naming = found.runs, found.names, found.metric, found.boot, found.naming
    base, gated, summary, relabelled, human = found.base, found.gated, found.summary, found.relabelled, found.human
    sampled_human, original = found.sampled_human, found.original
    report = Report(
        runs=summary, params=naming.columns, metrics=names, metric=metric, questions=found.questions,
        boot=boot, where=where, baseline=base, floors=found.floors,
        cautions=latency_cautions(runs, summary) + judged_cautions(runs, naming.labels, metric),
        relabelled=relabelled.cautions() if relabelled else [],
        latency=found.latency,
    )
    report.undecided = undecided(runs, names, metric, 1.0 - boot.level, kinds=report.questions["kinds"],
                                  n_resamples=boot.n_resamples, seed=boot.seed, separated=found.separated,
                                  stored=found.stored_measures)
    by_names = found.by_names
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
            with_derived(found.stored, [metric], "--metric"), runs, metric, boot,
            what="stored + " + ", ".join(args.versus) if args.versus else "stored labels",
        )
    if gated is not None:
        by_dir = {str(run.run_dir): run for run in runs}
        report.gate = gate_runs(by_dir[gated[1]], by_dir[gated[0]], metric, boot, margin, args.intersect,
                                option="--intersect")
    if base is not None and len(runs) > 1:
        others = [run for i, run in enumerate(runs) if i != base]
        report.pairs = paired(runs[base], others, metric, boot, args.intersect, option="--intersect")
    if args.chain and len(runs) > 1:
        report.chain = chain_pairs(runs, metric, boot, args.intersect, option="--intersect")
    if args.by is not None:
        scored = [answered(run, metric) for run in runs]  # the header's questions: unanswerable ones left out
        report.by, *report.by_more = [by_table(scored, args.by, m, boot, FLAGS) for m in by_names]
    if args.per_question:
        report.per_question = ranks_per_question(runs)
    if args.all_pairs and len(runs) > 1:
        report.all_pairs = every_pair(runs, metric, boot, args.intersect, option="--intersect")
    if args.detect is not None and not 0 < args.detect < float("inf"):
        raise RecevalError(f"--detect {args.detect}: give the difference to detect, a number > 0 (e.g. 0.02)")
    wanted = [flag for flag, on in (("--correct", args.correct), ("--effects", args.effects),
                                     ("--detect", args.detect is not None)) if on]
    if wanted and not report.shown_pairs():
        raise RecevalError(f"{wanted[0]}: no pair is shown; add --baseline RUN, --chain or --all-pairs")
    report.pairs, report.chain, report.all_pairs = correct_family(
        [report.pairs, report.chain, report.all_pairs], args.correct, boot)
    if args.correct or args.effects or args.detect is not None or args.ranks or args.calibrate:
        report.sure = sureness(
            runs, report.shown_pairs(), metric, boot, args.effects, args.correct,
            args.detect, args.ranks, args.calibrate, args.intersect,
        )
    if show is not None:
        report.shown = shown_questions.show(runs, naming.labels, show, args.top, FLAGS)
    return report


def report_for(argv: list[str]) -> Report | Suite:
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
        if args.plot:
            rendered.plot(report, args.plot)
        write_report(report, args)
        if args.plot:
            print(f"receval: wrote {args.plot}", file=sys.stderr)
        for line in report.failures():
            print(f"receval: fail-under: {line}", file=sys.stderr)
        sys.stderr.flush()
        return report.exit_code()


def write_report(report: Report, args) -> None:
    """The report in ``--format`` to ``--out`` (or stdout; ``table`` on a terminal through
    rich). With ``--gate`` the output holds the verdict, and the verdict line goes to
    stderr too when the output is not text on stdout (a file, JSON, CSV), so a CI log
    shows it."""
    if args.format == "html":
        text = html.render(report)
    elif report.shown is not None:
        text = shown_views.render(report.shown, args.show, args.format, report.gate)
    elif args.format == "table" and args.out is None:
        tables.print_rich(rendered.header_lines(report), rendered.tables_of(report))
        return
    else:
        text = rendered.render(report, args.format)
    options.write_output(text, args.out)
    if report.gate is not None and (args.out is not None or args.format in ("json", "csv")):
        print(f"receval: {report.gate.line}", file=sys.stderr)

if __name__ == "__main__":
    raise SystemExit(main())
