"""Stored runs as a warehouse: SQL over every ``results.parquet`` with DuckDB
(``receval sql``, :mod:`receval.cli.sql`). Two views:

- ``questions``: every row of every results file found, as stored (``question_id``,
  ``kind``, ``split``, ``rr``, ``"hit@3"``, ``"latency_ms.bm25"``...), with ``run`` (the
  run folder as given) and the run's parameters: what differs between the runs, by the
  report's column names (:func:`receval.results.labels.naming`: ``retriever``,
  ``max_words``...). A parameter named like a stored column is ``"param.<name>"``.
  Runs that store different columns are unioned by name (a missing one is NULL).
- ``runs``: one row per run: ``run``, ``label`` (:mod:`receval.results.labels`), the
  parameters, ``n_questions``, ``n_scored`` (questions with an ``rr``), ``n_chunks``,
  the mean of every stored measure over the questions that have it (what the report's
  means are: NULL for unanswerable questions is left out), ``"latency_ms.p50"`` and
  ``"latency_ms.p95"`` (linear interpolation, as numpy's percentile), and the costs of
  :func:`receval.analysis.costs.cost_facts` (``usd_per_1000``, ``pairs_per_question``,
  ``index_usd``), with ``config_hash`` and ``dataset_fingerprint``.

A measure derived from the stored per-rank columns (a token budget's, ``"recall@300tok"``;
:mod:`receval.analysis.budget`) is a column of both views when the query names it in
double quotes, as any ``@`` name is written: ``SELECT label, "hit@300tok" FROM runs``.

Read-only: each run is read through :func:`receval.results.door.open_run` (complete,
bounded, every column's types and ranges checked, ids unique; an incomplete job of a
sweep is skipped with a warning) and those rows reach DuckDB as Arrow; the database
is in memory and its access to files and the network is switched off (and locked)
before any query, so a query can read no other file, write none (nothing lands in a
run folder) and load no extension. Its memory and threads are set from the machine
(:func:`limits`: half the memory this process may use, its cores), so a heavy query
stops with DuckDB's out-of-memory message rather than take the machine. Values are as stored, in the ranges the report accepts. duckdb is an optional extra (``pip install 'receval[sql]'``), imported when a
warehouse is opened.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from receval.analysis import budget, costs
from receval.analysis.derived import with_derived
from receval.core import machine
from receval.core.errors import RecevalError, RunError
from receval.core.secrets import cut
from receval.scoring.declared import is_measure, is_token_measure
from receval.results.configs import format_value
from receval.results.discovery import load_runs
from receval.results.format import LATENCY
from receval.results.labels import naming_of

QUESTIONS, RUNS = "questions", "runs"
VIEWS = (QUESTIONS, RUNS)
EXTRA = "sql"  # pip install 'receval[sql]'
_INDEX = "_run_index"  # the hidden column joining a results row to its run's facts
MEMORY_SHARE = 0.5  # of the memory this process may use: a query past it is an error, not a swapping machine
_COST_COLUMNS = ("pairs_scored", "cost_usd")  # what cost_facts reads from the rows (and cost_usd.<stage>)


def limits() -> dict[str, str | int]:
    """DuckDB's memory and thread limits, from the machine (:mod:`receval.core.machine`):
    :data:`MEMORY_SHARE` of the memory this process may use (a container's limit when
    lower than the RAM; DuckDB's own default is 80% of the RAM, whatever the container),
    and as many threads as the cores it may keep busy (its quota, its affinity)."""
    memory = machine.memory_bytes()
    found: dict[str, str | int] = {"threads": machine.cores()}
    if memory:
        found["memory_limit"] = f"{max(64, int(memory * MEMORY_SHARE) >> 20)}MiB"
    return found


def duckdb_module():
    """duckdb, or a RecevalError naming the extra that installs it."""
    try:
        import duckdb
    except ImportError:
        raise RecevalError(
            f"SQL over runs needs duckdb: pip install 'receval[{EXTRA}]' (or pip install duckdb)"
        ) from None
    return duckdb


@dataclass
class Warehouse:
    """An in-memory DuckDB database holding the views ``questions`` and ``runs`` over
    stored runs (see the module docstring). ``relation(sql)`` is a DuckDB relation,
    ``arrow(sql)`` an Arrow table; ``schema()`` each view's columns and types."""

    connection: Any  # duckdb.DuckDBPyConnection
    run_dirs: list[Path]
    params: list[str]  # the parameter columns, in the report's order
    measures: list[str]  # the measures the runs view averages

    def relation(self, query: str):
        """``query`` (SQL over ``questions`` and ``runs``) as a DuckDB relation; a query
        DuckDB refuses is a RecevalError with DuckDB's message."""
        duckdb = duckdb_module()
        try:
            return self.connection.sql(query)
        except duckdb.Error as error:
            raise RecevalError(f"query: {_first_line(error)}") from None

    def arrow(self, query: str) -> pa.Table:
        """The rows of ``query`` as an Arrow table."""
        duckdb = duckdb_module()
        relation = self.relation(query)
        if relation is None:  # a statement that returns no rows
            return pa.table({})
        try:
            return relation.to_arrow_table() if hasattr(relation, "to_arrow_table") else relation.arrow()
        except duckdb.Error as error:
            raise RecevalError(f"query: {_first_line(error)}") from None

    def schema(self) -> list[tuple[str, str, str]]:
        """(view, column, DuckDB type) for every column of both views, in column order."""
        out = []
        for view in VIEWS:
            relation = self.connection.table(view)
            out.extend((view, name, str(kind)) for name, kind in zip(relation.columns, relation.types))
        return out

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _first_line(error: Exception) -> str:
    return cut(str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__, 300)


def _param_column(values: list[Any]) -> pa.Array:
    """One parameter's values as an Arrow column: typed when the runs agree on a type,
    else as config text (``120``, ``bm25``, ``null``)."""
    try:
        return pa.array(values)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return pa.array([None if v is None else format_value(v) for v in values], pa.string())


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


_QUOTED = re.compile(r'"((?:[^"]|"")+)"')


def measures_in(query: str) -> list[str]:
    """The derivable measures a query names in double quotes (``"hit@300tok"``)."""
    names = (m.replace('""', '"') for m in _QUOTED.findall(query or ""))
    return [n for n in dict.fromkeys(names) if budget.derivable(n) is not None]


def open_runs(paths: Sequence[str | Path], derived: Sequence[str] = ()) -> Warehouse:
    """The warehouse over the runs under ``paths`` (run folders, sweeps, folders of
    sweeps; incomplete jobs are skipped with a warning), with the ``derived`` measures'
    columns (:func:`measures_in` a query)."""
    duckdb = duckdb_module()
    runs = load_runs(list(paths), skip=frozenset())  # every column, checked as the report checks it
    runs = with_derived(runs, list(derived), option="query") if derived else runs
    run_dirs = [run.run_dir for run in runs]
    named = naming_of(runs)

    try:
        stored = pa.unify_schemas([run.table.schema.remove_metadata() for run in runs])
    except (pa.ArrowException, TypeError) as error:
        raise RunError(f"runs store a column with different types ({cut(str(error), 200)}); report them apart") from None
    stored_names = set(stored.names)
    params = {}
    for column in named.columns:
        shown = f"param.{column}" if column in stored_names or column in ("run", "label", _INDEX) else column
        params[shown] = _param_column([p.get(column) for p in named.params])

    dataset = pa.concat_tables(
        [run.table.replace_schema_metadata(None).append_column(_INDEX, pa.array([i] * run.table.num_rows, pa.int32()))
         for i, run in enumerate(runs)],
        promote_options="default",
    )  # the rows the door read and checked, never the files again
    measures = [n for n in stored.names if is_measure(n) or is_token_measure(n)]
    facts = {
        _INDEX: pa.array(range(len(runs)), pa.int32()),
        "run": pa.array([str(r.run_dir) for r in runs], pa.string()),
        "label": pa.array(named.labels, pa.string()),
        **params,
        "n_chunks": pa.array([r.n_chunks for r in runs], pa.int64()),
    }
    cost = [costs.cost_facts(r) for r in runs]
    for key in ("usd_per_1000", "pairs_per_question", "index_usd"):
        facts[key] = pa.array([_number(c.get(key)) for c in cost], pa.float64())
    for key in ("config_hash", "dataset_fingerprint"):
        facts[key] = pa.array([_text(r.info.get(key, r.metadata.get(key))) for r in runs], pa.string())

    connection = duckdb.connect(":memory:", config={
        "autoinstall_known_extensions": False, "autoload_known_extensions": False, **limits(),
    })
    connection.register("_results", dataset)
    connection.register("_facts", pa.table(facts))
    param_sql = "".join(f", f.{_quoted(p)}" for p in params)
    connection.execute(
        f"CREATE VIEW {QUESTIONS} AS SELECT f.run{param_sql}, q.* EXCLUDE ({_INDEX}) "
        f"FROM _results q JOIN _facts f USING ({_INDEX})"
    )
    means = "".join(f", avg({_quoted(m)}) AS {_quoted(m)}" for m in measures)
    if LATENCY in stored_names:
        means += "".join(f", quantile_cont({LATENCY}, {p / 100}) AS {_quoted(f'{LATENCY}.p{p}')}" for p in (50, 95))
    scored = "count(rr)" if "rr" in stored_names else "NULL::BIGINT"
    per_run = f"SELECT {_INDEX}, count(*) AS n_questions, {scored} AS n_scored{means} FROM _results GROUP BY {_INDEX}"
    after = ["usd_per_1000", "pairs_per_question", "index_usd", "config_hash", "dataset_fingerprint"]
    connection.execute(
        f"CREATE VIEW {RUNS} AS SELECT f.run, f.label{param_sql}, a.n_questions, a.n_scored, f.n_chunks"
        + "".join(f", a.{_quoted(m)}" for m in measures)
        + "".join(f", a.{_quoted(f'{LATENCY}.p{p}')}" for p in (50, 95) if LATENCY in stored_names)
        + "".join(f", f.{c}" for c in after)
        + f" FROM _facts f JOIN ({per_run}) a USING ({_INDEX}) ORDER BY f.{_INDEX}"
    )
    # from here on the database reads no file, writes none and loads nothing
    connection.execute("SET enable_external_access = false")
    connection.execute("SET lock_configuration = true")
    return Warehouse(connection, run_dirs, list(params), measures)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def sql(paths: Sequence[str | Path], query: str) -> pa.Table:
    """``query`` over the runs under ``paths`` as an Arrow table (the Python API):
    ``sql(["runs/2026-11-29"], 'SELECT retriever, avg("hit@3") FROM questions GROUP BY 1')``."""
    with open_runs(paths, measures_in(query)) as warehouse:
        return warehouse.arrow(query)
