"""Resuming sweeps: a job whose results already hold the same config is not run again.

A job directory is *finished* when ``results.parquet`` and ``run.json`` agree with the
manifest written last (:mod:`receval.results.manifest`) and record the identity hash and dataset fingerprint of the job
about to run. Re-running a
sweep command with the same ``hydra.sweep.dir`` therefore runs only jobs that are
missing, incomplete (killed before ``run.json``), or whose config changed; finished
files are left untouched. :class:`SweepSummary` (a Hydra callback in
``conf/config.yaml``) says at the end how many jobs ran and how many were skipped,
and :func:`stopped` says which jobs finished when a sweep ends early.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

from hydra.experimental.callback import Callback

from receval.core.errors import RunError
from receval.results.door import open_run
from receval.results.record import Run
from receval.results.format import MANIFEST, RESULTS, RUN_JSON


def finished(run_dir: Path, config_hash: str, dataset_fingerprint: str | None = None) -> bool:
    """True when ``run_dir`` holds complete results of the config with this identity
    hash (:mod:`receval.results.identity`) and, when given, of the dataset with this fingerprint."""
    return finished_run(run_dir, config_hash, dataset_fingerprint) is not None


def finished_run(run_dir: Path, config_hash: str, dataset_fingerprint: str | None = None) -> Run | None:
    """The run :func:`finished` finds (its id is sealed again with the config Hydra has
    just saved), None when there is none."""
    run_dir = Path(run_dir)
    try:  # the results and run.json as the manifest sealed them (Hydra has just saved this job's config)
        stored = open_run(run_dir, sealed=(RESULTS, RUN_JSON), only=frozenset())
    except (OSError, RunError):
        return None
    info = stored.info
    if dataset_fingerprint is not None and not (
        info.get("dataset_fingerprint") == dataset_fingerprint == stored.metadata.get("dataset_fingerprint")
    ):
        return None
    return stored if info.get("config_hash") == config_hash == stored.metadata.get("config_hash") else None


class SweepSummary(Callback):
    """Prints ``N jobs ran, M skipped`` after a sweep, for any launcher; :func:`stopped`
    prints the same count when the sweep ends early.

    Jobs launched by this sweep are those whose ``.hydra/config.yaml`` Hydra wrote
    after the sweep began; a skipped one kept a ``run.json`` older than that file.
    """

    SLACK_NS = 50_000_000  # file times can trail the clock by a tick
    running: ClassVar[tuple[Path, int] | None] = None  # (sweep dir, start) of the sweep under way

    def on_multirun_start(self, config, **kwargs) -> None:
        self.began_ns = time.time_ns()
        SweepSummary.running = (Path(config.hydra.sweep.dir), self.began_ns)

    def on_multirun_end(self, config, **kwargs) -> None:
        SweepSummary.running = None
        sweep_dir = Path(config.hydra.sweep.dir)
        jobs = tally(sweep_dir, getattr(self, "began_ns", 0) - self.SLACK_NS)
        print(f"receval: {summary(jobs)} -> {sweep_dir}", flush=True)


def tally(sweep_dir: Path, began_ns: int) -> dict[str, list[str]]:
    """The jobs of the sweep begun at ``began_ns`` by outcome: ``ran``, ``skipped``
    (finished before, same config) and ``failed`` (no results), job folders in order."""
    jobs: dict[str, list[str]] = {"ran": [], "skipped": [], "failed": []}
    folders = sorted(sweep_dir.iterdir(), key=_job_order) if sweep_dir.is_dir() else []
    for job in folders:
        saved = job / ".hydra" / "config.yaml"
        if not saved.is_file() or saved.stat().st_mtime_ns < began_ns:
            continue
        run_json = job / RUN_JSON
        if not run_json.is_file() or not (job / RESULTS).is_file() or not (job / MANIFEST).is_file():
            jobs["failed"].append(job.name)
        elif run_json.stat().st_mtime_ns < saved.stat().st_mtime_ns:
            jobs["skipped"].append(job.name)
        else:
            jobs["ran"].append(job.name)
    return jobs


def summary(jobs: dict[str, list[str]], names: bool = False) -> str:
    """``N jobs ran, M skipped (finished before, same config)[, K without results]``;
    with ``names``, each count followed by its jobs' folders."""

    def which(kind: str) -> str:
        return f" ({', '.join(jobs[kind])})" if names and jobs[kind] else ""

    line = (
        f"{len(jobs['ran'])} jobs ran{which('ran')}, {len(jobs['skipped'])} skipped{which('skipped')} "
        "(finished before, same config)"
    )
    if jobs["failed"]:
        line += f", {len(jobs['failed'])} without results{which('failed')}"
    return line


def stopped(why: str) -> None:
    """When a sweep ends early (``why``: a user error in a job, KeyboardInterrupt), say
    which of its jobs finished, naming their folders; nothing outside a sweep."""
    if SweepSummary.running is None:
        return
    sweep_dir, began = SweepSummary.running
    SweepSummary.running = None
    jobs = tally(sweep_dir, began - SweepSummary.SLACK_NS)
    print(f"receval: sweep stopped by {why}: {summary(jobs, names=True)} -> {sweep_dir}", flush=True)


def _job_order(path: Path) -> tuple[int, str]:
    return (int(path.name), "") if path.name.isdigit() else (1 << 62, path.name)
