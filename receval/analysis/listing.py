"""Every stored run under folders of runs, as records (``receval list``).

One record per run directory, complete or not, in path order: when it was written,
its label and the parameters that differ between the listed runs
(:mod:`receval.results.labels`), the dataset fingerprint,
questions (scored / all) and MRR from the rows the door checked (the numbers ``report``
and ``sql`` read), and whether the run is complete: its files agree with the manifest
written last and with each other (:func:`receval.results.door.open_run`); an incomplete
one (stopped part-way, written again, two runs in one folder, or from before manifests)
says why and shows no number.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pyarrow.compute as pc

from receval.core import numeric
from receval.core.secrets import cut
from receval.core.errors import RecevalError
from receval.results.door import open_run, peek
from receval.results.labels import naming
from receval.results.discovery import runs_under
from receval.results.format import RESULTS, RUN_JSON
from receval.results.record import derived_facts


def listing(paths: list[str | Path]) -> list[dict]:
    """One record per run directory (complete or not) under ``paths``."""
    dirs: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if not path.is_dir():
            raise RecevalError(f"{path}: no such directory; give a folder of runs, e.g. runs/")
        dirs += runs_under(path, incomplete=True)
    if not dirs:
        raise RecevalError(
            "no runs under " + ", ".join(str(p) for p in paths)
            + f" (no folder holds {RESULTS} or {RUN_JSON})"
        )
    infos, configs, overrides, problems, rows = [], [], [], [], []
    for run_dir in dirs:
        info, config, saved_overrides, problem, counted = _read(run_dir)
        infos.append(info)
        configs.append(config)
        overrides.append(saved_overrides)
        problems.append(problem)
        rows.append(counted)
    named = naming(configs, overrides, [d.name for d in dirs],
                   [derived_facts(info).get("label") if isinstance(info, dict) else None for info in infos])
    records = []
    for run_dir, info, label, params, problem, counted in zip(dirs, infos, named.labels, named.params, problems, rows):
        complete = not problem
        stamp = (run_dir / RESULTS) if complete else run_dir
        when = datetime.fromtimestamp(stamp.stat().st_mtime, tz=timezone.utc)
        n, scored, mrr = counted
        fingerprint = info.get("dataset_fingerprint")
        records.append({
            "run_dir": str(run_dir),
            "when": when.isoformat(timespec="seconds"),
            "label": label,
            "params": {k: _plain(v) for k, v in params.items()},
            "dataset_fingerprint": cut(fingerprint, 80) if isinstance(fingerprint, str) else None,
            "n_questions": n,
            "n_scored": scored,
            "mrr": mrr,
            "complete": complete,
            "problem": problem,
        })
    return records


def _read(run_dir: Path) -> tuple[dict, dict, list[str], str | None, tuple]:
    """(run.json, saved config, overrides, why it is incomplete or unreadable, else None,
    (questions, scored questions, MRR) from the rows)."""
    try:
        run = open_run(run_dir, only=frozenset({"rr"}))  # the ids and rr: the numbers sql and report read
    except RecevalError as error:
        problem = cut(error.problems[0], 300)
    else:
        rr = run.table.column("rr") if "rr" in run.table.column_names else None
        scored = None if rr is None else len(rr) - rr.null_count
        mrr = None if not scored else numeric.real(pc.mean(rr).as_py())
        return run.info, run.config, run.overrides, None, (run.table.num_rows, scored, mrr)
    try:  # its label from the config saved last; its numbers are no run's (run.json may be an older run's)
        _, config, overrides = peek(run_dir)
    except RecevalError:
        config, overrides = {}, []
    return {}, config, overrides, problem, (None, None, None)


def _plain(value):
    return list(value) if isinstance(value, tuple) else value
