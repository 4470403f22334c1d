"""One stored run read back: :class:`Run` (:mod:`receval.results.record`) and the
readers callers named before the door existed.

:func:`read_run` and :func:`load_run` are :func:`receval.results.door.open_run` with
the columns their callers read; every command reads a run folder through that door.
"""

from __future__ import annotations

from pathlib import Path

from receval.results.door import open_run
from receval.results.record import UNUSED_COLUMNS, Run, flatten

__all__ = ["UNUSED_COLUMNS", "Run", "flatten", "load_run", "open_run", "read_run"]


def read_run(run_dir: str | Path, skip: frozenset[str] = frozenset()) -> Run:
    """:func:`receval.results.door.open_run` reading every column but ``skip``."""
    return open_run(run_dir, skip=skip)


def load_run(run_dir: str | Path, skip: frozenset[str] = UNUSED_COLUMNS) -> Run:
    """:func:`receval.results.door.open_run` without the rankings and labels (report, compare)."""
    return open_run(run_dir, skip=skip)
