"""Resuming sweeps: a job whose results already hold the same config is not run again.

A job directory is *finished* when ``results.parquet`` and ``run.json`` (written last)
are both complete and record the identity hash and dataset fingerprint of the job
about to run. Re-running a
sweep command with the same ``hydra.sweep.dir`` therefore runs only jobs that are
missing, incomplete (killed before ``run.json``), or whose config changed; finished
files are left untouched. :class:`SweepSummary` (a Hydra callback in
``conf/config.yaml``) says at the end how many jobs ran and how many were skipped.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from hydra.experimental.callback import Callback

from receval.errors import RunError
from receval.results.stored import read_run
from receval.store import RESULTS, RUN_JSON


def finished(run_dir: Path, config_hash: str, dataset_fingerprint: str | None = None) -> bool:
    """True when ``run_dir`` holds complete results of the config with this identity
    hash (:mod:`receval.identity`) and, when given, of the dataset with this fingerprint."""
    run_dir = Path(run_dir)
    try:
        info = json.loads((run_dir / RUN_JSON).read_text(encoding="utf-8"))
        stored = read_run(run_dir)
    except (OSError, ValueError, RunError):
        return False
    if dataset_fingerprint is not None and not (
        info.get("dataset_fingerprint") == dataset_fingerprint == stored.metadata.get("dataset_fingerprint")
    ):
        return False
    return info.get("config_hash") == config_hash == stored.metadata.get("config_hash")


class SweepSummary(Callback):
    """Prints ``N jobs ran, M skipped`` after a sweep, for any launcher.

    Jobs launched by this sweep are those whose ``.hydra/config.yaml`` Hydra wrote
    after the sweep began; a skipped one kept a ``run.json`` older than that file.
    """

    SLACK_NS = 50_000_000  # file times can trail the clock by a tick

    def on_multirun_start(self, config, **kwargs) -> None:
        self.began_ns = time.time_ns()

    def on_multirun_end(self, config, **kwargs) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        began = getattr(self, "began_ns", 0) - self.SLACK_NS
        ran = skipped = failed = 0
        for job in sweep_dir.iterdir() if sweep_dir.is_dir() else ():
            saved = job / ".hydra" / "config.yaml"
            if not saved.is_file() or saved.stat().st_mtime_ns < began:
                continue
            run_json = job / RUN_JSON
            if not run_json.is_file() or not (job / RESULTS).is_file():
                failed += 1
            elif run_json.stat().st_mtime_ns < saved.stat().st_mtime_ns:
                skipped += 1
            else:
                ran += 1
        line = f"receval: {ran} jobs ran, {skipped} skipped (finished before, same config)"
        if failed:
            line += f", {failed} without results"
        print(f"{line} -> {sweep_dir}", flush=True)
