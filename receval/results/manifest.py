"""A run folder written as one unit: ``manifest.json``, written last, names the sha256
and size of every file a reader uses (:data:`SEALED`: the results, run.json, the saved
config and overrides, the retrieved chunks).

A run removes the manifest before it writes anything (:func:`unseal`) and writes it
after everything else (:func:`seal`), so a folder whose files disagree with its
manifest, or that has none, was stopped part-way (or edited): every reader calls it
incomplete (:func:`check`), never an older run under a newer config. The manifest is
no signature: a reader still checks every value (:mod:`receval.results.integrity`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from receval.core.errors import RunError
from receval.core.io import atomic_write
from receval.results.format import CHUNKS, CONFIG_PATH, MANIFEST, OVERRIDES_PATH, RESULTS, RUN_JSON

#: Files a reader uses, relative to the run folder; each is in the manifest when it exists.
SEALED = (RESULTS, RUN_JSON, CONFIG_PATH, OVERRIDES_PATH, CHUNKS)
MANIFEST_VERSION = 1
MAX_MANIFEST_BYTES = 64 << 10
_BLOCK = 1 << 20

RERUN = "re-run this job (the same command resumes a sweep)"


class IncompleteRun(RunError):
    """A run folder whose files disagree with its manifest, or that has none."""


def digest(path: Path) -> str:
    """sha256 of a file, read in blocks."""
    hasher = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_BLOCK):
            hasher.update(block)
    return hasher.hexdigest()


def unseal(run_dir: Path) -> None:
    """Remove the manifest before a run writes into ``run_dir``: until :func:`seal`, the
    folder reads as incomplete, whatever older files it holds."""
    (Path(run_dir) / MANIFEST).unlink(missing_ok=True)


def seal(run_dir: Path) -> Path:
    """Write the manifest of ``run_dir`` (last): each :data:`SEALED` file there, by hash and size."""
    run_dir = Path(run_dir)
    files = {}
    for name in SEALED:
        path = run_dir / name
        if path.is_file() and not path.is_symlink():
            files[name] = {"sha256": digest(path), "bytes": path.stat().st_size}
    text = json.dumps({"manifest_version": MANIFEST_VERSION, "files": files}, indent=2, sort_keys=True) + "\n"
    target = run_dir / MANIFEST
    atomic_write(target, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return target


def read(run_dir: Path) -> dict[str, dict]:
    """The manifest's files (name -> sha256, bytes); an :class:`IncompleteRun` when
    there is none or it is not one."""
    path = Path(run_dir) / MANIFEST
    if not path.is_file():
        raise IncompleteRun(
            f"{run_dir}: incomplete run (no {MANIFEST}: it stopped before it finished, or was written "
            f"by a receval older than manifests); {RERUN}, or 'receval reproduce' it"
        )
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise IncompleteRun(f"{path}: {path.stat().st_size:,} bytes, not a manifest (at most {MAX_MANIFEST_BYTES:,}); {RERUN}")
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        data = None
    files = data.get("files") if isinstance(data, dict) else None
    ok = isinstance(files, dict) and all(
        name in SEALED and isinstance(entry, dict) and isinstance(entry.get("sha256"), str)
        and isinstance(entry.get("bytes"), int) and not isinstance(entry.get("bytes"), bool)
        for name, entry in files.items()
    )
    if not ok or data.get("manifest_version") != MANIFEST_VERSION:
        raise IncompleteRun(f"{path}: not a receval manifest; {RERUN}")
    return files


def check(run_dir: Path, files: dict[str, dict], present: dict[str, Path]) -> None:
    """Every sealed file present (``present``: name -> its checked path) is in the
    manifest with its size and hash, and every file the manifest names is present; an
    :class:`IncompleteRun` naming the first that is not."""
    for name in SEALED:
        entry, path = files.get(name), present.get(name)
        if entry is None and path is None:
            continue
        if entry is None:
            why = f"{name} is not in its {MANIFEST} (written after the run finished)"
        elif path is None:
            why = f"{name} is missing"
        elif path.stat().st_size != entry["bytes"] or digest(path) != entry["sha256"]:
            why = f"{name} differs from its {MANIFEST} (written again after the run, or stopped part-way)"
        else:
            continue
        raise IncompleteRun(f"{run_dir}: incomplete run ({why}); {RERUN}")
