"""Finding stored runs: a run folder, a sweep folder, or a folder of sweeps
(:func:`load_runs`, one of the door's two public names).

A run directory holds ``results.parquet``; a sweep directory holds numbered job
folders (``0``, ``1``, ... in job-number order); a folder of sweeps (``runs/`` or
``runs/2026-11-29``) holds sweeps or runs at any depth, found in name order.
Several paths are taken in the order given. A job folder without
``results.parquet`` (an incomplete job) is skipped with a warning on stderr.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from receval.core.errors import RunError, named
from receval.core.progress import warn
from receval.results.external import import_trec_run
from receval.results.door import header, job_dirs, open_run
from receval.results.manifest import IncompleteRun
from receval.results.stored import UNUSED_COLUMNS, Run
from receval.results.format import HYDRA_DIR, RESULTS, RUN_JSON


def _looks_like_job(path: Path) -> bool:
    return (path / HYDRA_DIR).is_dir() or (path / RUN_JSON).is_file()


def _nested_runs(path: Path) -> list[Path]:
    """Run and job folders anywhere below a folder of sweeps, in name order."""
    found = []
    for child in sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if (child / RESULTS).is_file():
            found.append(child)
        elif job_dirs(child) or _looks_like_job(child):
            found.extend(_sweep_jobs(child))
        else:
            found.extend(_nested_runs(child))
    return found


def _sweep_jobs(path: Path) -> list[Path]:
    if _looks_like_job(path) and not job_dirs(path):
        warn(f"{path}: no {RESULTS} (incomplete job?); skipped")
        return []
    jobs = []
    for job in job_dirs(path):
        if (job / RESULTS).is_file():
            jobs.append(job)
        else:
            warn(f"{job}: no {RESULTS} (incomplete job?); skipped")
    return jobs


def _find_runs(paths: list[str | Path]) -> list[Path]:
    """Run directories named by ``paths`` (runs, sweeps or folders of sweeps), in order.

    Incomplete jobs (no ``results.parquet``) are skipped with a warning; a path that
    is missing or holds no run at any depth is an error; so is finding no run at all.
    """
    if not paths:
        raise RunError("no runs given: name a run directory or a sweep directory")
    found: list[Path] = []
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise RunError(f"{path}: no such directory")
        if not path.is_dir():
            raise RunError(f"{path}: not a directory; give a run or sweep directory")
        if (path / RESULTS).is_file():
            here = [path]
        elif job_dirs(path) or _looks_like_job(path):
            here = _sweep_jobs(path)
        else:
            here = _nested_runs(path)
            if not here:
                raise RunError(
                    f"{path}: not a run directory (no {RESULTS}) nor a sweep directory "
                    "(no numbered job folders), and no run below it"
                )
        for run_dir in here:
            key = run_dir.resolve()
            if key not in seen:
                seen.add(key)
                found.append(run_dir)
    if not found:
        raise RunError(
            "no complete runs in " + ", ".join(str(p) for p in paths) + " (every job was skipped)"
        )
    return found


_SKIP = {".hydra", ".cache", ".git", "__pycache__"}


def _order(path: Path) -> tuple:
    """Path order with numbered job folders in number order (2 before 10)."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in path.parts)


def runs_under(root: str | Path, incomplete: bool = False) -> list[Path]:
    """Run directories (holding ``results.parquet``) anywhere below ``root``, in
    path order (date, time, job number), without warnings: ``receval list``.
    With ``incomplete``, numbered job folders that have a ``run.json`` or ``.hydra``
    but no results are listed too."""
    found = []
    for here, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIP]
        if RESULTS in files:
            found.append(Path(here))
            dirs[:] = []  # a run directory holds no further runs
        elif incomplete and Path(here).name.isdigit() and (RUN_JSON in files or HYDRA_DIR in os.listdir(here)):
            found.append(Path(here))
    return sorted(found, key=_order)


def load_runs(
    paths: list[str | Path], qrels: str | Path | None = None, names: Mapping[str, str] | None = None,
    skip: frozenset[str] = UNUSED_COLUMNS, *, headers: bool = False,
) -> list[Run]:
    """Stored runs from run or sweep directories; with ``qrels``, a path that is a
    file is an external TREC run, imported beside them (:mod:`receval.results.external`).
    Messages name ``qrels`` as ``names`` maps it (:func:`receval.core.errors.named`).
    ``skip``: columns not read (by default the rankings and labels; pooling and
    re-scoring read them). ``headers``: each run found as its small files describe it
    (:func:`receval.results.door.header`: no results read, nothing checked yet), for a
    reader that opens them one at a time or re-runs them."""
    if headers:
        return [header(run_dir) for run_dir in _find_runs(paths)]
    files = [p for p in paths if Path(p).is_file()]
    if files and qrels is None:
        raise RunError(
            f"{files[0]}: a file, not a run directory; to report an external TREC run "
            f"beside stored ones, give its judgements with {named(names, 'qrels_file', 'qrels=PATH')}"
        )
    folders = [p for p in paths if not Path(p).is_file()]
    named_dirs = {Path(p).resolve() for p in folders}
    stored = []
    for run_dir in _find_runs(folders) if folders else []:
        try:
            stored.append(open_run(run_dir, skip=skip))
        except IncompleteRun as error:  # a job of a sweep: skipped, as one without results is
            if run_dir.resolve() in named_dirs:
                raise
            warn(f"{error.problems[0]}; skipped")
    if folders and not stored:
        raise RunError("no complete runs in " + ", ".join(str(p) for p in folders) + " (every job was skipped)")
    return stored + [import_trec_run(f, qrels, stored, named(names, "qrels")) for f in files]
