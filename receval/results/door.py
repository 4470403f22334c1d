"""The one door in: :func:`open_run` is how every command reads a run folder.

A stored run is data from anywhere, so before anything is materialised the door
1. checks the folder is complete: its files agree with the manifest written last
   (:mod:`receval.results.manifest`), else the run is *incomplete*;
2. refuses a file that is a symlink leaving the folder (or a symlink loop), or not a
   regular file;
3. bounds sizes: file bytes (:data:`MAX_YAML_BYTES`, :data:`MAX_JSON_BYTES`,
   :data:`MAX_RESULTS_BYTES`, :data:`MAX_CHUNKS_BYTES`), YAML nodes after alias
   expansion (:data:`MAX_YAML_NODES`: a 1 KB alias bomb stops at once), and from the
   Parquet footer, before any row is read, rows (:data:`MAX_ROWS`), columns
   (:data:`MAX_COLUMNS`), values (:data:`MAX_VALUES`) and decoded bytes
   (:data:`MAX_DECODED_BYTES`) of the columns read;
4. checks types and ranges (:mod:`receval.results.integrity`), unique question ids
   and run.json's counts;
5. evaluates no interpolation: ``${oc.env:...}`` in a saved config stays the text it is
   (for display, the value run.json saved at the same place when there is one).

It returns a frozen :class:`receval.results.record.Run`. Reading needs no flag: it
sends nothing and imports nothing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

from receval.core import numeric, trust
from receval.core.errors import RunError
from receval.core.secrets import cut
from receval.results import integrity, manifest
from receval.results.format import (
    CHUNKS, CONFIG_PATH, META_KEY, OVERRIDES_PATH, RESULTS, RUN_JSON,
)
from receval.results.record import UNUSED_COLUMNS, Run

MAX_YAML_BYTES = 1 << 20  # a saved config or overrides file
MAX_YAML_NODES = 100_000  # YAML nodes once aliases are expanded
MAX_JSON_BYTES = 16 << 20  # run.json
MAX_CHUNKS_BYTES = 64 << 20  # chunks.json (the retrieved chunks, for --show)
MAX_RESULTS_BYTES = 2 << 30  # results.parquet on disk
MAX_ROWS = 2_000_000  # questions in one run
MAX_COLUMNS = 10_000  # leaf columns in the footer
MAX_VALUES = 500_000_000  # values (list items included) of the columns read, per the footer
MAX_DECODED_BYTES = 4 << 30  # decoded bytes of the columns read, per the footer


def _limit(name: str) -> int:
    """Bytes a sealed file may hold (chunks.json: only --show reads it, bounded again then)."""
    return {RESULTS: MAX_RESULTS_BYTES, RUN_JSON: MAX_JSON_BYTES, CONFIG_PATH: MAX_YAML_BYTES,
            OVERRIDES_PATH: MAX_YAML_BYTES}.get(name, MAX_RESULTS_BYTES)


__all__ = ["Run", "open_run", "read_yaml", "MAX_YAML_BYTES", "MAX_YAML_NODES", "MAX_JSON_BYTES",
           "MAX_RESULTS_BYTES", "MAX_ROWS", "MAX_COLUMNS", "MAX_VALUES", "MAX_DECODED_BYTES"]


# ------------------------------------------------------------------ files


def contained(run_dir: Path, name: str, root: Path | None = None) -> Path | None:
    """``run_dir/name`` when it exists, checked: a regular file whose real path is inside
    the run folder (a symlink leaving it, or a loop, is a RunError); None when absent."""
    path = Path(run_dir) / name
    if not path.is_symlink() and not path.exists():
        return None
    root = root or Path(run_dir).resolve()
    try:
        real = path.resolve(strict=True)
    except (RuntimeError, OSError):  # a loop, or a link to nothing
        raise RunError(f"{path}: a symlink loop or a link to nothing; a run's files are its own: re-run this job") from None
    if not real.is_relative_to(root):
        raise RunError(
            f"{path}: a symlink to {cut(str(real), 120)}, outside the run folder; a stored run's files must be "
            "its own: copy the file in, or re-run this job"
        )
    if not real.is_file():
        raise RunError(f"{path}: not a regular file; re-run this job")
    return path


def _bounded_bytes(path: Path, limit: int) -> bytes:
    size = path.stat().st_size
    if size > limit:
        raise RunError(f"{path}: {size:,} bytes, more than a run's file holds (at most {limit:,}); {integrity.EDITED}")
    data = path.read_bytes()
    if len(data) > limit:  # grew while read
        raise RunError(f"{path}: more than {limit:,} bytes; {integrity.EDITED}")
    return data


# ------------------------------------------------------------------ YAML


class ConfigLoader(yaml.SafeLoader):
    """YAML as OmegaConf reads it (``1e-3`` a float, dates strings), bounded: the
    document's nodes, aliases expanded, are counted before anything is built, so an
    alias bomb (or a recursive alias) is refused at once."""

    def compose_document(self):
        node = super().compose_document()
        _expanded_size(node, MAX_YAML_NODES)
        return node


class _TooLarge(Exception):
    pass


def _expanded_size(node, limit: int) -> int:
    """Nodes in ``node`` with every alias expanded (memoised per node; a cycle is too large)."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(n) -> int:
        key = id(n)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise _TooLarge
        active.add(key)
        total = 1
        if isinstance(n, yaml.SequenceNode):
            for child in n.value:
                total += size(child)
                if total > limit:
                    raise _TooLarge
        elif isinstance(n, yaml.MappingNode):
            for k, v in n.value:
                total += size(k) + size(v)
                if total > limit:
                    raise _TooLarge
        active.discard(key)
        sizes[key] = total
        return total

    return size(node) if node is not None else 0


ConfigLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
ConfigLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


def read_yaml(path: Path, fix: str = "re-run this job"):
    """A YAML file as plain data, bounded (:data:`MAX_YAML_BYTES`, :data:`MAX_YAML_NODES`),
    nothing in it evaluated; a RunError naming the file (and line)."""
    data = _bounded_bytes(path, MAX_YAML_BYTES)
    try:
        return yaml.load(data.decode("utf-8"), Loader=ConfigLoader)  # noqa: S506 - a SafeLoader
    except _TooLarge:
        raise RunError(
            f"{path}: more than {MAX_YAML_NODES:,} YAML nodes once its aliases are expanded (or a recursive "
            f"alias); not a config receval wrote: {fix}"
        ) from None
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or getattr(error, "reason", None) or type(error).__name__
        raise RunError(f"{path}: not readable YAML ({problem}{where}); {fix}") from None


def read_config_yaml(path: Path) -> dict:
    """A saved ``config.yaml`` as plain data, its ``hydra`` node dropped."""
    data = read_yaml(path, "fix it, or re-run this job")
    if not isinstance(data, dict):
        raise RunError(f"{path}: not a config mapping; re-run this job")
    data.pop("hydra", None)
    return data


def read_json(path: Path, limit: int = MAX_JSON_BYTES) -> dict:
    """A JSON object file, bounded; a RunError naming it."""
    try:
        data = json.loads(_bounded_bytes(path, limit))
    except (ValueError, RecursionError) as error:
        data, why = None, cut(str(error), 120)
    else:
        why = f"a JSON {type(data).__name__}, not an object"
    if not isinstance(data, dict):
        raise RunError(f"{path}: not a run's facts ({why}); re-run this job")
    return data


# ------------------------------------------------------------------ results


def _check_footer(path: Path, parquet: pq.ParquetFile, names: list[str] | None) -> None:
    """Rows, columns, values and decoded bytes the footer declares, before any row is read."""
    meta = parquet.metadata
    problem = None
    if meta.num_rows > MAX_ROWS:
        problem = f"{meta.num_rows:,} rows (at most {MAX_ROWS:,})"
    elif meta.num_columns > MAX_COLUMNS:
        problem = f"{meta.num_columns:,} columns (at most {MAX_COLUMNS:,})"
    else:
        wanted = None if names is None else set(names)
        values = decoded = 0
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            for c in range(group.num_columns):
                column = group.column(c)
                if wanted is not None and column.path_in_schema.split(".", 1)[0] not in wanted:
                    continue
                values += column.num_values
                decoded += column.total_uncompressed_size
        if values > MAX_VALUES:
            problem = f"{values:,} values in the columns read (at most {MAX_VALUES:,})"
        elif decoded > MAX_DECODED_BYTES:
            problem = f"{decoded:,} decoded bytes in the columns read (at most {MAX_DECODED_BYTES:,})"
    if problem:
        raise RunError(f"{path}: its footer declares {problem}; {integrity.EDITED}")


def read_results(path: Path, skip: frozenset[str] = frozenset(), only: frozenset[str] | None = None) -> tuple[pa.Table, dict]:
    """``results.parquet`` checked: bytes, then footer bounds, metadata and column types
    before any row is read, then values, string sizes and unique ids."""
    size = path.stat().st_size
    if size > MAX_RESULTS_BYTES:
        raise RunError(f"{path}: {size:,} bytes (at most {MAX_RESULTS_BYTES:,}); {integrity.EDITED}")
    failed = f"{path}: cannot be read as results ({{}}); re-run this job"
    try:
        parquet = pq.ParquetFile(path)
        schema = parquet.schema_arrow
        names = list(schema.names)  # a damaged name fails to decode here
    except (pa.ArrowException, OSError, ValueError) as error:
        raise RunError(failed.format(cut(str(error), 160))) from None
    metadata = integrity.metadata_of(path, schema, META_KEY)
    integrity.check_schema(path, schema)
    columns = [n for n in names if n not in skip and (only is None or n in only)]
    _check_footer(path, parquet, columns)
    try:
        table = parquet.read(columns=columns)
    except MemoryError:  # pyarrow's ArrowMemoryError included
        raise RunError(f"{path}: too large to read into memory; {integrity.EDITED}") from None
    except (pa.ArrowException, OSError, ValueError) as error:
        raise RunError(failed.format(cut(str(error), 160))) from None
    integrity.check_values(path, table)
    ids = table.column("question_id")
    try:
        distinct = len(pc.unique(ids))
    except (pa.ArrowException, UnicodeDecodeError) as error:
        raise RunError(failed.format(cut(str(error), 160))) from None
    if distinct != len(ids):
        raise RunError(f"{path}: question ids repeat; questions are paired by id, so {integrity.EDITED}")
    return table, metadata


def _check_info(path: Path, info: dict) -> None:
    chunks = info.get("n_chunks")
    if chunks is not None and (numeric.count(chunks) is None or isinstance(chunks, float)):
        raise RunError(f"{path}: n_chunks is {cut(repr(chunks))}, not a count; {integrity.EDITED}")
    for key in ("label", "params", "measures"):
        if key in info and not isinstance(info[key], dict):
            raise RunError(f"{path}: {key} is {cut(repr(info[key]))}, not a mapping; {integrity.EDITED}")


def _chunks(path: Path) -> tuple[dict[str, tuple], dict]:
    """From ``chunks.json``, checked: chunk id -> (section id, start, end, text), and what
    else ``--show`` reads (:mod:`receval.shown`: ``sections``, section id -> (heading,
    text); ``evidence``, per question: ``found``, ``holds``, ``passages``; empty for a run
    written before they were stored)."""
    whole = read_json(path, MAX_CHUNKS_BYTES)
    data = whole.get("chunks")
    if not isinstance(data, dict):
        raise RunError(f"{path}: no chunks mapping; {integrity.EDITED}")
    out = {}
    for cid, item in data.items():
        if not (isinstance(item, list) and len(item) == 4 and isinstance(item[0], str)
                and all(isinstance(v, int) and not isinstance(v, bool) for v in item[1:3])
                and isinstance(item[3], str)):
            raise RunError(f"{path}: chunk {cut(repr(cid))} is not [section, start, end, text]; {integrity.EDITED}")
        out[cid] = tuple(item)
    shown: dict = {}
    if "sections" in whole:
        sections = whole["sections"]
        if not (isinstance(sections, dict) and all(
                isinstance(v, list) and len(v) == 2 and all(isinstance(t, str) for t in v) for v in sections.values())):
            raise RunError(f"{path}: sections is not a mapping of [heading, text]; {integrity.EDITED}")
        shown["sections"] = {sid: tuple(v) for sid, v in sections.items()}
    if "evidence" in whole:
        evidence = whole["evidence"]
        if not (isinstance(evidence, dict) and all(_evidence_facts(v) for v in evidence.values())):
            raise RunError(f"{path}: evidence is not a mapping of found, holds and passages; {integrity.EDITED}")
        shown["evidence"] = evidence
    return out, shown


def _evidence_facts(facts) -> bool:
    """One question's evidence facts have the shape :mod:`receval.shown` writes."""
    if not isinstance(facts, dict) or set(facts) != {"found", "holds", "passages"}:
        return False
    found, holds, passages = facts["found"], facts["holds"], facts["passages"]
    return (isinstance(found, dict) and all(v is None or (isinstance(v, int) and not isinstance(v, bool) and v > 0)
                                            for v in found.values())
            and isinstance(passages, dict) and all(isinstance(v, str) for v in passages.values())
            and isinstance(holds, dict) and all(
                isinstance(items, list) and all(
                    isinstance(h, list) and len(h) == 2 and isinstance(h[0], str)
                    and isinstance(h[1], int | float) and not isinstance(h[1], bool) and 0 <= h[1] <= 1
                    for h in items)
                for items in holds.values()))


# ------------------------------------------------------------------ the door


def open_run(
    run_dir: str | Path, *, skip: frozenset[str] = UNUSED_COLUMNS, only: frozenset[str] | None = None,
    chunks: bool = False, sealed: tuple[str, ...] | None = None,
) -> Run:
    """The run in ``run_dir``, complete and checked (see the module docstring), as a
    frozen :class:`Run`. ``skip``: results columns not read (by default the rankings
    and labels; pass ``frozenset()`` for all); ``only``: read no other column (the ids
    are always read: they are checked); ``chunks``: also read the retrieved
    chunks (``report --show``); ``sealed``: check only these files against the
    manifest (resume: results and run.json, the config being the new one)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunError(f"{run_dir}: no such directory" if not run_dir.exists() else f"{run_dir}: not a directory")
    root = run_dir.resolve()
    present = {name: path for name in manifest.SEALED if (path := contained(run_dir, name, root)) is not None}
    if RESULTS not in present:
        raise RunError(
            f"{run_dir}: no {RESULTS} here; give a run directory written by "
            "'receval' (a sweep's runs are its numbered subfolders)"
        )
    for name, path in present.items():  # bounded before a byte is hashed
        limit = _limit(name)
        if path.stat().st_size > limit:
            raise RunError(f"{path}: {path.stat().st_size:,} bytes (at most {limit:,}); {integrity.EDITED}")
    contained(run_dir, manifest.MANIFEST, root)  # a manifest linked from elsewhere is refused too
    files = manifest.read(run_dir)
    if sealed is not None:
        files = {k: v for k, v in files.items() if k in sealed}
        present = {k: v for k, v in present.items() if k in sealed}
    manifest.check(run_dir, files, present)
    info, config, overrides = _saved(present)  # small files first: a YAML bomb fails before any Parquet work
    table, metadata = read_results(present[RESULTS], skip, None if only is None else only | {"question_id"})
    retrieved, shown = _chunks(present[CHUNKS]) if chunks and CHUNKS in present else (None, None)
    digests = {name: entry["sha256"] for name, entry in files.items() if name in present}
    return Run(run_dir, table, metadata, info, config, overrides, retrieved, digests, shown)


def _saved(present: dict[str, Path]) -> tuple[dict, dict, list[str]]:
    """run.json, the saved config (for display: run.json's value where it saved one,
    else as written) and the overrides, from checked paths."""
    info: dict = {}
    if RUN_JSON in present:
        info = read_json(present[RUN_JSON])
        _check_info(present[RUN_JSON], info)
    saved = info.get("config") if isinstance(info.get("config"), dict) else None
    if CONFIG_PATH in present:
        config = trust.fill_interpolations(read_config_yaml(present[CONFIG_PATH]), saved, present[CONFIG_PATH], strict=False)
    else:
        config = dict(saved or {})
    overrides: list[str] = []
    if OVERRIDES_PATH in present:
        data = read_yaml(present[OVERRIDES_PATH])
        overrides = [str(item) for item in data] if isinstance(data, list) else []
    return info, config, overrides


def peek(run_dir: str | Path) -> tuple[dict, dict, list[str]]:
    """run.json, saved config and overrides of a folder that may be incomplete (``list``
    names such a run), read as the door reads them (contained, bounded); no results."""
    run_dir = Path(run_dir)
    root = run_dir.resolve()
    names = (RUN_JSON, CONFIG_PATH, OVERRIDES_PATH)
    return _saved({name: path for name in names if (path := contained(run_dir, name, root)) is not None})
