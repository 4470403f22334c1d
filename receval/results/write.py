"""Writing a run's files: ``results.parquet`` (schema in :mod:`receval.results.format`)
and ``run.json``, each to a temporary name renamed over the target, so a reader never
sees a half-written file."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from receval import __version__
from receval.core.io import atomic_write
from receval.results.format import OVERLAP, RESULTS, RUN_JSON, SCHEMA_VERSION, results_schema


def write_results(
    run_dir: Path, columns: dict, measure_names: list[str], metadata: dict, stages: list[str] = (),
    extra: list[str] = (),
) -> Path:
    """Write the per-question table atomically; returns its path."""
    metadata = {"schema_version": SCHEMA_VERSION, "receval_version": __version__, **metadata}
    n_rows = len(columns["question_id"])
    columns = {**{name: [None] * n_rows for name in OVERLAP}, **columns}  # optional: null if not given
    table = pa.table(columns, schema=results_schema(measure_names, metadata, stages, extra))
    target = Path(run_dir) / RESULTS
    atomic_write(target, lambda tmp: pq.write_table(table, tmp))
    return target


def write_run_json(run_dir: Path, info: dict) -> Path:
    info = {"schema_version": SCHEMA_VERSION, "receval_version": __version__, **info}
    target = Path(run_dir) / RUN_JSON
    text = json.dumps(info, indent=2, sort_keys=True, default=str) + "\n"
    atomic_write(target, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return target
