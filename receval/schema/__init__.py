"""What a config schema allows: its keys, and each number's range.

Hydra types a run through its dataclass schemas, but two doors stay open: a key
added with ``+`` is force-added past the schema (``+chunking.max_word=20`` ran at
120 words and saved the bogus key), and the run-level schema types the component
groups (``chunking``, ``retriever``, ``rerank``, ``cost``) as ``Any``, since each
component is typed by its own kind's schema when it is built. So after composition
:func:`problems` walks a config node against its dataclass:

- every key must be a field; one that is not is refused with the closest fields
  ("did you mean") and the list of valid ones (:func:`unknown_key`);
- every number must lie in the range declared beside its field, in one form::

      k1: float = field(default=1.2, metadata=range_(0, 1000, hint="1.2 is usual"))

  NaN and infinities lie in no range, so this is also the one finiteness check.
  A list of numbers (``metrics.ks``, fusion weights) has each element checked.

``python -m receval.schema`` prints every range (docs/pages/reference/ranges.md is that output:
:func:`receval.run.config.ranges_table`).
"""

from __future__ import annotations

import difflib
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, fields, is_dataclass
from functools import cache

from receval.core.ranges import (  # noqa: F401  (re-exported: the schemas' vocabulary)
    BATCH, INT32, RANGE, RETRIES, SECONDS, SEED, SHORTLIST, THREADS, TOKENS, WAIT, WORDS, Range, _number, range_,
)


# ------------------------------------------------------------------ field types


@dataclass(frozen=True)
class Number:
    """What a numeric field holds: int or float, optionally null, optionally a list of them."""

    kind: type
    optional: bool = False
    many: bool = False


@cache
def hints(schema: type) -> dict[str, object]:
    return typing.get_type_hints(schema)


def number_of(annotation) -> Number | None:
    """The numeric shape of a field's type, or None when it holds no number (bool is no number)."""
    optional = False
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1:
            return None
        annotation, optional = rest[0], True
    if typing.get_origin(annotation) is list:
        inner = typing.get_args(annotation)
        found = number_of(inner[0]) if inner else None
        return Number(found.kind, optional, True) if found and not found.many else None
    if annotation in (int, float):
        return Number(annotation, optional)
    return None


def numeric_fields(schema: type) -> list[tuple[str, Number, Range | None]]:
    """(name, shape, range) of every numeric field of ``schema``."""
    found = []
    for f in fields(schema):
        shape = number_of(hints(schema)[f.name])
        if shape is not None:
            found.append((f.name, shape, f.metadata.get(RANGE)))
    return found


def nested_schema(annotation) -> type | None:
    """The dataclass a field holds (``dataset: DatasetConfig``), or None. A config group's
    base (``retriever: RetrieverConfig``, marked by ``component_group``) is None too: its
    node holds an option's schema, checked by its owner (:mod:`receval.run.components`)."""
    if getattr(annotation, "component_group", None):
        return None
    return annotation if isinstance(annotation, type) and is_dataclass(annotation) else None


def node_schema(declared: type, node) -> type:
    """The schema a nested node is checked against: its declared dataclass, or the subclass
    the node was typed as (``dataset=ir_datasets`` merges ``dataset/base_ir_datasets``, a
    :class:`receval.run.config.DatasetConfig` with an ``id``, into the ``dataset`` node)."""
    try:
        from omegaconf import DictConfig, OmegaConf

        found = OmegaConf.get_type(node) if isinstance(node, DictConfig) else None
    except Exception:  # a node OmegaConf cannot type: its declared schema
        found = None
    return found if isinstance(found, type) and is_dataclass(found) and issubclass(found, declared) else declared


# ------------------------------------------------------------------ checks


def join(key: str, name: str) -> str:
    return f"{key}.{name}" if key else name


def unknown_key(key: str, name: str, valid: list[str], where: str = "", noun: str = "key") -> str:
    """The message for ``name``, not a key of the node at ``key``: its closest keys and all of them."""
    dotted = join(key, name)
    place = where or (key if key else "the config")
    close = difflib.get_close_matches(name, valid, n=3, cutoff=0.6)
    close = close or difflib.get_close_matches(name, valid, n=1, cutoff=0.5)  # short keys: "kl" finds "k1"
    guess = f"; did you mean {' or '.join(join(key, c) for c in close)}?" if close else ";"
    return f"{dotted} is not a {noun} of {place}{guess} valid {noun}s: {', '.join(valid)}"


def unknown_keys(schema: type, node, key: str = "") -> list[str]:
    """A message per key of ``node`` that ``schema`` has no field for."""
    if not isinstance(node, Mapping) and not hasattr(node, "keys"):
        return []
    valid = [f.name for f in fields(schema)]
    kind = node.get("kind") if "kind" in valid else None
    where = f"{key} ({kind})" if key and kind else ""
    return [unknown_key(key, str(name), valid, where) for name in node.keys() if str(name) not in valid]


def range_problems(schema: type, node, key: str = "") -> list[str]:
    """A message per number of ``node`` outside its field's range (a number without a declared
    range must still be finite)."""
    problems = []
    for name, shape, bounds in numeric_fields(schema):
        if name not in node:
            continue
        value = node[name]
        if value is None:
            continue
        values = list(enumerate(value)) if shape.many and not isinstance(value, (str, bytes)) else [(None, value)]
        for index, item in values:
            where = join(key, name) + ("" if index is None else f"[{index}]")
            problem = out_of_range(where, item, shape, bounds)
            if problem:
                problems.append(problem)
    return problems


def out_of_range(key: str, value, shape: Number, bounds: Range | None) -> str | None:
    """The message for ``key=value`` when it is no number, or not in ``bounds``."""
    what = "an integer" if shape.kind is int else "a number"
    null = null_text(shape, bounds)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{key}={value!r}: not a number; use {what}" + (f" in {bounds}" if bounds else "") + null
    if bounds is None:
        return None if math.isfinite(float(value)) else f"{key}={value}: use a finite number{null}"
    if bounds.holds(value):
        return None
    hint = f" ({bounds.hint})" if bounds.hint else ""
    return f"{key}={value}: out of range; use {what} in {bounds}{null}{hint}"


def _nested(schema: type, node, key: str):
    """(schema, node, key) of each dataclass node ``node`` holds (``retriever.ray``)."""
    for f in fields(schema):
        nested = nested_schema(hints(schema)[f.name])
        if nested is not None and f.name in node and hasattr(node[f.name], "keys"):
            yield node_schema(nested, node[f.name]), node[f.name], join(key, f.name)


def deep_unknown_keys(schema: type, node, key: str = "") -> list[str]:
    """:func:`unknown_keys` of ``node`` and of the dataclass nodes it holds."""
    found = unknown_keys(schema, node, key)
    for inner in _nested(schema, node, key):
        found += deep_unknown_keys(*inner)
    return found


def deep_range_problems(schema: type, node, key: str = "") -> list[str]:
    """:func:`range_problems` of ``node`` and of the dataclass nodes it holds."""
    found = []
    for inner in _nested(schema, node, key):
        found += deep_range_problems(*inner)
    return found + range_problems(schema, node, key)


def problems(schema: type, node, key: str = "") -> list[str]:
    """Unknown keys, then numbers out of range, in ``node`` and the dataclass nodes it holds.
    Fields typed ``Any`` (component nodes, free mappings) are left to their owners."""
    found = unknown_keys(schema, node, key)
    for f in fields(schema):
        nested = nested_schema(hints(schema)[f.name])
        if nested is not None and f.name in node and hasattr(node[f.name], "keys"):
            found += problems(node_schema(nested, node[f.name]), node[f.name], join(key, f.name))
    return found + range_problems(schema, node, key)


# ------------------------------------------------------------------ the table of ranges


def range_rows(schema: type, key: str) -> list[tuple[str, str, str]]:
    """(key, range, hint) of every numeric field of ``schema`` and its dataclass fields."""
    rows = []
    for f in fields(schema):
        nested = nested_schema(hints(schema)[f.name])
        if nested is not None:
            rows += range_rows(nested, join(key, f.name))
    for name, shape, bounds in numeric_fields(schema):
        what = ("integer" if shape.kind is int else "number") + ("s" if shape.many else "")
        shown = f"{what} in {bounds}" if bounds else f"finite {what}"
        rows.append((join(key, name), shown + null_text(shape, bounds), bounds.hint if bounds else ""))
    return rows


def null_text(shape: Number, bounds: Range | None) -> str:
    if not shape.optional:
        return ""
    return f", or null for {bounds.null}" if bounds and bounds.null else ", or null"


