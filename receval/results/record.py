"""The frozen :class:`Run` type: one stored run as :func:`receval.results.door.open_run` returns it.

A run directory holds ``results.parquet`` (one row per question, schema in
:mod:`receval.results.format`), ``run.json`` (facts, the saved config, the run's label
parts and measures), ``.hydra/`` (the config and overrides Hydra saved), ``chunks.json``
(the retrieved chunks, for ``report --show``) and ``manifest.json`` (written last).
Every command reads it through :func:`receval.results.door.open_run` (or
:func:`receval.results.discovery.load_runs`, which opens each run it finds there).

The config is stored once, as run.json's ``config`` (interpolations as written), with
``filled``: what receval's schemas fill in that it leaves out (dotted keys). The flat
``params`` and the label's filled component ``nodes`` that runs wrote beside it before
are derived from the two when read (:func:`derived_facts`); a run that stored them reads
them as stored.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from receval.results.format import LATENCY, RANKS, measure_columns

#: The per-rank columns (:data:`receval.results.format.RANKS`, the ``excluded`` count aside):
#: read only when a measure is derived from them (a token budget's).
RANK_COLUMNS = frozenset(RANKS) - {"excluded"}
#: Columns the report and compare never read: the bulk of a results file.
UNUSED_COLUMNS = frozenset({"relevant", "grades", "retrieved", "scores", "calls", "documents"}) | RANK_COLUMNS


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}, "c": [1, 2]}`` -> ``{"a.b": 1, "c": (1, 2)}`` (lists as tuples)."""
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(flatten(value, f"{prefix}{key}."))
        return out
    if isinstance(data, list):
        return {prefix[:-1]: tuple(data)}
    return {prefix[:-1]: data}


def leaves(data: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1, "c": {}}, "d": [1]}`` -> ``{"a.b": 1, "a.c": {}, "d": [1]}``: a
    mapping's values by dotted key, lists (and empty mappings) kept whole."""
    if isinstance(data, dict) and data:
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(leaves(value, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: data}


def node_keys(flat: dict[str, Any]) -> set[str]:
    """The dotted keys of a flat config's nodes (``a`` and ``a.b`` of ``a.b.c``)."""
    return {key[:i] for key in flat for i, ch in enumerate(key) if ch == "."}


#: run.json's key of what receval's schemas fill in that its ``config`` leaves out (dotted).
FILLED = "filled"
#: The component groups whose nodes run.json's ``label`` holds filled (receval.results.labels.GROUPS).
COMPONENTS = ("chunking", "retriever", "rerank", "transform")


def derived_facts(info: dict) -> dict:
    """run.json's facts with ``params`` (the config flat, the schema's defaults filled,
    lists as lists, keys sorted) and the label's ``nodes`` (each component node the
    config has, filled by its kind's schema: a fused retriever's ``{kind: dense}``
    member with dense's defaults) derived from ``config`` and ``filled``, as run.json
    held them before the config was stored once; each as read where the run stored it
    (runs written before: no ``filled``)."""
    config, filled = info.get("config"), info.get(FILLED)
    if not isinstance(config, dict) or not isinstance(filled, dict):
        return info
    groups = [g for g in COMPONENTS if isinstance(config.get(g), dict | str)]
    derived = dict(info)
    if "params" not in info:
        saved = {k: list(v) if isinstance(v, tuple) else v for k, v in flatten(config).items()}
        defaults = {k: v for k, v in filled.items() if k.split(".", 1)[0] not in groups}
        derived["params"] = dict(sorted({**defaults, **saved}.items()))
    label = info.get("label")
    if isinstance(label, dict) and "nodes" not in label:
        nodes = {g: _filled_node(config[g], {k[len(g) + 1:]: v for k, v in filled.items() if k.startswith(g + ".")})
                 for g in groups}
        derived["label"] = _sorted({**label, "nodes": nodes})
    return {key: derived[key] for key in sorted(derived)}


def _filled_node(node: Any, fills: dict[str, Any]) -> Any:
    """A component node with each dotted fill set in it, keys sorted at every depth (as
    run.json stored it)."""
    out = copy.deepcopy(node) if isinstance(node, dict) else {}
    for key, value in fills.items():
        *path, last = key.split(".")
        at = out
        for part in path:
            if not isinstance(at.get(part), dict):
                at[part] = {}
            at = at[part]
        at[last] = copy.deepcopy(value)
    return _sorted(out) if fills or isinstance(node, dict) else node


def _sorted(data: Any) -> Any:
    """Mappings' keys sorted at every depth, lists in order (JSON's ``sort_keys``)."""
    if isinstance(data, dict):
        return {key: _sorted(data[key]) for key in sorted(data, key=str)}
    if isinstance(data, list):
        return [_sorted(item) for item in data]
    return data


@dataclass(frozen=True)
class Run:
    """A stored run (or an imported TREC run): per-question table, metadata, run.json
    facts, saved config and overrides, and (``report --show``) the retrieved chunks:
    chunk id -> (section id, start, end, text); the sealed files' checked digests. Immutable: a filtered view is a new Run."""

    run_dir: Path
    table: pa.Table
    metadata: dict
    info: dict = field(default_factory=dict)
    config: dict = field(default_factory=dict)
    overrides: list[str] = field(default_factory=list)
    chunks: dict[str, tuple] | None = None
    #: sha256 of each sealed file as the door checked it against the manifest (file name
    #: -> hex digest; empty for a run not read through the door): ``results.parquet``'s is
    #: the run's identity (``export``), never hashed a second time.
    digests: dict[str, str] = field(default_factory=dict)
    shown: dict | None = None  # what else --show reads from chunks.json (receval.results.door._chunks)
    #: the id every file of the run carries (receval.results.bond); None for a run written before run ids
    run_id: str | None = None

    @cached_property
    def facts(self) -> dict:
        """run.json's facts as readers take them: :attr:`info` (run.json as stored) with
        ``params`` and the label's filled ``nodes`` derived where the run stored its config
        once (:func:`derived_facts`)."""
        return derived_facts(self.info) if isinstance(self.info, dict) else {}

    @cached_property
    def flat(self) -> dict[str, Any]:
        """Dotted config keys: the saved config's, over run.json's ``params`` (the config
        flat as the run wrote it, the schema's defaults filled, so a default left out is
        no difference; derived for a run that stored its config once). Lists are tuples."""
        params = self.facts.get("params")
        saved = flatten(self.config) if self.config else {}
        if not isinstance(params, dict):
            return saved
        nodes = node_keys(saved)
        # a default that is a whole node (``rerank: null``) the saved config fills is no key
        written = {k: tuple(v) if isinstance(v, list) else v for k, v in params.items() if k not in nodes}
        return {**written, **saved}

    @cached_property
    def ids(self) -> np.ndarray:
        return np.asarray(self.table.column("question_id").to_pylist(), dtype=object)

    @cached_property
    def ids_digest(self) -> bytes:
        """Names the question ids in order (equal ids, equal digest): hashed from the
        column's bytes (its strings and where each ends), no Python string per question."""
        column = self.table.column("question_id")
        ids = (column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)).cast(pa.large_string())
        if ids.null_count:  # never from the door; an id-less row still names a position
            ids = pc.fill_null(ids, "\x00")
        _, ends, data = ids.buffers()
        ends = (np.frombuffer(ends, np.int64)[ids.offset: ids.offset + len(ids) + 1] if len(ids)
                else np.zeros(1, np.int64))
        digest = hashlib.blake2b(digest_size=16)
        digest.update((ends - ends[0]).tobytes())
        if data is not None:
            digest.update(memoryview(data)[int(ends[0]):int(ends[-1])])
        return digest.digest()

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
