"""A stored run against its re-run, question by question: every column but the
timings must be identical (:func:`compare_tables`, :class:`Reproduction`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pyarrow as pa

from receval.results.format import is_timing

IGNORED = "latency_ms and latency_ms.<stage>"


@dataclass
class Reproduction:
    """A stored run against its re-run."""

    run_dir: str
    out_dir: str | None  # None: the temporary re-run was deleted (identical)
    n_questions: int
    columns: list[str]  # compared columns
    differences: dict[str, list[str]] = field(default_factory=dict)  # id -> columns
    only_stored: list[str] = field(default_factory=list)  # question ids
    only_reproduced: list[str] = field(default_factory=list)
    columns_only_stored: list[str] = field(default_factory=list)
    columns_only_reproduced: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not (
            self.differences
            or self.only_stored
            or self.only_reproduced
            or self.columns_only_stored
            or self.columns_only_reproduced
        )

    def to_dict(self) -> dict:
        return {
            "run_dir": self.run_dir,
            "out_dir": self.out_dir,
            "identical": self.identical,
            "n_questions": self.n_questions,
            "columns": self.columns,
            "ignored": IGNORED,
            "differences": [
                {"question_id": q, "columns": cols} for q, cols in self.differences.items()
            ],
            "only_stored": self.only_stored,
            "only_reproduced": self.only_reproduced,
            "columns_only_stored": self.columns_only_stored,
            "columns_only_reproduced": self.columns_only_reproduced,
            "notes": self.notes,
        }


# ----------------------------------------------------------------- comparing


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def compare_tables(stored: pa.Table, new: pa.Table) -> dict:
    """Question-by-question differences between two results tables (latency excepted)."""
    old_cols = [c for c in stored.column_names if not is_timing(c)]
    new_cols = [c for c in new.column_names if not is_timing(c)]
    common = [c for c in old_cols if c in new_cols]
    old_ids = stored.column("question_id").to_pylist()
    new_ids = new.column("question_id").to_pylist()
    new_index = {q: i for i, q in enumerate(new_ids)}
    old_set = set(old_ids)
    pairs = [(i, new_index[q]) for i, q in enumerate(old_ids) if q in new_index]
    differences: dict[str, list[str]] = {}
    for column in common:
        if column == "question_id":
            continue
        a = stored.column(column).to_pylist()
        b = new.column(column).to_pylist()
        for i, j in pairs:
            if not _same(a[i], b[j]):
                differences.setdefault(old_ids[i], []).append(column)
    order = {q: i for i, q in enumerate(old_ids)}
    return {
        "columns": common,
        "differences": dict(sorted(differences.items(), key=lambda kv: order[kv[0]])),
        "only_stored": [q for q in old_ids if q not in new_index],
        "only_reproduced": [q for q in new_ids if q not in old_set],
        "columns_only_stored": [c for c in old_cols if c not in new_cols],
        "columns_only_reproduced": [c for c in new_cols if c not in old_cols],
    }
