"""Every stored run under a folder: ``python -m receval.list runs/ [--format json]``.

One line per run, in path order: when it was written, the parameters that differ
between the listed runs, the dataset fingerprint (first 12 hex digits), questions
(scored / all), MRR, and whether it is complete (``results.parquet`` written).
Only ``run.json`` and the saved config are read, never the results themselves.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path

from receval import runs as runs_mod
from receval import tables
from receval.errors import RecevalError, exit_on_error
from receval.selection import runs_under
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
        info = runs_mod.read_info(run_dir)
        config = runs_mod.load_config(run_dir, info)
        infos.append(info)
        flats.append({**runs_mod.schema_defaults(), **runs_mod.flatten(config)} if config else {})
    keys = runs_mod.differing_params(flats, [runs_mod.load_overrides(d) for d in dirs])
    names = runs_mod.short_names(keys)
    records = []
    for run_dir, info, flat in zip(dirs, infos, flats):
        complete = (run_dir / RESULTS).is_file()
        stamp = (run_dir / RESULTS) if complete else run_dir
        when = datetime.fromtimestamp(stamp.stat().st_mtime, tz=timezone.utc)
        n, unanswerable = info.get("n_questions"), info.get("n_unanswerable") or 0
        records.append({
            "run_dir": str(run_dir),
            "when": when.isoformat(timespec="seconds"),
            "params": {names[k]: _plain(flat.get(k)) for k in keys},
            "dataset_fingerprint": info.get("dataset_fingerprint"),
            "n_questions": n,
            "n_scored": (n - unanswerable) if isinstance(n, int) else None,
            "mrr": (info.get("means") or {}).get("rr"),
            "complete": complete,
        })
    return records


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


def table(records: list[dict]) -> tables.Table:
    params = list(dict.fromkeys(k for r in records for k in r["params"]))
    rows = [
        [r["when"].replace("T", " ")[:19], *(runs_mod.format_value(r["params"].get(p)) for p in params),
         (r["dataset_fingerprint"] or "-")[:12],
         f"{r['n_scored']}/{r['n_questions']}" if r["n_questions"] is not None else "-",
         tables.fmt(r["mrr"]), "yes" if r["complete"] else "NO", r["run_dir"]]
        for r in records
    ]
    columns = ["when (UTC)", *params, "dataset", "questions", "MRR", "complete", "run"]
    align = ["l"] * (1 + len(params)) + ["l", "r", "r", "l", "l"]
    return tables.Table(columns=columns, rows=rows, align=align)


def main(argv: list[str] | None = None) -> int:
    with exit_on_error():
        parser = runs_mod.ArgumentParser(
            prog="python -m receval.list", description="List every stored run under folders of runs."
        )
        parser.add_argument("paths", nargs="+", metavar="FOLDER", help="e.g. runs/")
        parser.add_argument("--format", choices=("table", "json"), default="table")
        args = parser.parse_args(argv)
        records = listing(args.paths)
        if args.format == "json":
            sys.stdout.write(json.dumps(records, indent=2, default=str) + "\n")
        else:
            done = sum(r["complete"] for r in records)
            tables.print_rich([f"{len(records)} runs, {done} complete"], [table(records)])
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
