"""One stored run read back: the :class:`Run` type and the readers of its files.

A run directory holds ``results.parquet`` (one row per question, schema in
:mod:`receval.results.format`), ``run.json`` (facts written last) and ``.hydra/`` (the saved
config and overrides). :func:`read_run` reads and checks the results file alone
(what resume, export and reproduce need); :func:`load_run` adds run.json, the
saved config and the overrides (what report and compare need).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from receval.core import numeric
from receval.core.secrets import cut
from receval.core.errors import RunError
from receval.results import integrity
from receval.results.configs import flatten, load_config, load_overrides, read_info, schema_defaults
from receval.results.format import LATENCY, META_KEY, RESULTS, RUN_JSON, measure_columns

#: Columns the report and compare never read: the bulk of a results file.
UNUSED_COLUMNS = frozenset({"relevant", "grades", "retrieved", "scores", "calls", "documents"})


@dataclass
class Run:
    """A stored run (or an imported TREC run): per-question table, metadata, run.json
    facts and saved config (empty when only the results file was read)."""

    run_dir: Path
    table: pa.Table
    metadata: dict
    info: dict = field(default_factory=dict)
    config: dict = field(default_factory=dict)
    overrides: list[str] = field(default_factory=list)

    @cached_property
    def flat(self) -> dict[str, Any]:
        """Dotted config keys; a key the saved config lacks (a run made before that
        setting existed) takes the schema's default, so it is no difference."""
        if not self.config:
            return {}
        saved = flatten(self.config)
        nodes = {key[:i] for key in saved for i, ch in enumerate(key) if ch == "."}
        # a schema default that is a whole node (``retriever: ???``) the saved config fills is no key
        defaults = {k: v for k, v in schema_defaults().items() if k not in nodes}
        return {**defaults, **saved}

    @cached_property
    def ids(self) -> np.ndarray:
        return np.asarray(self.table.column("question_id").to_pylist(), dtype=object)

    @cached_property
    def ids_digest(self) -> bytes:
        return hashlib.blake2b("\x1f".join(self.ids).encode(), digest_size=16).digest()

    @property
    def n_chunks(self) -> int | None:
        value = self.info.get("n_chunks", self.metadata.get("n_chunks"))
        return int(value) if value is not None else None

    @property
    def measure_names(self) -> list[str]:
        """Stored per-question measures (timings such as ``latency_ms.bm25`` are not)."""
        return measure_columns(self.table.column_names)

    @property
    def stages(self) -> list[str]:
        prefix = f"{LATENCY}."
        return [name[len(prefix):] for name in self.table.column_names if name.startswith(prefix)]

    def values(self, column: str) -> np.ndarray:
        """A numeric column as float64, null -> NaN."""
        col = self.table.column(column)
        if col.null_count:
            col = pc.fill_null(pc.cast(col, pa.float64()), float("nan"))
        return np.asarray(col.to_numpy(), dtype=np.float64)

    def strings(self, column: str) -> list[str | None]:
        return self.table.column(column).to_pylist()

    def filtered(self, table: pa.Table) -> "Run":
        """The same run over other rows (or with a derived column added)."""
        return replace(self, table=table)


def read_run(run_dir: str | Path, skip: frozenset[str] = frozenset()) -> Run:
    """The results file of a run, checked (:mod:`receval.results.integrity`: metadata
    and column types before any row is read, then values and string sizes): a
    missing, partial, newer-schema, edited or foreign file is a RunError naming the
    file and the key or column. ``skip`` columns are not read."""
    run_dir = Path(run_dir)
    path = run_dir / RESULTS
    if not path.is_file():
        raise RunError(
            f"{run_dir}: no {RESULTS} here; give a run directory written by "
            "'receval' (a sweep's runs are its numbered subfolders)"
        )
    try:
        schema = pq.read_schema(path)
        names = list(schema.names)  # a damaged name fails to decode here
    except (pa.ArrowException, OSError, ValueError) as error:
        raise RunError(f"{path}: cannot be read as results ({cut(str(error), 160)}); re-run this job") from None
    metadata = integrity.metadata_of(path, schema, META_KEY)
    integrity.check_schema(path, schema)
    try:
        table = pq.read_table(path, columns=[n for n in names if n not in skip] if skip else None)
    except MemoryError:  # pyarrow's ArrowMemoryError included
        raise RunError(f"{path}: too large to read into memory; {integrity.EDITED}") from None
    except (pa.ArrowException, OSError, ValueError) as error:
        raise RunError(f"{path}: cannot be read as results ({cut(str(error), 160)}); re-run this job") from None
    integrity.check_values(path, table)
    return Run(run_dir, table, metadata)


def load_run(run_dir: str | Path, skip: frozenset[str] = UNUSED_COLUMNS) -> Run:
    """One run directory with its facts and saved config (a RunError if it is not one)."""
    run = read_run(run_dir, skip)
    try:
        ids = run.table.column("question_id").to_pylist()
    except (UnicodeDecodeError, pa.ArrowException) as error:  # a damaged file
        raise RunError(f"{run.run_dir / RESULTS}: cannot be read as results ({cut(str(error), 160)}); re-run this job") from None
    if len(set(ids)) != len(ids):  # report and compare both pair rows by id
        raise RunError(f"{run.run_dir}: question ids repeat; cannot pair questions by id")
    run.info = read_info(run.run_dir)
    chunks = run.info.get("n_chunks")
    if chunks is not None and (numeric.count(chunks) is None or isinstance(chunks, float)):
        raise RunError(f"{run.run_dir / RUN_JSON}: n_chunks is {cut(repr(chunks))}, not a count; {integrity.EDITED}")
    run.config = load_config(run.run_dir, run.info)
    run.overrides = load_overrides(run.run_dir)
    return run
