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
- ``--per-question``: each question's rank of its first relevant section per run
  (``-`` when not retrieved); questions every run misses are marked ``x``.
- ``--baseline SELECTOR`` (a run dir, or ``key=value[,key=value]`` matching one run):
  every other run's paired difference, its interval, questions fixed and broken.
- ``--by overlap``: the derived column ``overlap`` buckets each question's ROUGE-1
  precision against its relevant sections (low / medium / high,
  ``--overlap-thresholds 0.3,0.6``), to see whether scores come from copied words.
- ``--split test`` / ``--where COLUMN=VALUE``: score only those questions.
- ``--fail-under hit@3=0.70[,rr=0.6]``: exit status 1 when a run's mean is below.
- ``--format table|markdown|csv|json|latex``, ``--out FILE``, ``--plot FILE.png``.
  ``csv`` is one row per run (with ``--per-question``: one row per question).

Intervals use the first run's saved ``bootstrap`` config unless ``--n-resamples``,
``--seed``, ``--level`` or ``--method`` are given; they repeat exactly. Exit status:
0, 1 for ``--fail-under``, 2 for a user error (one line).
"""

from __future__ import annotations

import sys

from receval import outputs, tables
from receval.errors import RecevalError, exit_on_error
from receval.results import options
from receval.results.report import build_report
from receval.store import OVERLAP

__all__ = ["build_report", "main"]


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
    parser.add_argument("--by", metavar="COLUMN", help="one measure per value of COLUMN (kind, split, ...)")
    parser.add_argument("--by-metric", default="hit@3", help="the measure of --by (default hit@3)")
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
        "--intersect", action="store_true",
        help="pair runs over different question sets on the questions they share",
    )
    options.add_question_filters(parser)
    parser.add_argument(
        "--fail-under", action="append", default=[], metavar="METRIC=FLOOR",
        help="exit status 1 if a run's mean is below FLOOR, e.g. hit@3=0.70 (repeatable)",
    )
    parser.add_argument("--format", choices=options.FORMATS, default="table")
    parser.add_argument("--out", metavar="FILE", help="write to FILE (atomically) instead of stdout")
    parser.add_argument("--plot", metavar="FILE.png", help="plot each run's --metric with its interval")
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


def main(argv: list[str] | None = None) -> int:
    with exit_on_error():
        args = build_parser().parse_args(argv)
        inputs = [*args.runs, *([args.qrels] if args.qrels else [])]
        for flag in ("out", "plot"):
            outputs.check_output(getattr(args, flag), force=args.force, protected_dirs=inputs, flag=f"--{flag}")
        report = build_report(
            args.runs,
            metrics=parse_metrics(args.metrics),
            metric=args.metric,
            by=args.by,
            by_metric=args.by_metric,
            per_question=args.per_question,
            baseline=args.baseline,
            where=options.question_filters(args),
            floors=parse_floors(args.fail_under),
            n_resamples=args.n_resamples,
            seed=args.seed,
            level=args.level,
            method=args.method,
            intersect=args.intersect,
            overlap_thresholds=parse_thresholds(args.overlap_thresholds),
            overlap_measure=args.overlap_measure,
            qrels=args.qrels,
        )
        if args.plot:
            report.plot(args.plot)
        if args.format == "table" and args.out is None:
            tables.print_rich(report.header_lines(), report.tables())
        else:
            options.write_output(report.render(args.format), args.out)
        if args.plot:
            print(f"receval: wrote {args.plot}", file=sys.stderr)
        failures = report.failures()
        for line in failures:
            print(f"receval: {line}", file=sys.stderr)
        sys.stderr.flush()
        return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
