"""Nugget support labels: a judge's word on whether a retrieved unit supports a nugget,
read from a labels JSONL and applied to a stored run (``report --labels``).

A support line is a labels line with a ``nugget`` (the nugget's id, as the run stores it
in ``nuggets``) and a ``support`` (``support``, ``partial_support`` or ``not_support``, the
AutoNuggetizer's three labels) in place of a grade::

    {"question_id": "q01", "id": "loans#loan-periods", "nugget": "n1", "support": "support", "judge": "..."}

``receval judge`` writes them for the support lines of a pool (:mod:`receval.judge.support`).
The rule, stated: for a nugget a file labels, the word rule (:mod:`receval.measures.nuggets`)
gives way to the labels: the nugget is supported from the chunk rank of the first retrieved
unit labelled ``support`` (strict: ``partial_support`` does not count, as the track's strict
score), and not at all when none is. A unit the file does not label for that nugget counts
as not supporting it. Nuggets no line names keep the word rule's rank. ``nugget_recall@k``
and ``vital_nugget_recall@k`` are recomputed (:mod:`receval.scoring.chunks`); nothing on
disk changes. Units of a run collapsed to sections are judged whole: the rank is that of
the unit's first chunk.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa

from receval.core.errors import RecevalError
from receval.core.secrets import cut
from receval.results.format import RANKS
from receval.results.ranks import padded, padded_equal
from receval.scoring import declared
from receval.scoring.chunks import ChunkRanking

LABELS = ("support", "partial_support", "not_support")
#: question -> nugget -> unit -> supports (True only for ``support``)
Support = dict[str, dict[str, dict[str, bool]]]


def is_support_line(record) -> bool:
    return isinstance(record, dict) and "nugget" in record


def support_of(record: dict, where: str) -> tuple[str, str, str, bool]:
    """(question, nugget, unit, supports) of a support line; an error naming ``where``."""
    qid, uid, nugget, label = (record.get(k) for k in ("question_id", "id", "nugget", "support"))
    if not all(isinstance(v, str) and v for v in (qid, uid, nugget)) or label not in LABELS:
        raise RecevalError(
            f"{where}: a support line holds question_id, id and nugget as strings and support as one of "
            f"{', '.join(LABELS)} (got {cut(repr(nugget))}, {cut(repr(label))})"
        )
    return qid, nugget, uid, label == "support"


def read_support(path: str | Path) -> Support:
    """The support lines of a labels JSONL (other lines left to the grade reader); a pair
    labelled two ways is an error naming both lines."""
    found: Support = {}
    where: dict[tuple, int] = {}
    with Path(path).open(encoding="utf-8", errors="replace") as handle:
        for number, text in enumerate(handle, 1):
            try:
                record = json.loads(text) if text.strip() else None
            except json.JSONDecodeError:
                continue  # the grade reader names a bad line
            if not is_support_line(record):
                continue
            qid, nugget, uid, supports = support_of(record, f"{path}:{number}")
            before = found.setdefault(qid, {}).setdefault(nugget, {}).get(uid)
            if before is not None and before != supports:
                raise RecevalError(f"{path}:{number}: {qid} {nugget} {uid} is labelled otherwise on line "
                                   f"{where[qid, nugget, uid]}; keep one")
            found[qid][nugget][uid] = supports
            where.setdefault((qid, nugget, uid), number)
    return found


def merge(files: list[Support]) -> Support:
    merged: Support = {}
    for support in files:
        for qid, nuggets in support.items():
            for nugget, units in nuggets.items():
                merged.setdefault(qid, {}).setdefault(nugget, {}).update(units)
    return merged


def applicable(table: pa.Table, support: Support) -> int:
    """Support labels naming a question and one of its nuggets the run stores."""
    if not support or "nuggets" not in table.column_names:
        return 0
    ids = table.column("question_id").to_pylist()
    nuggets = table.column("nuggets").to_pylist()
    return sum(len(units) for qid, names in zip(ids, nuggets) for nugget, units in support.get(qid, {}).items()
               if nugget in (names or []))


def why_none_apply(tables: list[pa.Table], support: Support) -> str:
    """Why no support line of ``support`` applies to the runs of ``tables``: they store no
    nuggets, or the lines name (question, nugget) pairs none of them stores."""
    count = sum(len(units) for nuggets in support.values() for units in nuggets.values())
    lines = f"{count} nugget support line{'s' if count != 1 else ''}"
    if not any("nuggets" in table.column_names for table in tables):
        return (f"its {lines} name nuggets, and these runs store none (run them with "
                "dataset.nuggets=FILE)")
    stored = {(qid, nugget) for table in tables if "nuggets" in table.column_names
              for qid, names in zip(table.column("question_id").to_pylist(), table.column("nuggets").to_pylist())
              for nugget in names or []}
    missing = sorted((qid, nugget) for qid, nuggets in support.items() for nugget in nuggets
                     if (qid, nugget) not in stored)
    shown = ", ".join(f"{qid} {nugget}" for qid, nugget in missing[:5]) + (" ..." if len(missing) > 5 else "")
    return f"its {lines} name nuggets these runs do not store ({shown})"


def apply_support(table: pa.Table, support: Support) -> pa.Table:
    """``table`` with ``nugget_at`` and the nugget measures recomputed from ``support``
    (see the module docstring); unchanged when it stores no nuggets."""
    needed = {"nuggets", "nugget_at", "nugget_importance", "retrieved", "retrieved_at"}
    if not support or not needed <= set(table.column_names):
        return table
    ids = table.column("question_id").to_pylist()
    names = table.column("nuggets").to_pylist()
    retrieved = table.column("retrieved").to_pylist()
    first_chunk = table.column("retrieved_at").to_pylist()
    at = table.column("nugget_at").to_pylist()
    for row, (qid, nuggets) in enumerate(zip(ids, names)):
        labelled = support.get(qid)
        if not labelled or not nuggets:
            continue
        ranks = at[row] = list(at[row] or [0] * len(nuggets))
        for slot, nugget in enumerate(nuggets):
            if nugget in labelled:
                hits = [rank for uid, rank in zip(retrieved[row] or [], first_chunk[row] or []) if labelled[nugget].get(uid)]
                ranks[slot] = hits[0] if hits else 0
    table = table.set_column(table.column_names.index("nugget_at"), pa.field("nugget_at", RANKS["nugget_at"]),
                             pa.array(at, RANKS["nugget_at"]))
    return _recount(table)


def _recount(table: pa.Table) -> pa.Table:
    """The nugget measure columns (of the families declared to read ``nugget_at``)
    recomputed from ``nugget_at``."""
    nugget_at, count = padded(table.column("nugget_at"), np.int64)
    vital = padded_equal(table.column("nugget_importance"), "vital")
    ranking = ChunkRanking(lengths=np.zeros(len(count), np.int64), words=np.zeros((len(count), 0)),
                           nugget_at=nugget_at, nugget_vital=vital,
                           nugget_valid=np.arange(nugget_at.shape[1])[None, :] < count[:, None])
    for position, name in enumerate(table.column_names):
        measure = declared.parse_chunk_measure(name) if declared.is_token_measure(name) else None
        if measure is not None and measure.k is not None and declared.family(measure.family).needs == "nugget_at":
            values = declared.chunk_measure(measure, ranking, measure.k)
            table = table.set_column(position, table.schema.field(name),
                                     pa.array(values, pa.float64(), mask=np.isnan(values)))
    return table
