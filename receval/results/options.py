"""What the command-line shells over stored runs share: argparse with one-line
errors, the question filters, the bootstrap options and writing the output."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from receval.core.errors import RecevalError
from receval.results.selection import parse_where
from receval.core.io import atomic_write

FORMATS = ("table", "markdown", "csv", "json", "latex")


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


def question_filters(args) -> list[tuple[str, str]]:
    where = parse_where(args.where)
    if args.split:
        where.insert(0, ("split", args.split))
    return where


def add_bootstrap_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("bootstrap (default: the run's saved bootstrap config)")
    group.add_argument("--n-resamples", type=int, help="bootstrap resamples, e.g. 2000")
    group.add_argument("--seed", type=int, help="bootstrap seed (same seed, same intervals)")
    group.add_argument("--level", type=float, help="confidence level, e.g. 0.95")
    group.add_argument("--method", choices=("percentile", "bca"), help="interval method")


def write_output(text: str, out: str | None) -> None:
    if out is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    target = Path(out)
    atomic_write(target, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    print(f"receval: wrote {target}", file=sys.stderr)
