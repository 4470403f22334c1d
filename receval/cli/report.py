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

The flags and how their values read: :mod:`receval.cli.report_flags`; the report is composed
by :mod:`receval.analysis.compose` from the flags read (:func:`options_of`).
"""

from __future__ import annotations

import sys

from receval.analysis.compose import compose
from receval.analysis.report import Report, ReportOptions
from receval.analysis.suite import Suite
from receval.cli import options
from receval.cli.options import FLAGS
from receval.cli.report_flags import build_parser, parse_floors, parse_metrics, parse_show, parse_thresholds
from receval.cli.suite import write_suite
from receval.core import outputs
from receval.core.errors import RecevalError, exit_on_error
from receval.render import html, tables
from receval.render import report as rendered
from receval.render import show as shown_views

__all__ = ["compute", "main", "options_of", "report_for"]

#: Flags whose values the report's options take as given.
AS_GIVEN = ("metric", "top", "margin", "qrels", "select_runs", "baseline", "gate", "by", "by_metric",
            "overlap_measure", "per_question", "chain", "all_pairs", "intersect", "correct", "effects", "detect",
            "ranks", "calibrate", "labels", "human", "versus", "unknown_units", "agreement", "precision",
            "n_resamples", "seed", "level", "method")


def options_of(args) -> ReportOptions:
    """The report ``args`` ask for, each flag's value read (one message naming the flag)."""
    given = {"runs": tuple(args.runs), "names": FLAGS, **{name: getattr(args, name) for name in AS_GIVEN}}
    if args.suite:  # --suite reads fewer flags; compose_suite names those it does not take
        if args.test is not None:
            raise RecevalError("--suite: --test is not taken with --suite; leave it out")
        return ReportOptions(where=options.question_filters(args), show=args.show, suite=True,
                             overlap_thresholds=parse_thresholds(args.overlap_thresholds), **given)
    if args.test is not None:
        raise RecevalError(
            f"--test {args.test}: every pair shown now has its p-value and verdict from one paired procedure "
            "(the sign-flip randomization test and the interval it keeps); drop --test (--effects adds g_z)"
        )
    metrics = parse_metrics(args.metrics)
    where = options.question_filters(args)
    floors = parse_floors(args.fail_under)
    show = parse_show(args.show) if args.show is not None else ("all" if args.format == "html" else None)
    return ReportOptions(metrics=metrics, where=where, floors=floors, show=show,
                         overlap_thresholds=parse_thresholds(args.overlap_thresholds), **given)


def compute(args) -> Report | Suite:
    """Everything ``receval report`` shows for parsed ``args``
    (:func:`receval.analysis.compose.compose` of :func:`options_of`)."""
    return compose(options_of(args))


def report_for(argv: list[str]) -> Report | Suite:
    """What ``receval report ARGV`` computes, before it is rendered (for tests; a
    notebook calls :func:`receval.analysis.report_for`)."""
    return compute(build_parser().parse_args(argv))


def main(argv: list[str] | None = None) -> int:
    with exit_on_error():
        args = build_parser().parse_args(argv)
        inputs = [*args.runs, *([args.qrels] if args.qrels else [])]
        for flag in ("out", "plot"):
            outputs.check_output(getattr(args, flag), force=args.force, protected_dirs=inputs, flag=f"--{flag}")
        if args.suite:
            write_suite(args, compute(args))
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
