"""``python -m receval.list`` as a table: one row per stored run."""

from __future__ import annotations

from receval import tables
from receval.results.configs import format_value


def table(records: list[dict]) -> tables.Table:
    params = list(dict.fromkeys(k for r in records for k in r["params"]))
    rows = [
        [r["when"].replace("T", " ")[:19], *(format_value(r["params"].get(p)) for p in params),
         (r["dataset_fingerprint"] or "-")[:12],
         f"{r['n_scored']}/{r['n_questions']}" if r["n_questions"] is not None else "-",
         tables.fmt(r["mrr"]), "yes" if r["complete"] else "NO", r["run_dir"]]
        for r in records
    ]
    columns = ["when (UTC)", *params, "dataset", "questions", "MRR", "complete", "run"]
    align = ["l"] * (1 + len(params)) + ["l", "r", "r", "l", "l"]
    return tables.Table(columns=columns, rows=rows, align=align)
