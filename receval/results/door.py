"""The one door in: :func:`open_run` is how every command reads a run folder.

A stored run is data from anywhere, so before anything is materialised the door
1. reads each sealed file once (:func:`receval.core.io.read_whole`) and checks *those
   bytes* against the manifest written last (:mod:`receval.results.manifest`), else the
   run is *incomplete*; what it then parses are the same bytes (a file swapped between
   the check and the use is never read);
2. refuses a file that is a symlink leaving the folder (or a symlink loop), or not a
   regular file;
3. bounds sizes: file bytes (:data:`MAX_YAML_BYTES`, :data:`MAX_JSON_BYTES`,
   :data:`MAX_RESULTS_BYTES`, :data:`MAX_CHUNKS_BYTES`), YAML nodes after alias
   expansion (:data:`MAX_YAML_NODES`: a 1 KB alias bomb stops at once), and the results
   as decoded, before they are decoded (:mod:`receval.results.bounded`: rows, columns,
   values, pages decompressed and dictionary-encoded strings expanded at each use);
4. checks types, ranges and string sizes (:mod:`receval.results.integrity`) and unique
   question ids;
5. checks the files are of one run (:mod:`receval.results.bond`): the run id each
   carries, and run.json's counts and means against the rows;
6. evaluates no interpolation: ``${oc.env:...}`` in a saved config stays the text it is
   (for display, the value run.json saved at the same place when there is one).

It returns a frozen :class:`receval.results.record.Run`. Reading needs no flag: it
sends nothing and imports nothing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import yaml

from receval.core import numeric, trust
from receval.core.errors import RunError
from receval.core.io import TooLarge, read_whole
from receval.core.secrets import cut
from receval.results import bond, integrity, manifest
from receval.results.bounded import MAX_COLUMNS, MAX_DECODED_BYTES, MAX_ROWS, MAX_VALUES, read_results
from receval.results.format import CHUNKS, CONFIG_PATH, MANIFEST, OVERRIDES_PATH, RESULTS, RUN_JSON
from receval.results.record import FILLED, UNUSED_COLUMNS, Run

MAX_YAML_BYTES = 1 << 20  # a saved config or overrides file
MAX_YAML_NODES = 100_000  # YAML nodes once aliases are expanded
MAX_JSON_BYTES = 16 << 20  # run.json
MAX_CHUNKS_BYTES = 64 << 20  # chunks.json (the retrieved chunks, for --show)
MAX_RESULTS_BYTES = 2 << 30  # results.parquet on disk (rows, values, decoded bytes: receval.results.bounded)


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


def read_once(path: Path, limit: int) -> bytearray:
    """The bytes of a checked file (:func:`contained`), read once and bounded: what is
    hashed is what is parsed. A symlink inside the folder is read at its target; one
    swapped in after the check is refused."""
    real = Path(path).resolve() if Path(path).is_symlink() else path
    try:
        return read_whole(real, limit)
    except TooLarge as error:
        raise RunError(f"{path}: {error.size:,} bytes (at most {limit:,}); {integrity.EDITED}") from None
    except OSError as error:
        raise RunError(f"{path}: cannot be read ({error.strerror or error}); re-run this job") from None


# ------------------------------------------------------------------ YAML


class ConfigLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """YAML as OmegaConf reads it (``1e-3`` a float, dates strings), bounded: the
    document's nodes, aliases expanded, are counted before anything is built, so an
    alias bomb (or a recursive alias) is refused at once. libyaml's parser when PyYAML
    has it (the door reads a config on every command: about 5 times faster), the same
    resolvers and constructors either way."""

    def get_single_data(self):
        node = self.get_single_node()
        _expanded_size(node, MAX_YAML_NODES)
        return self.construct_document(node) if node is not None else None


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
    return parse_yaml(read_once(path, MAX_YAML_BYTES), path, fix)


def parse_yaml(data: bytes, path: Path, fix: str = "re-run this job"):
    """:func:`read_yaml` of bytes already read (``path`` names them)."""
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


def read_config_yaml(path: Path, data: bytes | None = None) -> dict:
    """A saved ``config.yaml`` (or its bytes, already read) as plain data, its ``hydra`` node dropped."""
    data = parse_yaml(read_once(path, MAX_YAML_BYTES) if data is None else data, path)
    if not isinstance(data, dict):
        raise RunError(f"{path}: not a config mapping; re-run this job")
    data.pop("hydra", None)
    return data


def read_json(path: Path, limit: int = MAX_JSON_BYTES, raw: bytes | None = None) -> dict:
    """A JSON object file (or its bytes, already read), bounded; a RunError naming it."""
    if raw is not None and len(raw) > limit:
        raise RunError(f"{path}: {len(raw):,} bytes (at most {limit:,}); {integrity.EDITED}")
    try:
        data = json.loads(read_once(path, limit) if raw is None else raw)
    except (ValueError, RecursionError) as error:
        data, why = None, cut(str(error), 120)
    else:
        why = f"a JSON {type(data).__name__}, not an object"
    if not isinstance(data, dict):
        raise RunError(f"{path}: not a run's facts ({why}); re-run this job")
    return data


# ------------------------------------------------------------------ run.json and chunks.json


def _check_info(path: Path, info: dict) -> None:
    chunks = info.get("n_chunks")
    if chunks is not None and (numeric.count(chunks) is None or isinstance(chunks, float)):
        raise RunError(f"{path}: n_chunks is {cut(repr(chunks))}, not a count; {integrity.EDITED}")
    for key in ("label", "params", "measures", FILLED):
        if key in info and not isinstance(info[key], dict):
            raise RunError(f"{path}: {key} is {cut(repr(info[key]))}, not a mapping; {integrity.EDITED}")


def _chunks(path: Path, raw: bytes) -> tuple[dict[str, tuple], dict, object]:
    """From ``chunks.json``'s bytes, checked: chunk id -> (section id, start, end, text), what
    else ``--show`` reads (:mod:`receval.run.shown`: ``sections``, section id -> (heading,
    text); ``evidence``, per question: ``found``, ``holds``, ``passages``; empty for a run
    written before they were stored) and the run id it carries."""
    whole = read_json(path, MAX_CHUNKS_BYTES, raw)
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
    return out, shown, whole.get(bond.KEY)


def _evidence_facts(facts) -> bool:
    """One question's evidence facts have the shape :mod:`receval.run.shown` writes."""
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


def job_dirs(path: Path) -> list[Path]:
    """Numbered subfolders of a sweep directory, in job-number order."""
    jobs = [p for p in path.iterdir() if p.is_dir() and p.name.isdigit()]
    return sorted(jobs, key=lambda p: int(p.name))


def open_run(
    run_dir: str | Path, *, skip: frozenset[str] = UNUSED_COLUMNS, only: frozenset[str] | None = None,
    chunks: bool = False, sealed: tuple[str, ...] | None = None, what: str = "run",
) -> Run:
    """The run in ``run_dir``, complete and checked (see the module docstring), as a
    frozen :class:`Run`. ``skip``: results columns not read (by default the rankings
    and labels; pass ``frozenset()`` for all); ``only``: read no other column (the ids
    are always read: they are checked); ``chunks``: also read the retrieved
    chunks (``report --show``); ``sealed``: check only these files against the
    manifest (resume: results and run.json, the config being the new one). A sweep is
    refused, naming its jobs (``what``: what the caller calls the run, e.g. ``"A"``)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunError(f"{run_dir}: no such directory" if not run_dir.exists() else f"{run_dir}: not a directory")
    root = run_dir.resolve()
    present = {name: path for name in manifest.SEALED if (path := contained(run_dir, name, root)) is not None}
    if RESULTS not in present and (jobs := job_dirs(run_dir)):
        raise RunError(
            f"{run_dir}: a sweep of {len(jobs)} jobs, not one run; give {what} as one "
            f"of its job folders, e.g. {jobs[0]}"
        )
    if RESULTS not in present:
        raise RunError(
            f"{run_dir}: no {RESULTS} here; give a run directory written by "
            "'receval' (a sweep's runs are its numbered subfolders)"
        )
    contained(run_dir, MANIFEST, root)  # a manifest linked from elsewhere is refused too
    sealed_by = manifest.read(run_dir)
    files = sealed_by.files
    if sealed is not None:
        files = {k: v for k, v in files.items() if k in sealed}
        present = {k: v for k, v in present.items() if k in sealed}
    blobs = {name: read_once(path, _limit(name)) for name, path in present.items()}  # each file read once
    manifest.check(run_dir, files, blobs)  # those bytes, and no others, are parsed below
    if not chunks:
        blobs.pop(CHUNKS, None)
    info, config, overrides = _saved(present, blobs)  # small files first: a YAML bomb fails before any Parquet work
    columns = None if only is None else only | {"question_id"}
    table, metadata = read_results(present[RESULTS], blobs.pop(RESULTS), skip, columns)
    carried = {MANIFEST: sealed_by.run_id, RESULTS: metadata.get(bond.KEY)}
    if RUN_JSON in present:
        carried[RUN_JSON] = info.get(bond.KEY)
    carried.update({name: bond.header_id(blobs[name]) for name in (CONFIG_PATH, OVERRIDES_PATH) if name in blobs})
    retrieved = shown = None
    if chunks and CHUNKS in present:
        retrieved, shown, carried[CHUNKS] = _chunks(present[CHUNKS], blobs.pop(CHUNKS))
    run_id = bond.check(run_dir, carried)
    bond.check_rows(run_dir, info, table)
    digests = {name: entry["sha256"] for name, entry in files.items() if name in present}
    return Run(run_dir, table, metadata, info, config, overrides, retrieved, digests, shown, run_id)


def _saved(present: dict[str, Path], blobs: dict[str, bytes]) -> tuple[dict, dict, list[str]]:
    """run.json, the saved config (for display: run.json's value where it saved one,
    else as written) and the overrides, from the bytes read of checked paths."""
    info: dict = {}
    if RUN_JSON in present:
        info = read_json(present[RUN_JSON], raw=blobs[RUN_JSON])
        _check_info(present[RUN_JSON], info)
    saved = info.get("config") if isinstance(info.get("config"), dict) else None
    if CONFIG_PATH in present:
        stored = read_config_yaml(present[CONFIG_PATH], blobs[CONFIG_PATH])
        config = trust.fill_interpolations(stored, saved, present[CONFIG_PATH], strict=False)
    else:
        config = dict(saved or {})
    overrides: list[str] = []
    if OVERRIDES_PATH in present:
        data = parse_yaml(blobs[OVERRIDES_PATH], present[OVERRIDES_PATH])
        overrides = [str(item) for item in data] if isinstance(data, list) else []
    return info, config, overrides


def peek(run_dir: str | Path) -> tuple[dict, dict, list[str]]:
    """run.json, saved config and overrides of a folder that may be incomplete (``list``
    names such a run), read as the door reads them (contained, bounded); no results."""
    run_dir = Path(run_dir)
    root = run_dir.resolve()
    present = {name: path for name in (RUN_JSON, CONFIG_PATH, OVERRIDES_PATH)
               if (path := contained(run_dir, name, root)) is not None}
    return _saved(present, {name: read_once(path, _limit(name)) for name, path in present.items()})


def header(run_dir: str | Path) -> Run:
    """The run in ``run_dir`` without its results: run.json, config and overrides
    (:func:`peek`), to order and choose runs before any is opened."""
    info, config, overrides = peek(run_dir)
    return Run(Path(run_dir), pa.table({"question_id": pa.array([], pa.string())}), {}, info, config, overrides)
