"""The per-rank columns read back (:data:`receval.results.format.RANKS`): checked, and as
padded arrays.

A budget measure is derived from them (:mod:`receval.analysis.derived`), so a file that
holds, say, a negative token count or a unit list longer than its ranking would give a
recall above 1 or an index error: :func:`check` refuses it first, one
:class:`~receval.core.errors.RunError` line naming the file, the column and the question.
Checked (vectorised, on the Arrow columns read): types; counts >= 0 (``retrieved_at`` >= 1
and rising within a row); gains finite and >= 0; each unit
list as long as ``retrieved``, the chunk lists as long as each other and the nugget lists
too; per chunk, new tokens <= its tokens and evidence tokens <= its new tokens, and a
question's evidence tokens found <= ``evidence_tokens``; importance ``vital`` or ``okay``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from receval.core.errors import RunError
from receval.core.secrets import cut
from receval.results.format import CHUNK_RANKS, IMPORTANCE, NUGGET_LISTS, RANKS, UNIT_RANKS

EDITED = "not results receval wrote (edited, or from another tool); re-run this job"


def type_problem(name: str, kind: pa.DataType) -> str | None:
    """What is wrong with a per-rank column's type, or None."""
    wanted = RANKS[name]
    inner = wanted.value_type if pa.types.is_list(wanted) else wanted
    listed = pa.types.is_list(kind) or pa.types.is_large_list(kind)
    got = kind.value_type if listed else kind
    test = (pa.types.is_string if pa.types.is_string(inner) else
            pa.types.is_integer if pa.types.is_integer(inner) else
            lambda k: pa.types.is_integer(k) or pa.types.is_floating(k))
    same_shape = listed == pa.types.is_list(wanted)
    if same_shape and (test(got) or pa.types.is_large_string(got) and pa.types.is_string(inner)):
        return None
    return f"holds {kind}, not {wanted}"


def _lists(column: pa.ChunkedArray | pa.Array) -> tuple[pa.Array, np.ndarray, pa.Array]:
    """(the list array, (Q,) lengths with null as 0, its items flattened)."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_large_list(array.type):
        array = array.cast(pa.list_(array.type.value_type))
    lengths = np.asarray(pc.fill_null(pc.list_value_length(array), 0).to_numpy(zero_copy_only=False), dtype=np.int64)
    return array, lengths, pc.list_flatten(array)


def _scatter(lengths: np.ndarray, values: np.ndarray, dtype) -> np.ndarray:
    """Flattened ``values`` back into (Q, K) rows of ``lengths``, 0 past each row's end."""
    out = np.zeros((lengths.size, int(lengths.max(initial=0))), dtype=dtype)
    rows = np.repeat(np.arange(lengths.size), lengths)
    starts = np.cumsum(lengths) - lengths
    out[rows, np.arange(lengths.sum()) - np.repeat(starts, lengths)] = values
    return out


def padded(column: pa.ChunkedArray | pa.Array, dtype=np.float64) -> tuple[np.ndarray, np.ndarray]:
    """A list column as ((Q, K) values, 0 past each row's end; (Q,) lengths, 0 for null)."""
    _, lengths, flat = _lists(column)
    values = np.asarray(pc.fill_null(flat, 0).to_numpy(zero_copy_only=False), dtype=dtype) if len(flat) else \
        np.zeros(0, dtype)
    return _scatter(lengths, values, dtype), lengths


def padded_equal(column: pa.ChunkedArray | pa.Array, value: str) -> np.ndarray:
    """A list-of-strings column as (Q, K) bool: each item equal to ``value`` (False past a row's end)."""
    _, lengths, flat = _lists(column)
    same = np.asarray(pc.fill_null(pc.equal(flat, value), False).to_numpy(zero_copy_only=False), dtype=bool) \
        if len(flat) else np.zeros(0, bool)
    return _scatter(lengths, same, bool)


def scalar(column: pa.ChunkedArray) -> np.ndarray:
    """An int column as float64, null -> NaN."""
    return np.asarray(pc.fill_null(pc.cast(column, pa.float64()), float("nan")).to_numpy(zero_copy_only=False))


def check(path: Path, table: pa.Table) -> None:
    """The per-rank columns of ``table`` as the module docstring says; a RunError naming
    the first problem."""
    names = [n for n in RANKS if n in table.column_names]
    if not names:
        return
    ids = table.column("question_id").to_pylist() if "question_id" in table.column_names else None

    def fail(name: str, row: int, what: str) -> None:
        where = f" for question {cut(repr(ids[row]))}" if ids is not None else ""
        raise RunError(f"{path}: column {name!r} holds {what}{where}; {EDITED}")

    arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name in names:
        column = table.column(name)
        if pa.types.is_string(RANKS[name].value_type if pa.types.is_list(RANKS[name]) else RANKS[name]):
            continue
        if pa.types.is_list(RANKS[name]):
            values, lengths = padded(column)
            inside = np.arange(values.shape[1])[None, :] < lengths[:, None]
        else:
            values, lengths = scalar(column)[:, None], None
            inside = ~np.isnan(values)
        bad = inside & (~np.isfinite(values) | (values < (1 if name == "retrieved_at" else 0)))
        if bad.any():
            row = int(np.argmax(bad.any(axis=1)))
            fail(name, row, "a value out of range (a count below 0, or a gain that is not a finite number >= 0)")
        arrays[name] = (values, lengths)
    _check_lengths(table, arrays, fail)
    _check_relations(arrays, fail)
    if "nugget_importance" in names:
        flat = pc.list_flatten(table.column("nugget_importance").combine_chunks())
        if len(flat) and not pc.all(pc.is_in(flat, pa.array(IMPORTANCE))).as_py():
            parents = pc.list_parent_indices(table.column("nugget_importance").combine_chunks()).to_numpy()
            bad = ~np.asarray(pc.is_in(flat, pa.array(IMPORTANCE)).to_numpy(zero_copy_only=False), dtype=bool)
            fail("nugget_importance", int(parents[np.argmax(bad)]), f"a label other than {' or '.join(IMPORTANCE)}")


def _lengths(table: pa.Table, name: str, arrays: dict) -> np.ndarray:
    if name in arrays:
        return arrays[name][1]
    return np.asarray(pc.fill_null(pc.list_value_length(table.column(name)), 0).to_numpy(zero_copy_only=False))


def _check_lengths(table: pa.Table, arrays: dict, fail) -> None:
    for group, anchor in ((UNIT_RANKS, "retrieved"), (CHUNK_RANKS, None), (NUGGET_LISTS, None)):
        present = [n for n in group if n in table.column_names]
        if anchor is not None and anchor in table.column_names and present:
            present = [anchor, *present]
        if len(present) < 2:
            continue
        first = _lengths(table, present[0], arrays)
        for name in present[1:]:
            differ = _lengths(table, name, arrays) != first
            if differ.any():
                fail(name, int(np.argmax(differ)), f"a list whose length is not that of {present[0]!r}")
    if "retrieved_at" in arrays:
        at, lengths = arrays["retrieved_at"]
        inside = np.arange(at.shape[1])[None, :] < lengths[:, None]
        falls = inside[:, 1:] & (np.diff(at, axis=1) <= 0) if at.shape[1] > 1 else np.zeros((len(at), 0), bool)
        if falls.any():
            fail("retrieved_at", int(np.argmax(falls.any(axis=1))), "chunk ranks that do not rise")


def _check_relations(arrays: dict, fail) -> None:
    """New tokens <= tokens, evidence tokens <= new tokens, found <= the units' tokens."""
    pairs = (("chunk_new_tokens", "chunk_tokens"), ("chunk_evidence_tokens", "chunk_new_tokens"))
    for small, large in pairs:
        if small in arrays and large in arrays:
            a, b = arrays[small][0], arrays[large][0]
            width = min(a.shape[1], b.shape[1])
            bad = a[:, :width] > b[:, :width]
            if bad.any():
                fail(small, int(np.argmax(bad.any(axis=1))), f"a count above the chunk's {large}")
    if "chunk_evidence_tokens" in arrays and "evidence_tokens" in arrays:
        found = arrays["chunk_evidence_tokens"][0].sum(axis=1)
        total = arrays["evidence_tokens"][0][:, 0]
        bad = found > np.nan_to_num(total, nan=0.0)
        if bad.any():
            fail("chunk_evidence_tokens", int(np.argmax(bad)), "more evidence tokens than evidence_tokens")
