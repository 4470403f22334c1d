"""Writing a run's files: ``results.parquet`` (schema in :mod:`receval.results.format`),
``run.json`` and ``chunks.json`` (:func:`write_json_lines`), each to a temporary name
renamed over the target, so a reader never sees a half-written file. A run folder is
written by one writer, which calls these and seals the folder last:
:func:`receval.results.run_writer.write_run` (a run, an imported traces run)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from receval import __version__
from receval.core.io import atomic_write
from receval.results.format import OVERLAP, RANKS, RESULTS, RUN_JSON, SCHEMA_VERSION, TRAJECTORY, results_schema


def _validity(missing: np.ndarray) -> tuple[pa.Buffer | None, int]:
    """Arrow's validity bitmap (one bit per value, least significant first) and null count."""
    nulls = int(missing.sum())
    return (pa.py_buffer(np.packbits(~missing, bitorder="little")) if nulls else None), nulls


def arrow_column(values, type_: pa.DataType) -> pa.Array:
    """A results column (a list of Python values, ``None`` for null) as an Arrow array,
    built from numpy buffers for the schema's types (float64, int32, int64, string and
    lists of them) and with ``pa.array`` for any other.

    Why: ``pa.array`` imports pandas when it is installed (to ask whether the values
    are a pandas object), about 50 MB and 0.25 s a run for nothing here."""
    n = len(values)
    if pa.types.is_list(type_):
        missing = np.fromiter((v is None for v in values), bool, n)
        lengths = np.fromiter((0 if v is None else len(v) for v in values), np.int64, n)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        child = arrow_column([item for v in values if v is not None for item in v], type_.value_type)
        validity, nulls = _validity(missing)
        return pa.Array.from_buffers(type_, n, [validity, pa.py_buffer(offsets)], nulls, children=[child])
    if pa.types.is_string(type_):
        missing = np.fromiter((v is None for v in values), bool, n)
        encoded = [b"" if v is None else v.encode("utf-8") for v in values]
        offsets = np.concatenate([[0], np.cumsum(np.fromiter(map(len, encoded), np.int64, n))])
        if offsets[-1] >= 2**31:  # beyond 32-bit offsets: let pyarrow choose
            return pa.array(values, type_)
        validity, nulls = _validity(missing)
        buffers = [validity, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(b"".join(encoded))]
        return pa.Array.from_buffers(type_, n, buffers, nulls)
    if type_ in (pa.float64(), pa.int32(), pa.int64()):
        values = values.tolist() if isinstance(values, np.ndarray) else values
        missing = np.fromiter((v is None for v in values), bool, n)
        dtype = {pa.float64(): np.float64, pa.int32(): np.int32, pa.int64(): np.int64}[type_]
        data = np.fromiter((0 if v is None else v for v in values), dtype, n)
        validity, nulls = _validity(missing)
        return pa.Array.from_buffers(type_, n, [validity, pa.py_buffer(data)], nulls)
    return pa.array(values, type_)


#: Questions per row group of ``results.parquet``, at least: the Arrow copy of the columns
#: is built and encoded a slice at a time (a run of 10,000 questions: 5 groups), so the
#: writer never holds the whole table beside the columns (docs/pages/benchmarks.md, the
#: run's memory); a larger run is cut in at most :data:`MAX_ROW_GROUPS` (readers pay per group).
ROW_GROUP = 2048
MAX_ROW_GROUPS = 16


def write_results(
    run_dir: Path, columns: dict, measure_names: list[str], metadata: dict, stages: list[str] = (),
    extra: list[str] = (),
) -> Path:
    """Write the per-question table atomically; returns its path."""
    metadata = {"schema_version": SCHEMA_VERSION, "receval_version": __version__, **metadata}
    n_rows = len(columns["question_id"])
    columns = {**{name: [None] * n_rows for name in OVERLAP}, **columns}  # optional: null if not given
    optional = tuple(name for name in (*TRAJECTORY, *RANKS) if name in columns)
    schema = results_schema(measure_names, metadata, stages, extra, optional)
    target = Path(run_dir) / RESULTS

    step = max(ROW_GROUP, -(-n_rows // MAX_ROW_GROUPS))  # questions a row group: Arrow holds one slice at a time

    def write(tmp: Path) -> None:
        with pq.ParquetWriter(tmp, schema) as out:
            for start in range(0, max(n_rows, 1), step):
                part = {f.name: arrow_column(columns[f.name][start : start + step], f.type) for f in schema}
                out.write_table(pa.table(part, schema=schema))

    atomic_write(target, write)
    return target


def write_json(target: Path, data: dict) -> Path:
    """A JSON file of a run, written atomically."""
    text = json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"
    atomic_write(target, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return target


def json_lines(data: dict):
    """``data`` (a mapping) as JSON text, in pieces: each item of a mapping value on a line
    of its own, dumped alone (keys sorted, ASCII: a piece's length is its bytes), so a
    file of many chunks is never one string in memory; ``json.loads`` reads it as ever."""
    yield "{"
    for n, key in enumerate(sorted(data)):
        value = data[key]
        yield ("," if n else "") + "\n" + json.dumps(str(key)) + ": "
        if isinstance(value, dict) and value:
            yield "{"
            for m, inner in enumerate(sorted(value, key=str)):
                yield ("," if m else "") + "\n" + json.dumps(str(inner)) + ": " + json.dumps(
                    value[inner], sort_keys=True, default=str)
            yield "\n}"
        else:
            yield json.dumps(value, sort_keys=True, default=str)
    yield "\n}\n"


class TooLargeJson(Exception):
    """:func:`write_json_lines` stopped: the file would pass its limit (nothing written)."""


def write_json_lines(target: Path, data: dict, limit: int | None = None) -> Path:
    """``data`` written atomically as :func:`json_lines` streams it; with ``limit``, a file
    that would pass that many bytes is not written (:class:`TooLargeJson`)."""

    def write(tmp: Path) -> None:
        size = 0
        with open(tmp, "w", encoding="ascii") as out:
            for piece in json_lines(data):
                size += len(piece)
                if limit is not None and size > limit:
                    raise TooLargeJson(size)
                out.write(piece)

    atomic_write(target, write)
    return target


def write_run_json(run_dir: Path, info: dict) -> Path:
    info = {"schema_version": SCHEMA_VERSION, "receval_version": __version__, **info}
    return write_json(Path(run_dir) / RUN_JSON, info)
