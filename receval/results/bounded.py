"""``results.parquet`` parsed from the bytes the door hashed, bounded as decoded.

Nothing is read twice from disk: the door (:mod:`receval.results.door`) reads the file
once, checks those bytes against the manifest and hands the same bytes here
(``pa.BufferReader``), so no file swapped in between can be parsed. Before any row is
decoded:

1. from the footer: rows (:data:`MAX_ROWS`), leaf columns (:data:`MAX_COLUMNS`) and
   values of the columns read (:data:`MAX_VALUES`);
2. from the pages: the bytes their pages decompress to (:mod:`receval.results.pages`:
   the codec's largest expansion, else the page headers themselves, never the footer's
   own total), plus each value's fixed width, against :data:`MAX_DECODED_BYTES`.

Then string columns are read *as dictionaries* (each dictionary page once, an index per
value), so a dictionary entry is not yet repeated into every row that uses it:

3. string lengths are checked on the dictionaries
   (:func:`receval.results.integrity.check_lengths`: a 5 MB question is refused as
   such, not after 600 copies of it were made);
4. the bytes the strings take once expanded (each entry's length times its uses, from
   the indices) are counted against :data:`MAX_DECODED_BYTES` too.

Only then are the dictionaries expanded into the plain columns every command reads,
and values, ranges and unique ids checked (:mod:`receval.results.integrity`).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from receval.core.errors import RunError
from receval.core.secrets import cut
from receval.results import integrity, pages
from receval.results.format import META_KEY

MAX_ROWS = 2_000_000  # questions in one run
MAX_COLUMNS = 10_000  # leaf columns in the footer
MAX_VALUES = 500_000_000  # values (list items included) of the columns read, per the footer
MAX_DECODED_BYTES = 4 << 30  # bytes the columns read take decoded: pages decompressed, strings expanded

#: Bytes one value of a fixed-width physical type takes decoded (an index or offset for BYTE_ARRAY).
_WIDTH = {"BOOLEAN": 1, "INT32": 4, "INT64": 8, "INT96": 12, "FLOAT": 4, "DOUBLE": 8, "BYTE_ARRAY": 4}


def read_results(path: Path, data, skip: frozenset[str] = frozenset(),
                 only: frozenset[str] | None = None) -> tuple[pa.Table, dict]:
    """``results.parquet`` from its bytes ``data``, checked (see the module docstring):
    the table of the columns read and the file's receval metadata."""
    failed = f"{path}: cannot be read as results ({{}}); re-run this job"
    buffer = pa.py_buffer(data)
    try:
        parquet = pq.ParquetFile(pa.BufferReader(buffer))
        schema = parquet.schema_arrow
        names = list(schema.names)  # a damaged name fails to decode here
    except (pa.ArrowException, OSError, ValueError) as error:
        raise RunError(failed.format(cut(str(error), 160))) from None
    metadata = integrity.metadata_of(path, schema, META_KEY)
    integrity.check_schema(path, schema)
    columns = [n for n in names if n not in skip and (only is None or n in only)]
    meta = parquet.metadata
    leaves = leaves_read(meta, columns)
    check_footer(path, meta, leaves)
    check_pages(path, data, meta, leaves)
    strings = [i for i in leaves if meta.schema.column(i).physical_type == "BYTE_ARRAY"]
    try:
        reader = pq.ParquetFile(pa.BufferReader(buffer), metadata=meta, read_dictionary=strings)
        table = reader.read(columns=columns)
        integrity.check_lengths(path, table)  # on the dictionaries: no entry repeated yet
        check_expanded(path, table)
        table = expanded(table, schema)
    except MemoryError:  # pyarrow's ArrowMemoryError included
        raise RunError(f"{path}: too large to read into memory; {integrity.EDITED}") from None
    except (pa.ArrowException, OSError, ValueError) as error:
        raise RunError(failed.format(cut(str(error), 160))) from None
    integrity.check_values(path, table)
    ids = table.column("question_id")
    try:
        distinct = len(pc.unique(ids))
    except (pa.ArrowException, UnicodeDecodeError) as error:
        raise RunError(failed.format(cut(str(error), 160))) from None
    if distinct != len(ids):
        raise RunError(f"{path}: question ids repeat; questions are paired by id, so {integrity.EDITED}")
    return table, metadata


def leaves_read(meta: pq.FileMetaData, columns: list[str]) -> list[int]:
    """The leaf columns ``ParquetFile.read(columns=...)`` reads: a leaf whose path is a
    name read or starts with one and a dot (pyarrow's rule, so ``latency_ms`` reads
    ``latency_ms.bm25`` too: bounded as read)."""
    prefixes = tuple(f"{name}." for name in columns)
    wanted = set(columns)
    return [i for i in range(meta.num_columns)
            if (leaf := meta.schema.column(i).path) in wanted or leaf.startswith(prefixes)]


def check_footer(path: Path, meta: pq.FileMetaData, leaves: list[int]) -> None:
    """Rows, leaf columns and values of the leaves read, as the footer declares them."""
    problem = None
    if meta.num_rows > MAX_ROWS:
        problem = f"{meta.num_rows:,} rows (at most {MAX_ROWS:,})"
    elif meta.num_columns > MAX_COLUMNS:
        problem = f"{meta.num_columns:,} columns (at most {MAX_COLUMNS:,})"
    else:
        values = sum(meta.row_group(g).column(c).num_values for g in range(meta.num_row_groups) for c in leaves)
        if values > MAX_VALUES:
            problem = f"{values:,} values in the columns read (at most {MAX_VALUES:,})"
    if problem:
        raise RunError(f"{path}: its footer declares {problem}; {integrity.EDITED}")


def check_pages(path: Path, data, meta: pq.FileMetaData, leaves: list[int]) -> None:
    """The bytes the leaves read decompress to, plus each value's width, at most
    :data:`MAX_DECODED_BYTES`: bounded by the codec where it can be
    (:func:`receval.results.pages.expansion_bound`), else from the page headers, which
    are also read when the codec's bound alone would refuse."""
    chunks = [meta.row_group(g).column(c) for g in range(meta.num_row_groups) for c in leaves]
    widths = sum(chunk.num_values * _WIDTH.get(chunk.physical_type, 16) for chunk in chunks)
    bounds = [pages.expansion_bound(chunk) for chunk in chunks]
    if None not in bounds and widths + sum(bounds) <= MAX_DECODED_BYTES:
        return
    decoded, budget = widths, pages.MAX_PAGES
    try:
        for chunk in chunks:
            walk = pages.page_bytes(data, chunk, budget)
            decoded, budget = decoded + walk.declared, budget - walk.pages
    except pages.PageError as error:
        raise RunError(f"{path}: cannot be read as results ({error}); {integrity.EDITED}") from None
    if decoded > MAX_DECODED_BYTES:
        raise RunError(
            f"{path}: its pages decode to {decoded:,} bytes in the columns read (at most {MAX_DECODED_BYTES:,}); "
            f"{integrity.EDITED}"
        )


def decoded_bytes(array: pa.Array) -> int:
    """Bytes ``array`` takes once its dictionaries are expanded: a dictionary-encoded
    string counts its entry's length at every use (from the indices), never once."""
    kind = array.type
    if pa.types.is_dictionary(kind):
        used = pc.take(pc.binary_length(array.dictionary), array.indices)
        return int(pc.sum(used).as_py() or 0) + 4 * len(array)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return 4 * len(array) + decoded_bytes(array.flatten())
    if pa.types.is_struct(kind):
        return sum(decoded_bytes(field) for field in array.flatten())
    return array.nbytes


def expanded(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with its dictionary-encoded columns decoded to the file's own types."""
    for i, name in enumerate(table.column_names):
        field = schema.field(name)
        if table.schema.field(i).type != field.type:
            table = table.set_column(i, field, pc.cast(table.column(i), field.type))
    return table.replace_schema_metadata(schema.metadata)


def check_expanded(path: Path, table: pa.Table) -> None:
    """The columns read, dictionaries expanded, at most :data:`MAX_DECODED_BYTES`;
    checked before any is expanded (the largest column named)."""
    sizes = {name: sum(decoded_bytes(chunk) for chunk in table.column(name).chunks) for name in table.column_names}
    total = sum(sizes.values())
    if total > MAX_DECODED_BYTES:
        largest = max(sizes, key=sizes.get)
        raise RunError(
            f"{path}: the columns read would decode to {total:,} bytes (at most {MAX_DECODED_BYTES:,}; column "
            f"{cut(repr(largest))} {sizes[largest]:,}: a dictionary-encoded string counts at each use); "
            f"{integrity.EDITED}"
        )
