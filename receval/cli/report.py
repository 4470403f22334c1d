"""Report stored runs side by side: ``python -m receval.report RUNS...``.

::

    python -m receval.report runs/2026-11-29/10-00-00            # a sweep, run dirs, a folder of sweeps
    python -m receval.report RUNS... --by kind --per-question --baseline retriever=tfidf
    python -m receval.report RUNS... --split test --fail-under hit@3=0.70 --format markdown

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
  these labels added (``python -m receval.judge`` writes them); the runs on disk are not
  changed, a label contradicting a stored one is listed and not applied, and every other
  option works on the re-scored numbers. ``--agreement``: Kendall tau (bootstrap
  interval over questions) between the runs' order under the stored and the stored +
  added labels, and whether the winner or ``select``'s choice changes
  (:mod:`receval.analysis.holes`).
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

Over 400 lines for one reason: this docstring is the command's manual (56 lines) and its
flags' help is ~100 more; the code that parses, calls :mod:`receval.analysis` and renders
is under 300.
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
from receval.analysis.pairs import every_pair, paired
from receval.analysis.report import Report
from receval.analysis.settings import bootstrap_settings
from receval.analysis.significance import sureness
from receval.analysis.suite import Suite
from receval.analysis.summary import check_floors, latency_cautions, measure_names, question_counts, summaries
from receval.cli import options
from receval.cli.options import FLAGS
from receval.cli.suite import compute_suite, write_suite
from receval.core import outputs
from receval.core.errors import RecevalError, exit_on_error
from receval.core.progress import warn
from receval.render import html, tables
from receval.render import report as rendered
from receval.render.show import to_text
from receval.results.discovery import load_runs
from receval.results.format import OVERLAP
from receval.results.identity import mixed_datasets
from receval.results.labels import naming_of
from receval.results.stored import UNUSED_COLUMNS, Run
from receval.stats.corrections import CORRECTIONS
from receval.stats.gate import Gate, check_margin
from receval.stats.significance import TESTS

__all__ = ["main", "report_for"]


def parse_metrics(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise RecevalError("--metrics: list measures, e.g. hit@1,hit@3,rr")
    return names


def parse_floors(items: list[str]) -> dict[str, str]:
    """``["hit@3=0.70,rr=0.6"]`` -> {"hit@3": "0.70", "rr": "0.6"} (checked later)."""
    floors: dict[str, str] = {}
    for item in items:
        for part in item.split(","):
            part = part.strip()
            name, sep, value = part.partition("=")
            if not sep or not name.strip() or not value.strip():
                raise RecevalError(
                    f"--fail-under {item!r}: use METRIC=FLOOR[,METRIC=FLOOR], e.g. hit@3=0.70"
                )
            if name.strip() in floors:
                raise RecevalError(
                    f"--fail-under {name.strip()} is given twice; give each metric one floor"
                )
            floors[name.strip()] = value.strip()
    return floors


# ----------------------------------------------------------------- command line


def build_parser() -> options.ArgumentParser:
    parser = options.ArgumentParser(
        prog="python -m receval.report",
        description="Report stored runs side by side, with bootstrap intervals.",
    )
    parser.add_argument(
        "runs", nargs="+", metavar="RUN",
        help="run directories or sweep directories; with --qrels also TREC run files",
    )
    parser.add_argument(
        "--qrels", metavar="FILE",
        help="judgements (TREC qrels or BEIR qrels tsv) to score TREC run files given as RUN",
    )
    parser.add_argument(
        "--metrics", help="columns, comma-separated (default hit@1,hit@3,recall@3,rr,ndcg@5)"
    )
    parser.add_argument(
        "--metric", default="rr",
        help="measure with the CI column, baseline differences and plot (default rr = MRR)",
    )
    options.add_label_args(parser)
    parser.add_argument("--by", metavar="COLUMN", help="one measure per value of COLUMN (kind, split, calls, ...)")
    parser.add_argument(
        "--by-metric", help="the measure of --by (default: each of --metrics if given, else hit@3)"
    )
    parser.add_argument(
        "--overlap-thresholds", default="0.3,0.6", metavar="LOW,HIGH",
        help="bucket edges of the derived 'overlap' column (--by overlap): low < LOW <= medium < HIGH <= high",
    )
    parser.add_argument(
        "--overlap-measure", default="rouge1_p", choices=OVERLAP,
        help="ROUGE precision the overlap buckets use (default rouge1_p)",
    )
    parser.add_argument("--per-question", action="store_true", help="each question's rank per run")
    parser.add_argument(
        "--baseline", metavar="SELECTOR",
        help="a run dir, or KEY=VALUE[,KEY=VALUE] naming one run: paired differences against it",
    )
    parser.add_argument(
        "--chain", action="store_true",
        help="pair each run with the one before it, in the order given: a paired difference per step",
    )
    parser.add_argument(
        "--intersect", action="store_true",
        help="pair runs over different question sets on the questions they share",
    )
    parser.add_argument(
        "--runs", dest="select_runs", metavar="KEY=VALUE[,KEY=VALUE]",
        help="keep the RUNS whose saved config matches, across sweeps (e.g. retriever=bm25,"
        "max_words=120); --where selects questions, --runs selects runs",
    )
    parser.add_argument(
        "--show", metavar="IDS|misses|changed",
        help="what came back: each run's top sections for these questions (q18,q19), the "
        "questions every run misses, or those whose first relevant rank changed",
    )
    parser.add_argument("--top", type=int, default=5, help="sections shown per run by --show (default 5)")
    parser.add_argument(
        "--gate", metavar="BASELINE_RUN",
        help="exit 1 when the paired interval of RUN - BASELINE_RUN (a run dir or KEY=VALUE) "
        "lies entirely below -MARGIN; one line either way",
    )
    parser.add_argument("--margin", type=float, default=0.0, help="--gate's tolerated drop (default 0)")
    parser.add_argument("--all-pairs", action="store_true", help="pair every run with every earlier one")
    parser.add_argument(
        "--test", choices=TESTS,
        help="a p-value per pair shown (randomization: paired sign flips, seeded; t: paired t-test; "
        "bootstrap: the paired bootstrap's)",
    )
    parser.add_argument(
        "--correct", choices=CORRECTIONS,
        help="correct the p-values over every pair shown (implies --test randomization unless given)",
    )
    parser.add_argument(
        "--detect", type=float, metavar="D",
        help="questions each pair needs to detect a difference of D (implies --test randomization unless given)",
    )
    parser.add_argument(
        "--suite", action="store_true",
        help="one row per configuration across collections (dataset fingerprints): per collection and "
        "pooled differences vs --baseline, mean over collections and Borda rank with intervals",
    )
    parser.add_argument("--ranks", action="store_true", help="each run's rank with a bootstrap interval over questions")
    parser.add_argument(
        "--calibrate", action="store_true",
        help="each test's type I rate on A/A null pairs built from these runs (should be near alpha)",
    )
    options.add_question_filters(parser)
    parser.add_argument(
        "--fail-under", action="append", default=[], metavar="METRIC=FLOOR",
        help="exit status 1 if a run's mean is below FLOOR, e.g. hit@3=0.70 (repeatable)",
    )
    parser.add_argument("--format", choices=(*options.FORMATS, "html"), default="table",
                        help="html: one self-contained page (tables, plots, per-question view)")
    parser.add_argument("--out", metavar="FILE", help="write to FILE (atomically) instead of stdout")
    parser.add_argument(
        "--plot", metavar="FILE.png|FILE.svg",
        help="--metric per run with intervals (a panel per swept axis); --by as grouped "
        "bars; --baseline as a forest plot of paired differences",
    )
    outputs.add_force(parser)
    options.add_bootstrap_args(parser)
    return parser


def parse_thresholds(text: str) -> tuple[float, float]:
    try:
        low, high = (float(part) for part in text.split(","))
    except ValueError:
        raise RecevalError(f"--overlap-thresholds {text!r}: give LOW,HIGH, e.g. 0.3,0.6") from None
    if not 0 <= low <= high <= 1:
        raise RecevalError(f"--overlap-thresholds {text!r}: need 0 <= LOW <= HIGH <= 1")
    return low, high


def parse_show(text: str) -> list[str] | str:
    """``q18,q19`` -> ids; ``misses`` / ``changed`` as is."""
    text = text.strip()
    if text in ("misses", "changed"):
        return text
    ids = [part.strip() for part in text.split(",") if part.strip()]
    if not ids:
        raise RecevalError("--show: give question ids (q18,q19), misses or changed")
    return ids


def floor_values(floors: dict[str, str]) -> dict[str, float]:
    """``--fail-under`` floors as numbers, each a mean between 0 and 1."""
    out = {}
    for name, text in floors.items():
        try:
            value = float(text)
        except ValueError:
            raise RecevalError(
                f"--fail-under {name}={text}: {text!r} is not a number; use e.g. {name}=0.70"
            ) from None
        if not 0 <= value <= 1:
            raise RecevalError(f"--fail-under {name}={text}: floors are means between 0 and 1 (0.70, not 70)")
        out[name] = value
    return out


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
    """Everything ``python -m receval.report`` shows for parsed ``args``, composed from the
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
    relabelled = relabel(runs, args.labels) if args.labels else None
    stored, runs = (runs, relabelled.runs) if relabelled else (runs, runs)
    if args.versus:
        stored = relabel(stored, args.versus, option="--versus").runs
    human = relabel(original, args.human, option="--human") if args.human else None
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
        cautions=latency_cautions(runs, summary) + judged_cautions(runs, naming.labels),
        relabelled=relabelled.cautions() if relabelled else [],
    )
    if human is not None:
        report.ppi = ppi_intervals(runs, human.runs, human.questions, metric, boot.level)
        report.relabelled += [f"--human: {line}" for line in human.cautions()]
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
    """What ``python -m receval.report ARGV`` computes, before it is rendered (for tests
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
