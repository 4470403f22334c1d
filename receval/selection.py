"""Choosing runs: every run under a folder of sweeps, and ``--runs key=value,...``.

``--runs`` selects *runs* by their saved parameters (across sweeps); ``--where``
selects *questions* inside each run. Nothing here reads results beyond the paths.
"""

from __future__ import annotations

import os
from pathlib import Path

from receval.errors import RecevalError
from receval.store import RESULTS, RUN_JSON

_SKIP = {".hydra", ".cache", ".git", "__pycache__"}


def _order(path: Path) -> tuple:
    """Path order with numbered job folders in number order (2 before 10)."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in path.parts)


def runs_under(root: str | Path, incomplete: bool = False) -> list[Path]:
    """Run directories (holding ``results.parquet``) anywhere below ``root``, in
    path order (date, time, job number). With ``incomplete``, job folders that
    have a ``run.json`` or ``.hydra`` but no results are listed too."""
    found = []
    for here, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIP]
        if RESULTS in files:
            found.append(Path(here))
            dirs[:] = []  # a run directory holds no further runs
        elif incomplete and (RUN_JSON in files or ".hydra" in os.listdir(here)) and Path(here).name.isdigit():
            found.append(Path(here))
    return sorted(found, key=_order)


def pick(runs: list, selector: str) -> list:
    """The runs whose saved config matches every ``key=value`` of ``selector``
    (``retriever=bm25,max_words=120``); none matching is an error listing them."""
    from receval import runs as runs_mod

    indices = runs_mod.select(runs, selector)
    if not indices:
        differ = runs_mod.differing_params([r.flat for r in runs], [r.overrides for r in runs])
        shown = "; ".join(runs_mod.describe(r, differ) for r in runs[:12])
        more = f" ... (+{len(runs) - 12})" if len(runs) > 12 else ""
        raise RecevalError(
            f"--runs {selector}: matches none of the {len(runs)} runs; they are: {shown}{more}"
        )
    return [runs[i] for i in indices]
