"""One stored run read back: :class:`Run` (:mod:`receval.results.record`), as readers
import it. Every command reads a run folder through :func:`receval.results.door.open_run`
(one folder) or :func:`receval.results.discovery.load_runs` (runs, sweeps, folders).
"""

from __future__ import annotations

from receval.results.record import UNUSED_COLUMNS, Run, flatten

__all__ = ["UNUSED_COLUMNS", "Run", "flatten"]
