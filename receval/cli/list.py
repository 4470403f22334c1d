"""Every stored run under a folder: ``receval list runs/ [--format json]``.

One line per run, in path order: when it was written, the parameters that differ
between the listed runs, the dataset fingerprint (first 12 hex digits), questions
(scored / all), MRR, and whether it is complete (its files agree with the manifest
written last; an incomplete run shows no numbers, and ``--format json`` says why).
Each run is read through :func:`receval.results.door.open_run`, its rows left unread
(:mod:`receval.analysis.listing`).
"""

from __future__ import annotations

import json
import sys

from receval.render import tables
from receval.core.errors import exit_on_error
from receval.cli import options
from receval.analysis.listing import listing
from receval.render.listing import table as listing_table

__all__ = ["listing", "listing_table", "main"]


def main(argv: list[str] | None = None) -> int:
    with exit_on_error():
        parser = options.ArgumentParser(
            prog="receval list", description="List every stored run under folders of runs."
        )
        parser.add_argument("paths", nargs="+", metavar="FOLDER", help="e.g. runs/")
        parser.add_argument("--format", choices=("table", "json"), default="table")
        args = parser.parse_args(argv)
        records = listing(args.paths)
        if args.format == "json":
            sys.stdout.write(json.dumps(records, indent=2, default=str) + "\n")
        else:
            done = sum(r["complete"] for r in records)
            tables.print_rich([f"{len(records)} runs, {done} complete"], [listing_table(records)])
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
