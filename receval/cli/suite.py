"""``receval report RUNS... --suite``: what the suite report computes from the
parsed arguments and how it is written (the shell over :mod:`receval.analysis.suite`
and :mod:`receval.render.suite`; :mod:`receval.cli.report` loads the runs)."""

from __future__ import annotations

import sys

from receval.analysis import filters
from receval.analysis.settings import bootstrap_settings
from receval.analysis.suite import Suite, suite
from receval.cli import options
from receval.cli.options import FLAGS
from receval.core.errors import RecevalError
from receval.render import suite as rendered_suite
from receval.render import tables
from receval.results.stored import Run

SUITE_ALONE = ("gate", "chain", "by", "per_question", "all_pairs", "test", "correct", "detect", "ranks", "calibrate",
               "show", "qrels")


def compute_suite(args, runs: list[Run]) -> Suite:
    """``--suite`` over the loaded ``runs``: configurations x collections
    (:mod:`receval.analysis.suite`)."""
    given = [name for name in SUITE_ALONE if getattr(args, name) not in (None, False)]
    if given:
        raise RecevalError(f"--suite: --{given[0].replace('_', '-')} is not taken with --suite; leave it out")
    runs = filters.filter_questions(runs, options.question_filters(args), option="--where")
    boot = bootstrap_settings(runs, args.n_resamples, args.seed, args.level, args.method, FLAGS["bootstrap"])
    return suite(runs, args.metric, boot, args.baseline, option="--baseline")


def write_suite(args, found: Suite) -> None:
    """The suite report in ``--format`` to ``--out`` (or the terminal), and ``--plot``'s forest plot."""
    if args.plot:
        rendered_suite.plot(found, args.plot)
    if args.format == "html":
        options.write_output(rendered_suite.render_html(found), args.out)
    elif args.format == "table" and args.out is None:
        tables.print_rich(rendered_suite.header_lines(found), rendered_suite.tables_of(found))
    else:
        options.write_output(rendered_suite.render(found, args.format), args.out)
    if args.plot:
        print(f"receval: wrote {args.plot}", file=sys.stderr)
