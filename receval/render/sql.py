"""``receval sql`` output: the rows of a query (an Arrow table) in the formats
every view shares (:mod:`receval.render.tables`): a terminal table, Markdown, LaTeX,
CSV (through :func:`~receval.render.tables.csv_cell`) and JSON (``{"columns": [...],
"rows": [{column: value}, ...]}``, numbers as stored, NULL and NaN as null)."""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa

from receval.core.formatting import shown
from receval.render import tables


def cell(value: Any) -> str:
    """A value as a table shows it: ``-`` for NULL, a float to 6 significant digits,
    a list as ``[a, b]``, a long text cut (CSV and JSON hold every value whole)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(cell(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {cell(v)}" for k, v in value.items()) + "}"
    return shown(str(value))


def _plain(value: Any) -> Any:
    """A value JSON and CSV can hold: NaN as None, anything not a JSON type as text."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


def table_of(result: pa.Table, title: str | None = None) -> tables.Table:
    rows = [[cell(v) for v in row.values()] for row in result.to_pylist()]
    align = ["r" if pa.types.is_integer(f.type) or pa.types.is_floating(f.type) or pa.types.is_decimal(f.type)
             else "l" for f in result.schema]
    return tables.Table(columns=list(result.column_names), rows=rows, title=title, align=align or None)


def render(result: pa.Table, fmt: str) -> str:
    """The rows of ``result`` in ``fmt`` (table, markdown, csv, json, latex)."""
    names = list(result.column_names)

    def data() -> dict:
        return {"columns": names, "rows": [{k: _plain(v) for k, v in r.items()} for r in result.to_pylist()]}

    def csv() -> str:
        rows = [[_plain(v) for v in r.values()] for r in result.to_pylist()]
        return tables.to_csv(names, [[cell(v) if isinstance(v, list | dict) else v for v in r] for r in rows])

    return tables.formatted(fmt, list, lambda: [table_of(result)], data, csv)


def schema_table(columns: list[tuple[str, str, str]]) -> pa.Table:
    """``--schema``: (view, column, type) rows as a result like any query's."""
    return pa.table({
        "view": [c[0] for c in columns], "column": [c[1] for c in columns], "type": [c[2] for c in columns],
    })
