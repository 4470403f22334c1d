"""Compare two stored runs question by question: ``receval compare A B``.

::

    receval compare runs/2026-11-29/10-00-00/0 runs/2026-11-30/09-12-44
    receval compare A B --metric hit@3 --split test --format json
    receval compare A B --metrics hit@1,hit@3,rr,ndcg@5        # a row per measure

The runs may come from any sweeps. Questions are paired by id; runs over different
question sets are refused (naming how many ids differ) unless ``--intersect``.
Reported: mean of A, mean of B, ``diff`` = mean(B - A) over the questions both
score (unanswerable ones left out), its interval, p-value and verdict (better, worse,
not shown) from the one paired procedure (:mod:`receval.stats.paired`: a question's two
scores are compared with each other, so how hard a question is cancels out), the ids of questions
``fixed`` (a relevant section first in B, not in A) and ``broken`` (the reverse),
and how many questions went up, down or stayed the same on the metric.
``--metrics`` pairs the runs on each measure listed: a row each in every format (the
table, Markdown, LaTeX, a CSV row each, JSON's ``measures`` list), each interval on its
own.

The pairing (:func:`receval.analysis.pairs.paired`) is also what ``receval report --baseline`` uses.
Exit status 0, or 2 with one line for a user error.
"""

from __future__ import annotations

from receval.render import tables
from receval.core import outputs
from receval.core.errors import exit_on_error
from receval.cli import options
from receval.cli.report_flags import parse_metrics
from receval.core.errors import RecevalError
from receval.analysis.comparison import Comparison, compare
from receval.render import compare as rendered

__all__ = ["Comparison", "compare", "main"]


def build_parser() -> options.ArgumentParser:
    parser = options.ArgumentParser(
        prog="receval compare",
        description="Pair two stored runs by question id: mean(B - A), its interval and p-value from the "
        "paired sign-flip randomization test, the verdict, questions fixed and broken.",
    )
    parser.add_argument("a", metavar="RUN_A", help="the reference run directory")
    parser.add_argument("b", metavar="RUN_B", help="the run compared with it")
    parser.add_argument("--metric", help="per-question measure (default rr = MRR; rr@k = MRR@k)")
    parser.add_argument("--metrics", help="several measures, comma-separated (e.g. hit@1,hit@3,rr): a row each")
    parser.add_argument(
        "--intersect", action="store_true",
        help="pair only the questions both runs have (default: refuse different question sets)",
    )
    parser.add_argument("--format", choices=options.FORMATS, default="table")
    parser.add_argument("--out", metavar="FILE", help="write to FILE (atomically) instead of stdout")
    outputs.add_force(parser)
    options.add_question_filters(parser)
    options.add_bootstrap_args(parser, method=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    with exit_on_error():
        args = build_parser().parse_args(argv)
        outputs.check_output(args.out, force=args.force, protected_dirs=[args.a, args.b])
        if args.metric is not None and args.metrics is not None:
            raise RecevalError("--metric and --metrics: give one (--metrics hit@3,rr compares on each)")
        comparison = compare(
            args.a, args.b, metric=args.metric or "rr", metrics=parse_metrics(args.metrics), intersect=args.intersect,
            where=options.question_filters(args), n_resamples=args.n_resamples,
            seed=args.seed, level=args.level, method=None, names=options.FLAGS,
        )
        if args.format == "table" and args.out is None:
            tables.print_rich(rendered.header_lines(comparison), rendered.tables_of(comparison))
        else:
            options.write_output(rendered.render(comparison, args.format), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
