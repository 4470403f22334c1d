"""Choosing runs and questions: ``--where``/``--split`` filters, measure names,
and ``key=value`` selectors (``retriever=tfidf,max_words=120``) naming runs by
their config, keys given by short or dotted name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import yaml

from receval.core.errors import RecevalError
from receval.results.configs import format_value
from receval.results.door import open_run
from receval.core.formatting import shown
from receval.results.labels import Naming, naming_of
from receval.results.stored import Run
from receval.scoring import declared


def where_pairs(where) -> list[tuple[str, str]]:
    """Question filters as ``(column, value)`` pairs, from a mapping (``{"split": "test"}``),
    pairs, or None."""
    if where is None:
        return []
    items = where.items() if isinstance(where, Mapping) else where
    return [(str(column), str(value)) for column, value in items]


def _equal(column: pa.ChunkedArray, value: str, option: str) -> pa.ChunkedArray:
    """Where ``column`` equals ``value`` as typed: a number column compared as numbers
    (``rr=1.0``, ``rr=1`` and the listed ``1.0`` the same), any other as its text."""
    if pa.types.is_integer(column.type) or pa.types.is_floating(column.type):
        try:
            number = float(value)
        except ValueError:
            raise RecevalError(f"{option}: the column holds numbers; give one (e.g. 1.0)") from None
        return pc.equal(pc.cast(column, pa.float64()), number)
    return pc.equal(pc.cast(column, pa.string()), value)


def filter_questions(runs: list[Run], where: list[tuple[str, str]], option: str = "where") -> list[Run]:
    """Keep only the questions whose ``column`` equals ``value`` (all pairs must hold); a
    column a run lacks is an error naming ``option``."""
    if not where:
        return runs
    out = []
    for run in runs:
        table = run.table
        mask = None
        for column, value in where:
            if column not in table.column_names:
                raise RecevalError(
                    f"{option} {column}={value}: no column {column!r} in {run.run_dir}; "
                    "columns: " + ", ".join(table.column_names)
                )
            this = pc.fill_null(_equal(table.column(column), value, f"{option} {column}={value}"), False)
            mask = this if mask is None else pc.and_(mask, this)
        kept = table.filter(mask)
        if kept.num_rows == 0:
            column, value = where[0] if len(where) == 1 else (None, None)
            present = ""
            if column is not None:
                values = sorted({str(v) for v in table.column(column).to_pylist()})
                present = f"; {column} values present: " + ", ".join(values[:20])
            cond = " and ".join(f"{c}={v}" for c, v in where)
            raise RecevalError(f"no questions with {cond} in {run.run_dir}{present}")
        out.append(run.filtered(kept))
    return out


def canonical_measure(name: str, runs: list[Run], option: str = "metrics") -> str:
    """``MRR`` -> ``rr``; an unknown measure or one not stored in a run is an error.
    ``rr@k`` and numeric columns such as ``rouge1_p`` are taken too
    (:mod:`receval.analysis.derived`)."""
    from receval.analysis.derived import column_for

    column = column_for(name, runs)
    if column is not None:
        return column
    try:
        canonical = declared.parse_measure(name).name
    except ValueError as error:
        canonical = name.strip().lower()
        if not declared.is_token_measure(canonical):
            chunked = ", ".join(f"{f.name}@k" for f in declared.families(declared.CHUNKS))
            raise RecevalError(f"{option}: {error}; or {chunked}") from None
    for run in runs:
        if canonical not in run.table.column_names:
            stored = ", ".join(run.measure_names)
            raise RecevalError(
                f"{option}: {canonical} is not stored in {run.run_dir} (stored: {stored}); "
                "add its cutoff to metrics.ks and re-run"
            )
    return canonical


_SPLIT = re.compile(r",(?=\s*[\w.]+\s*=)")


def parse_selector(text: str) -> list[tuple[str, str]]:
    """``retriever=tfidf,max_words=120`` -> [("retriever", "tfidf"), ("max_words", "120")]."""
    pairs = []
    for part in _SPLIT.split(text):
        if "=" not in part or not part.split("=", 1)[0].strip():
            raise RecevalError(
                f"selector {text!r}: use KEY=VALUE[,KEY=VALUE], e.g. retriever=tfidf,max_words=120"
            )
        key, value = part.split("=", 1)
        pairs.append((key.strip(), value.strip()))
    return pairs


def _resolve_key(name: str, runs: list[Run], named: Naming) -> str:
    """The dotted key a selector's ``name`` means: a column of the report
    (:func:`receval.results.labels.naming`, the one rule naming runs: ``retriever``,
    ``max_words``, ``members.0.k1``), else a config key or its last part."""
    keys: list[str] = []
    for run in runs:
        keys.extend(k for k in run.flat if k not in keys)
    name = named.keys.get(name, name)
    for choice in (f"{name}.name", f"{name}.kind"):  # retriever=tfidf: the group's choice
        if choice in keys:  # (before ``rerank`` itself: null where a run has no re-ranker)
            return choice
    if name in keys:
        return name
    matches = [k for k in keys if k.endswith("." + name) or _choice_of(k) == name]
    if len(matches) > 1:
        shown_keys = set(named.keys.values())  # a component's column stands for its kind
        narrowed = [k for k in matches if k in shown_keys or _choice_group(k) in shown_keys]
        if len(narrowed) == 1:
            return narrowed[0]
        raise RecevalError(f"selector key {name!r} is ambiguous: " + ", ".join(matches))
    if not matches:
        shown = ", ".join(named.columns) or "nothing (the configs are equal)"
        raise RecevalError(f"selector key {name!r} is not a config key; the runs differ in: {shown}")
    return matches[0]


def _choice_group(key: str) -> str | None:
    """``retriever.kind`` -> ``retriever``: the component a choice key names."""
    head, _, last = key.rpartition(".")
    return head if head and last in ("name", "kind") else None


def _choice_of(key: str) -> str | None:
    """``retriever.members.0.kind`` -> ``members.0``: a group's choice by its group."""
    head, _, last = key.rpartition(".")
    return head.rsplit(".", 1)[-1] if head and last in ("name", "kind") else None


def _value_matches(value: Any, wanted: str) -> bool:
    if format_value(value) == wanted or str(value) == wanted or shown(value, "label") == wanted:
        return True  # rerank=none: a run without one (labels call it so)
    try:
        parsed = yaml.safe_load(wanted)
    except yaml.YAMLError:
        return False
    if isinstance(parsed, list):
        parsed = tuple(parsed)
    return type(parsed) is not str and parsed == value


def select(runs: list[Run], selector: str) -> list[int]:
    """Indices of the runs whose config matches every ``key=value`` of ``selector``: a key
    named as the report's parameter columns name it (``retriever``, ``max_words``,
    ``members.0.k1``: :func:`receval.results.labels.naming`, the one rule naming runs) or
    as the config has it, a value as the column shows it or as the config holds it."""
    named = naming_of(runs)
    wanted = [(k, _resolve_key(k, runs, named), v) for k, v in parse_selector(selector)]

    def matches(i: int, name: str, key: str, value: str) -> bool:
        column = named.params[i].get(name)  # as the report's column shows it: rrf(bm25+dense)
        if column is not None and value in (shown(column, "label"), str(column)):
            return True
        return _has(runs[i], key) and _value_matches(_get(runs[i], key), value)

    return [i for i in range(len(runs)) if all(matches(i, *w) for w in wanted)]


def _component_slot(run: Run, key: str) -> str | None:
    """``rerank`` for ``rerank.kind`` when the run has no re-ranker (``rerank: null``)."""
    group, _, last = key.rpartition(".")
    return group if last in ("kind", "name") and group in run.flat and run.flat[group] is None else None


def _has(run: Run, key: str) -> bool:
    return key in run.flat or _component_slot(run, key) is not None


def _get(run: Run, key: str) -> Any:
    return run.flat[key] if key in run.flat else None


def describe(run: Run, row: dict[str, Any]) -> str:
    """A run in a message: its folder and what tells it apart (its row of the report's
    parameter columns, :attr:`receval.results.labels.Naming.params`)."""
    params = ", ".join(f"{column}={shown(value, 'label')}" for column, value in row.items())
    return f"{run.run_dir}" + (f" ({params})" if params else "")


def pick(runs: list[Run], selector: str, option: str = "runs") -> list[Run]:
    """``--runs``: the runs whose saved config matches every ``key=value`` of
    ``selector`` (``retriever=bm25,max_words=120``), across sweeps; none matching
    is an error listing them. (``--where`` selects questions, ``--runs`` runs.)"""
    indices = select(runs, selector)
    if not indices:
        rows = naming_of(runs).params
        shown = "; ".join(describe(r, row) for r, row in zip(runs[:12], rows))
        more = f" ... (+{len(runs) - 12})" if len(runs) > 12 else ""
        raise RecevalError(
            f"{option} {selector}: matches none of the {len(runs)} runs; they are: {shown}{more}"
        )
    return [runs[i] for i in indices]


def select_one(runs: list[Run], selector: str, option: str = "baseline") -> tuple[int | None, Run]:
    """The one run a selector names: a run directory, or ``key=value`` matching one run.

    Returns ``(index into runs or None, run)``; a run directory outside ``runs`` is
    loaded (index None). Several or no matches are an error listing the candidates.
    """
    path = Path(selector)
    if "=" not in selector or path.exists():
        if not path.exists():
            raise RecevalError(
                f"{option} {selector!r}: no such run directory; give a run directory "
                "or KEY=VALUE, e.g. retriever=tfidf"
            )
        resolved = path.resolve()
        for i, run in enumerate(runs):
            if run.run_dir.resolve() == resolved:
                return i, run
        return None, open_run(path, what=option)
    matched = select(runs, selector)
    rows = naming_of(runs).params
    if not matched:
        raise RecevalError(
            f"{option} {selector}: matches none of the {len(runs)} runs; they are: "
            + "; ".join(describe(r, row) for r, row in zip(runs, rows))
        )
    if len(matched) > 1:
        raise RecevalError(
            f"{option} {selector}: matches {len(matched)} runs, narrow it with a second "
            "key (e.g. ...,max_words=120): "
            + "; ".join(describe(runs[i], rows[i]) for i in matched)
        )
    return matched[0], runs[matched[0]]
