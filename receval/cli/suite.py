"""``receval report RUNS... --suite``: how the suite report is written (the shell over
:mod:`receval.render.suite`; :func:`receval.analysis.compose.compose_suite` computes it)."""

from __future__ import annotations

import sys

from receval.analysis.suite import Suite
from receval.cli import options
from receval.render import suite as rendered_suite
from receval.render import tables


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
