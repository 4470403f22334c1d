"""What the command-line shells over stored runs share: argparse with one-line
errors, the flag each library parameter is given by (:data:`FLAGS`), the question
filters, the bootstrap options and writing the output."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from receval.core.errors import RecevalError
from receval.core.io import atomic_write

FORMATS = ("table", "markdown", "csv", "json", "latex")
#: Library parameter -> the flag that gives it: library errors name parameters
#: (:func:`receval.core.errors.named`), and the commands' messages name flags.
FLAGS = {
    "metric": "--metric", "metrics": "--metrics", "by": "--by", "by_metric": "--by-metric",
    "where": "--where", "baseline": "--baseline", "gate": "--gate", "runs": "--runs",
    "intersect": "--intersect", "floors": "--fail-under", "margin": "--margin",
    "overlap_measure": "--overlap-measure", "show": "--show", "top": "--top",
    "qrels": "--qrels", "qrels_file": "--qrels FILE", "bootstrap": "--n-resamples/--seed/--level",
    "prefer": "--prefer", "report_on": "--report-on",
}


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are one ``receval: error:`` line and exit status 2."""

    def error(self, message: str):  # noqa: D102
        raise RecevalError(f"{self.prog}: {message} (see --help)")


def add_question_filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--split", help="score only the questions of this split (same as --where split=VALUE)"
    )
    parser.add_argument(
        "--where", action="append", default=[], metavar="COLUMN=VALUE",
        help="score only the questions whose COLUMN equals VALUE (repeatable), e.g. kind=direct",
    )


def parse_where(items: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        if "=" not in item or not item.split("=", 1)[0].strip():
            raise RecevalError(f"--where {item!r}: use COLUMN=VALUE, e.g. split=test")
        column, value = item.split("=", 1)
        pairs.append((column.strip(), value.strip()))
    return pairs


def question_filters(args) -> list[tuple[str, str]]:
    where = parse_where(args.where)
    if args.split:
        where.insert(0, ("split", args.split))
    return where


def add_bootstrap_args(parser: argparse.ArgumentParser, method: bool = True) -> None:
    """The resampling flags; ``method`` (--method) only where a mean's bootstrap interval
    is shown (a paired difference's interval is the paired procedure's, whatever it says)."""
    group = parser.add_argument_group("bootstrap (default: the run's saved bootstrap config)")
    group.add_argument("--n-resamples", type=int, help="bootstrap resamples, e.g. 2000")
    group.add_argument("--seed", type=int, help="bootstrap seed (same seed, same intervals)")
    group.add_argument("--level", type=float, help="confidence level, e.g. 0.95")
    if method:
        group.add_argument("--method", choices=("percentile", "bca"), help="interval method of each run's mean")


def add_label_args(parser: argparse.ArgumentParser) -> None:
    """``report``'s added labels: ``--labels``, ``--agreement``, ``--human``, ``--versus``
    (:mod:`receval.analysis.holes`)."""
    parser.add_argument(
        "--labels", action="append", default=[], metavar="LABELS.jsonl",
        help="re-score the runs from their stored rankings with these labels added (labels JSONL, "
        "TREC qrels or BEIR qrels tsv; repeatable)",
    )
    parser.add_argument(
        "--human", action="append", default=[], metavar="LABELS",
        help="with --labels (a judge's, every question): a person's labels on some questions, or on a sample "
        "drawn by pool --for-humans; the mean of --metric under them by prediction-powered inference, beside "
        "the person's labels alone",
    )
    parser.add_argument(
        "--versus", action="append", default=[], metavar="LABELS",
        help="with --agreement: compare against stored + these labels instead of the stored labels alone "
        "(e.g. a complete qrels file)",
    )
    parser.add_argument(
        "--unknown-units", choices=("skip", "apply"), default="skip",
        help="labels naming units no run retrieved or labels: skip them, named (default: a typo would "
        "lower recall), or apply them (a collection's complete qrels, whose relevant units no run found)",
    )
    parser.add_argument(
        "--agreement", action="store_true",
        help="with --labels: Kendall tau between the runs' order under stored and stored + added labels, "
        "whether the winner or select's choice changes, and the human labels that would certify the judge",
    )
    parser.add_argument(
        "--precision", type=float, default=0.05, metavar="D",
        help="with --agreement: the half-width to which human labels would pin the judge's error rate (default 0.05)",
    )


def write_output(text: str, out: str | None) -> None:
    if out is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    target = Path(out)
    atomic_write(target, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    print(f"receval: wrote {target}", file=sys.stderr)
