"""The flags of ``receval report`` (:func:`build_parser`, their help) and how
their values read (:func:`parse_metrics`, :func:`parse_floors`,
:func:`parse_thresholds`, :func:`parse_show`): each a user error naming the flag. The
command's manual is :mod:`receval.cli.report`'s docstring."""

from __future__ import annotations

import argparse

from receval.cli import options
from receval.core import outputs
from receval.core.errors import RecevalError
from receval.results.format import OVERLAP
from receval.stats.corrections import CORRECTIONS


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
        prog="receval report",
        description="Report stored runs side by side, with bootstrap intervals.",
    )
    _add_inputs(parser)
    _add_columns(parser)
    _add_pairing(parser)
    _add_shown_runs(parser)
    _add_tests(parser)
    options.add_question_filters(parser)
    _add_outputs(parser)
    return parser


def _add_inputs(parser: options.ArgumentParser) -> None:
    """What is read: run or sweep folders, or TREC run files with their judgements."""
    parser.add_argument(
        "runs", nargs="+", metavar="RUN",
        help="run directories or sweep directories; with --qrels also TREC run files",
    )
    parser.add_argument(
        "--qrels", metavar="FILE",
        help="judgements (TREC qrels or BEIR qrels tsv) to score TREC run files given as RUN",
    )


def _add_columns(parser: options.ArgumentParser) -> None:
    """Which measures are shown, and how the rows are grouped."""
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


def _add_pairing(parser: options.ArgumentParser) -> None:
    """Which runs are paired with which."""
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


def _add_shown_runs(parser: options.ArgumentParser) -> None:
    """Which runs are kept, and what came back for which questions."""
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


def _add_tests(parser: options.ArgumentParser) -> None:
    """The gate, the pairs' tests and what each pair reports beyond its interval."""
    parser.add_argument(
        "--gate", metavar="BASELINE_RUN",
        help="gate RUN against BASELINE_RUN (a run dir or KEY=VALUE) on --metric, read off the paired "
        "interval of RUN - BASELINE_RUN: pass (exit 0) when it lies above -MARGIN or no question changed, "
        "fail (exit 1) when it lies below 0 and reaches -MARGIN, undecided (exit 3) otherwise; the report "
        "of the two runs follows the verdict line, in every --format",
    )
    parser.add_argument("--margin", type=float, default=0.0,
                        help="--gate's tolerated drop, in --metric's units (default 0)")
    parser.add_argument("--all-pairs", action="store_true", help="pair every run with every earlier one")
    parser.add_argument("--test", help=argparse.SUPPRESS)  # gone: every pair has its p-value (compute says so)
    parser.add_argument(
        "--correct", choices=CORRECTIONS,
        help="correct every pair shown as one family (holm: family-wise; bh: false discovery rate): "
        "p-values adjusted, intervals at the levels the correction tests them at",
    )
    parser.add_argument(
        "--effects", action="store_true",
        help="each pair's Hedges' g_z with its interval and the smallest difference its questions detect",
    )
    parser.add_argument(
        "--detect", type=float, metavar="D",
        help="questions each pair needs to detect a difference of D (implies --effects)",
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


def _add_outputs(parser: options.ArgumentParser) -> None:
    """Floors, the output format and file, the plot and the bootstrap."""
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
