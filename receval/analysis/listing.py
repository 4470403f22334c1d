"""Every stored run under folders of runs, as records (``receval list``).

One record per run directory, complete or not, in path order: when it was written,
its label and the parameters that differ between the listed runs
(:mod:`receval.results.labels`), the dataset fingerprint,
questions (scored / all), MRR from ``run.json``, and whether ``results.parquet``
exists. Only ``run.json`` and the saved config are read, never the results.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from receval.core import numeric
from receval.core.secrets import cut
from receval.core.errors import RecevalError
from receval.results.configs import load_config, load_overrides, read_info
from receval.results.labels import naming
from receval.results.discovery import runs_under
from receval.results.format import RESULTS, RUN_JSON


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
    infos, configs = [], []
    for run_dir in dirs:
        info = read_info(run_dir)
        infos.append(info)
        configs.append(load_config(run_dir, info))
    named = naming(configs, [load_overrides(d) for d in dirs], [d.name for d in dirs])
    records = []
    for run_dir, info, label, params in zip(dirs, infos, named.labels, named.params):
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
            "label": label,
            "params": {k: _plain(v) for k, v in params.items()},
            "dataset_fingerprint": cut(fingerprint, 80) if isinstance(fingerprint, str) else None,
            "n_questions": n,
            "n_scored": (n - unanswerable) if n is not None and unanswerable is not None else None,
            "mrr": numeric.real(means.get("rr")),
            "complete": complete,
        })
    return records


def _plain(value):
    return list(value) if isinstance(value, tuple) else value
