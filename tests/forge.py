"""Forging a stored run in a test: after editing a run folder's files, :func:`forged`
makes the files agree again, as a careful forger would, so the test reaches the checks
that hold whatever the manifest says (types, ranges, sizes, trust). Without it the door
stops earlier: the folder reads as incomplete (tests/test_door.py, tests/test_bond.py).

A forger writes the manifest again and ties the files (receval.results.bond): run.json's
counts and means become the rows', and every file carries the run id the results carry
(none when they carry none). ``agree=False`` writes the manifest alone (a folder whose
files disagree, resealed)."""

import json
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from receval.results import bond
from receval.results.format import CHUNKS, CONFIG_PATH, META_KEY, OVERRIDES_PATH, RESULTS, RUN_JSON
from receval.results.manifest import seal


def forged(run_dir: Path, agree: bool = True) -> Path:
    run_dir = Path(run_dir)
    run_id = _agree(run_dir) if agree else _results_id(run_dir)
    seal(run_dir, run_id)
    return run_dir


def _results_id(run_dir: Path):
    try:
        meta = json.loads(pq.read_schema(run_dir / RESULTS).metadata[META_KEY])
        return meta.get(bond.KEY) if isinstance(meta, dict) else None
    except Exception:  # a hostile file: nothing to tie
        return None


def _agree(run_dir: Path):
    run_id = _results_id(run_dir)
    try:
        table = pq.read_table(run_dir / RESULTS)
    except Exception:
        table = None
    path = run_dir / RUN_JSON
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        info = None
    if isinstance(info, dict):
        before = json.dumps(info, sort_keys=True)
        if table is not None:
            if isinstance(info.get("n_questions"), int):
                info["n_questions"] = table.num_rows
            if isinstance(info.get("means"), dict):
                for name in info["means"]:
                    if name in table.column_names and pa.types.is_floating(table.column(name).type):
                        mean = pc.mean(table.column(name)).as_py()
                        info["means"][name] = math.nan if mean is None else mean
        info.pop(bond.KEY, None)
        if run_id is not None:
            info[bond.KEY] = run_id
        if json.dumps(info, sort_keys=True) != before:
            path.write_text(json.dumps(info, indent=2, sort_keys=True))
    for name in (CONFIG_PATH, OVERRIDES_PATH):
        saved = run_dir / name
        if saved.is_file() and not saved.is_symlink():
            data = saved.read_bytes()
            if bond.header_id(data) is not None:
                data = data.split(b"\n", 1)[1] if b"\n" in data else b""
            saved.write_bytes(bond.headed(run_id, "").encode() + data if run_id else data)
    chunks = run_dir / CHUNKS
    try:
        whole = json.loads(chunks.read_text())
    except (OSError, ValueError):
        whole = None
    if isinstance(whole, dict) and whole.get(bond.KEY) != run_id:
        whole.pop(bond.KEY, None)
        if run_id is not None:
            whole[bond.KEY] = run_id
        chunks.write_text(json.dumps(whole))
    return run_id
