"""SQL over stored runs: ``receval sql RUNS... "SELECT ..."``.

::

    receval sql runs/2026-11-29 'SELECT retriever, max_words, avg("hit@3") AS hit3
        FROM questions WHERE split = '"'"'test'"'"' GROUP BY ALL ORDER BY hit3 DESC'
    receval sql runs/ "SELECT label, rr, \\"latency_ms.p50\\" FROM runs ORDER BY rr DESC"
    receval sql runs/2026-11-29 --schema

RUNS are run folders, sweeps or folders of sweeps (as ``report`` takes them); the
last argument is the query. Two views (:mod:`receval.analysis.warehouse`):
``questions`` (every stored row, with ``run`` and the runs' parameters) and ``runs``
(one row per run: label, parameters, means, latency, costs). Column names holding
``@`` or ``.`` are quoted: ``"hit@3"``, ``"latency_ms.bm25"``. A token budget's measure
the query names (``"recall@300tok"``) is derived from the stored per-rank columns.

- ``--schema``: every column of both views with its type (no query).
- ``--format table|markdown|csv|json|latex``, ``--out FILE`` (atomically; never inside
  a run), ``--force``.

The database is in memory and reads nothing but the runs' results; a query cannot
write a file. Needs duckdb (``pip install 'receval[sql]'``). Exit status 2 for a user
error, a query DuckDB refuses included (one line).
"""

from __future__ import annotations

from receval.analysis.warehouse import measures_in, open_runs
from receval.cli import options
from receval.core import outputs
from receval.core.errors import RecevalError, exit_on_error
from receval.render import sql as rendered
from receval.render import tables


def build_parser() -> options.ArgumentParser:
    parser = options.ArgumentParser(
        prog="receval sql",
        description="SQL (DuckDB) over stored runs: views 'questions' (one row per question per run) and 'runs'.",
    )
    parser.add_argument(
        "args", nargs="+", metavar="RUNS... QUERY",
        help="run, sweep or folders of sweeps, then the SQL query (omit it with --schema)",
    )
    parser.add_argument("--schema", action="store_true", help="list the views' columns and types instead of a query")
    parser.add_argument("--format", choices=options.FORMATS, default="table")
    parser.add_argument("--out", metavar="FILE", help="write to FILE (atomically) instead of stdout")
    outputs.add_force(parser)
    return parser


def split_args(args) -> tuple[list[str], str | None]:
    """(run paths, query): the last argument is the query unless ``--schema``."""
    if args.schema:
        return list(args.args), None
    if len(args.args) < 2:
        raise RecevalError(
            "receval sql: give the runs, then the query in quotes, e.g. "
            "runs/ 'SELECT label, rr FROM runs' (or --schema to list the columns)"
        )
    *runs, query = args.args
    if not query.strip():
        raise RecevalError("receval sql: the query is empty; e.g. 'SELECT label, rr FROM runs'")
    return runs, query


def main(argv: list[str] | None = None) -> int:
    with exit_on_error():
        args = build_parser().parse_args(argv)
        runs, query = split_args(args)
        outputs.check_output(args.out, force=args.force, protected_dirs=runs, flag="--out")
        with open_runs(runs, measures_in(query or "")) as warehouse:
            result = rendered.schema_table(warehouse.schema()) if query is None else warehouse.arrow(query)
        if args.format == "table" and args.out is None:
            tables.print_rich([], [rendered.table_of(result)])
        else:
            options.write_output(rendered.render(result, args.format), args.out)
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
