"""A results file is data from outside: its metadata, column types, values and
string sizes are checked before anything reads them as numbers or Python objects.

A run folder may have been edited, copied from someone else, or written by another
tool. Each check fails with one :class:`~receval.core.errors.RunError` line naming the
file and the key or column, never a traceback:

- the ``receval`` metadata: a JSON object under 1 MB whose ``schema_version`` is a
  whole number from 1 to the schema this receval reads (not ``"1"``, ``true`` or
  ``1.5``), whose ``n_chunks`` is a count and whose hashes are strings
  (:func:`metadata_of`);
- column types, from the file's schema before any row is read
  (:func:`check_schema`): the fixed columns as :mod:`receval.results.format` writes them
  (a string or large string, lists of them), and every column receval reads as a
  number (measures, ROUGE, latency, counts, money) an integer or float column, never
  a string, boolean or list;
- values, on the Arrow columns (vectorised, no Python objects) (:func:`check_values`):
  measures bounded to [0, 1] stay there (NaN counts as missing, like null), no
  measure is infinite, ``context_tokens@k`` is >= 0, ``first_relevant_rank`` and
  ``first_relevant_call`` >= 1, ``recall_union`` in [0, 1], ``n_calls`` >= 0;
  latency, counts and money (``cost_usd``...) are finite, >= 0 and present in every
  row (``select --prefer money`` once chose a run whose NaN cost read as $0); no
  question id is missing; the per-rank columns as :mod:`receval.results.ranks` checks them;
- string sizes (:func:`check_lengths`, on a dictionary-encoded column's dictionary,
  before its entries are repeated into the rows): an id or label (``question_id``,
  ``kind``, ``split``, the ``relevant`` and ``retrieved`` ids) holds at most
  :data:`MAX_ID` characters and a question at most :data:`MAX_TEXT`; what is shown of
  any stored string in a message is cut (:func:`receval.core.secrets.cut`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from receval import __version__
from receval.core import numeric
from receval.core.secrets import cut
from receval.core.errors import RunError
from receval.scoring.declared import family_of, is_measure, is_token_measure
from receval.results import ranks
from receval.results.format import FIXED_NAMES, OVERLAP, RANKS, SCHEMA_VERSION, is_timing

MAX_METADATA = 1 << 20  # bytes of the receval metadata JSON
MAX_ID = 4096  # characters in an id or label (section ids, evidence items page:start-end, kinds)
MAX_TEXT = 100_000  # characters in a question
AMOUNTS = ("pairs_scored", "cost_usd")  # whole-column names of counts and money
AMOUNT_PREFIXES = ("requests.", "input_tokens.", "output_tokens.", "cost_usd.")
EDITED = "not results receval wrote (edited, or from another tool); re-run this job"


def _strings(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _numbers(kind: pa.DataType) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_floating(kind)


def _list_of(test):
    def check(kind: pa.DataType) -> bool:
        return (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and test(kind.value_type)

    return check


#: The fixed columns: (type test, what it should be).
FIXED = {
    "question_id": (_strings, "strings"),
    "kind": (_strings, "strings"),
    "split": (_strings, "strings"),
    "question": (_strings, "strings"),
    "relevant": (_list_of(_strings), "lists of strings"),
    "grades": (_list_of(pa.types.is_integer), "lists of integers"),
    "retrieved": (_list_of(_strings), "lists of strings"),
    "scores": (_list_of(_numbers), "lists of numbers"),
    "first_relevant_rank": (pa.types.is_integer, "integers"),
}
assert tuple(FIXED) == FIXED_NAMES


def is_amount(name: str) -> bool:
    """Latency, counts and money columns: finite, >= 0, in every row."""
    return is_timing(name) or name in AMOUNTS or name.startswith(AMOUNT_PREFIXES)


def _bounds(name: str) -> tuple[float, float] | None:
    """(low, high) of a numeric column receval reads, None for a column it does not."""
    if is_amount(name):
        return (0.0, np.inf)
    if is_measure(name) or is_token_measure(name):  # as its family declares (context_tokens@k: a count)
        return (0.0, 1.0) if family_of(name).bounded else (0.0, np.inf)
    if name in OVERLAP:
        return (0.0, 1.0)
    if name in ("first_relevant_rank", "first_relevant_call"):
        return (1.0, np.inf)
    if name == "recall_union":
        return (0.0, 1.0)
    if name == "n_calls":
        return (0.0, np.inf)
    return None


def metadata_of(path: Path, schema: pa.Schema, key: bytes) -> dict:
    """The file's receval metadata, checked (see the module docstring)."""
    raw = (schema.metadata or {}).get(key)
    if raw is None:
        raise RunError(f"{path}: not written by receval (no receval metadata)")
    if len(raw) > MAX_METADATA:
        raise RunError(f"{path}: its receval metadata is {len(raw):,} bytes (at most {MAX_METADATA:,}); {EDITED}")
    try:
        metadata = json.loads(raw)
    except (ValueError, RecursionError):
        raise RunError(f"{path}: its receval metadata is not JSON; {EDITED}") from None
    if not isinstance(metadata, dict) or "schema_version" not in metadata:
        raise RunError(f"{path}: not written by receval (no receval metadata)")
    version = metadata["schema_version"]
    if numeric.count(version) is None or isinstance(version, float) or version < 1:
        raise RunError(
            f"{path}: its receval metadata gives schema_version {cut(repr(version))}, not a schema number "
            f"(a whole number from 1); {EDITED}"
        )
    if version > SCHEMA_VERSION:
        raise RunError(
            f"{path}: written with results schema {version}, this receval ({__version__}) reads schema "
            f"<= {SCHEMA_VERSION}; upgrade receval"
        )
    chunks = metadata.get("n_chunks")
    if chunks is not None and (numeric.count(chunks) is None or isinstance(chunks, float)):
        raise RunError(f"{path}: its receval metadata gives n_chunks {cut(repr(chunks))}, not a count; {EDITED}")
    for name in ("config_hash", "dataset_fingerprint", "receval_version"):
        if metadata.get(name) is not None and not isinstance(metadata[name], str):
            raise RunError(f"{path}: its receval metadata gives {name} {cut(repr(metadata[name]))}, not a string; {EDITED}")
    return metadata


def check_schema(path: Path, schema: pa.Schema) -> None:
    """Every fixed column present with its type; every numeric column receval reads a number."""
    missing = [name for name in FIXED_NAMES if name not in schema.names]
    if missing:
        raise RunError(f"{path}: not complete results (no column {', '.join(missing)}); re-run this job")
    for field in schema:
        name = field.name
        if name in FIXED:
            test, wanted = FIXED[name]
        elif name in RANKS:
            problem = ranks.type_problem(name, field.type)
            if problem:
                raise RunError(f"{path}: column {cut(repr(name))} {problem}; {EDITED}")
            continue
        elif _bounds(name) is not None:
            test, wanted = _numbers, "numbers"
        else:
            continue  # a column receval does not read (yet): left alone
        if not test(field.type):
            raise RunError(f"{path}: column {cut(repr(name))} holds {field.type}, not {wanted}; {EDITED}")


def check_lengths(path: Path, table: pa.Table) -> None:
    """Strings of bounded size (:data:`MAX_ID`, :data:`MAX_TEXT`), on the Arrow columns
    read; a dictionary-encoded column is checked on its dictionary, before any entry is
    repeated into the rows that use it."""
    names = set(table.column_names)
    for name, limit in (("question_id", MAX_ID), ("kind", MAX_ID), ("split", MAX_ID), ("relevant", MAX_ID),
                        ("retrieved", MAX_ID), ("question", MAX_TEXT), ("nuggets", MAX_ID),
                        ("nugget_texts", MAX_TEXT)):
        if name in names:
            _check_length(path, table, name, limit)


def check_values(path: Path, table: pa.Table) -> None:
    """Numbers in range and every question id present, on the Arrow columns read."""
    names = set(table.column_names)
    if "question_id" in names and table.column("question_id").null_count:
        raise RunError(f"{path}: column 'question_id' has a missing id; {EDITED}")
    for name in table.column_names:
        bounds = _bounds(name)
        if bounds is not None:
            _check_range(path, table, name, *bounds)
    ranks.check(path, table)


def _check_length(path: Path, table: pa.Table, name: str, limit: int) -> None:
    column = table.column(name)
    if not (_strings(column.type) or pa.types.is_dictionary(column.type)):
        column = pc.list_flatten(column)
    pieces = [chunk.dictionary if pa.types.is_dictionary(chunk.type) else chunk for chunk in column.chunks]
    longest = max((pc.max(pc.utf8_length(piece)).as_py() or 0 for piece in pieces if len(piece)), default=0)
    if longest > limit:
        raise RunError(
            f"{path}: column {name!r} holds a string of {longest:,} characters (at most {limit:,} in "
            f"{'a question' if name == 'question' else 'a nugget' if name == 'nugget_texts' else 'an id or label'}); {EDITED}"
        )


def _check_range(path: Path, table: pa.Table, name: str, low: float, high: float) -> None:
    column = table.column(name)
    values = np.asarray(pc.cast(column, pa.float64(), safe=False).to_numpy(zero_copy_only=False), dtype=np.float64)
    missing = np.asarray(column.is_null().to_numpy(zero_copy_only=False), dtype=bool) | np.isnan(values)
    if is_amount(name):
        bad = missing | ~np.isfinite(values) | (values < low)
        wanted = "a finite number >= 0 in every row"
    else:
        bad = ~missing & ((values < low) | (values > high) | np.isinf(values))
        wanted = f"a number from {low:g} to {high:g} (or missing)" if np.isfinite(high) else f"a finite number >= {low:g}"
    if bad.any():
        row = int(np.argmax(bad))
        shown = "a missing value" if column[row].as_py() is None else repr(float(values[row]))
        qid = table.column("question_id")[row].as_py() if "question_id" in table.column_names else None
        where = f" for question {cut(repr(qid))}" if qid is not None else ""
        raise RunError(f"{path}: column {name!r} holds {shown}{where}, not {wanted}; {EDITED}")
