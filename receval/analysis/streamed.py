"""Runs read one at a time, each kept only as the columns the comparisons across runs need.

``report`` over 10 runs of a million questions held every run's whole table (330 MB a
run) at once. Read this way, a run is opened through the door, everything about it
alone is computed (:class:`receval.analysis.summary.Summaries`,
:class:`receval.analysis.latency.Latencies`, the header's counts), and what stays is
:func:`slim`: the question ids (one shared column when every run has the same
questions), the measure the pairs and the verdicts are on, the first relevant rank
(fixed and broken questions), ``judged@k`` and whatever the options shown read
(``--by``, ``--per-question``). A measure shown beside it leaves as soon as two runs
differ on some question (:class:`Separated`): the only other thing the report asks of
it across runs is whether any question separates them
(:func:`receval.analysis.decidable.undecided`).

A header is a run as its small files describe it (run.json, the saved config,
read as the door reads them, :func:`receval.results.door.header`), to choose and order
the runs before any results are read; :func:`check_header` holds each run opened to
what its header said.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from receval.core.errors import RunError
from receval.results.stored import Run

#: Columns every slim run keeps.
KEPT = ("question_id", "first_relevant_rank")


def check_header(run: Run, seen: Run) -> None:
    """The run the door opened says what its header said (its files did not change between)."""
    if run.config != seen.config or run.info != seen.info or run.overrides != seen.overrides:
        raise RunError(f"{run.run_dir}: its config or run.json changed while the report read it; run the report again")


class Separated:
    """Which measures some question separates the runs on, run by run: each run's
    column against the first run's, over the questions both score (the same questions,
    in the same order, else nothing is known and every column stays). Holds the first
    run's columns of the measures not yet separated, nothing else."""

    def __init__(self, names: Iterable[str]):
        self.names = list(names)
        self.first: dict[str, np.ndarray] | None = None
        self.digest: bytes | None = None
        self.found: set[str] = set()
        self.known = True  # every run so far has the first run's questions

    def add(self, run: Run) -> None:
        if self.first is None:
            self.first, self.digest = {name: run.values(name) for name in self.names}, run.ids_digest
            return
        if not self.known or run.ids_digest != self.digest:
            self.known, self.first = False, {}
            return
        for name in self.names:
            if name in self.found:
                continue
            a, b = self.first[name], run.values(name)
            both = ~np.isnan(a) & ~np.isnan(b)
            if (a[both] != b[both]).any():
                self.found.add(name)
                del self.first[name]

    @property
    def separated(self) -> frozenset[str]:
        """Measures known to separate some two runs (empty when the question sets differ)."""
        return frozenset(self.found) if self.known else frozenset()


def slim(run: Run, keep: Iterable[str], first: Run | None) -> Run:
    """``run`` with only the columns ``keep`` (those it has) and :data:`KEPT`; its ids the
    ``first`` run's column and arrays when they are the same questions (one copy for all)."""
    wanted = set(keep) | set(KEPT)
    table = run.table.select([name for name in run.table.column_names if name in wanted])
    digest = run.ids_digest
    if first is not None and first is not run and first.ids_digest == digest:
        table = table.set_column(table.column_names.index("question_id"), "question_id",
                                 first.table.column("question_id"))
    out = run.filtered(table)
    out.__dict__["ids_digest"] = digest  # cached_property: no second hash of the same ids
    if first is not None and first.ids_digest == digest and "ids" in first.__dict__:
        out.__dict__["ids"] = first.__dict__["ids"]
    return out


def drop(runs: list[Run], names: Iterable[str]) -> list[Run]:
    """``runs`` without the columns ``names`` (kept caches stay)."""
    names = set(names)
    out = []
    for run in runs:
        gone = [n for n in run.table.column_names if n in names]
        if not gone:
            out.append(run)
            continue
        lighter = run.filtered(run.table.drop_columns(gone))
        lighter.__dict__.update({k: v for k, v in run.__dict__.items() if k in ("ids", "ids_digest")})
        out.append(lighter)
    return out
