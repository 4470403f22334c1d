"""Every stored run under folders of runs, as records (``python -m receval.list``).

One record per run directory, complete or not, in path order: when it was written,
the parameters that differ between the listed runs, the dataset fingerprint,
questions (scored / all), MRR from ``run.json``, and whether ``results.parquet``
exists. Only ``run.json`` and the saved config are read, never the results.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from receval import numeric
from receval.api import cut
from receval.errors import RecevalError
from receval.results.configs import (
    differing_params, flatten, load_config, load_overrides, read_info, schema_defaults, short_names,
)
from receval.results.discovery import runs_under
from receval.store import RESULTS, RUN_JSON


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
    infos, flats = [], []
    for run_dir in dirs:
        info = read_info(run_dir)
        config = load_config(run_dir, info)
        infos.append(info)
        flats.append({**schema_defaults(), **flatten(config)} if config else {})
    keys = differing_params(flats, [load_overrides(d) for d in dirs])
    names = short_names(keys)
    records = []
    for run_dir, info, flat in zip(dirs, infos, flats):
        complete = (run_dir / RESULTS).is_file()
        stamp = (run_dir / RESULTS) if complete else run_dir
        when = datetime.fromtimestamp(stamp.stat().st_mtime, tz=timezone.utc)
        # run.json is data from outside too: a value of the wrong type is shown as unknown
        n, unanswerable = numeric.count(info.get("n_questions")), numeric.count(info.get("n_unanswerable") or 0)
        means = info.get("means") if isinstance(info.get("means"), dict) else {}
        fingerprint = info.get("dataset_fingerprint")
        records.append({
            "run_dir": str(run_dir),
            "when": when.isoformat(timespec="seconds"),
            "params": {names[k]: _plain(flat.get(k)) for k in keys},
            "dataset_fingerprint": cut(fingerprint, 80) if isinstance(fingerprint, str) else None,
            "n_questions": n,
            "n_scored": (n - unanswerable) if n is not None and unanswerable is not None else None,
            "mrr": numeric.real(means.get("rr")),
            "complete": complete,
        })
    return records


def _plain(value):
    return list(value) if isinstance(value, tuple) else value
