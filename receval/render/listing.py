"""``receval list`` as a table: one row per stored run."""

from __future__ import annotations

from receval.render import tables


def table(records: list[dict]) -> tables.Table:
    """One row per run: when, its label, dataset, questions, MRR, complete, folder."""
    rows = [
        [r["when"].replace("T", " ")[:19], r["label"],
         (r["dataset_fingerprint"] or "-")[:12],
         f"{r['n_scored']}/{r['n_questions']}" if r["n_questions"] is not None else "-",
         tables.fmt(r["mrr"]), "yes" if r["complete"] else "NO", r["run_dir"]]
        for r in records
    ]
    columns = ["when (UTC)", "label", "dataset", "questions", "MRR", "complete", "run"]
    align = ["l", "l", "l", "r", "r", "l", "l"]
    return tables.Table(columns=columns, rows=rows, align=align)
