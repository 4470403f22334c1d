"""A run folder written as one unit: ``manifest.json``, written last, names the sha256
and size of every file a reader uses (:data:`SEALED`: the results, run.json, the saved
config and overrides, the retrieved chunks) and the run's id (:mod:`receval.results.bond`).

A run removes the manifest before it writes anything (:func:`unseal`) and writes it
after everything else (:func:`seal`), so a folder whose files disagree with its
manifest, or that has none, was stopped part-way (or edited): every reader calls it
incomplete (:func:`check`, on the very bytes the reader then parses), never an older
run under a newer config. A manifest of a newer version is a newer receval's, not a
damaged one: upgrade. The manifest is no signature: a reader still checks every value
(:mod:`receval.results.integrity`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from receval import __version__

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
    """A run folder whose files disagree with its manifest or with each other, or that has none."""


@dataclass(frozen=True)
class Manifest:
    """What a manifest says: file name -> {sha256, bytes}, and the run's id (None in a
    manifest written before run ids)."""

    files: dict[str, dict]
    run_id: object = None


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


def seal(run_dir: Path, run_id: str | None = None) -> Path:
    """Write the manifest of ``run_dir`` (last): each :data:`SEALED` file there, by hash
    and size, and the run's id. A run seals through its claim
    (:meth:`receval.results.claim.Claim.seal`), which holds the folder."""
    run_dir = Path(run_dir)
    files = {}
    for name in SEALED:
        path = run_dir / name
        if path.is_file() and not path.is_symlink():
            files[name] = {"sha256": digest(path), "bytes": path.stat().st_size}
    data = {"manifest_version": MANIFEST_VERSION, "files": files, **({"run_id": run_id} if run_id else {})}
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    target = run_dir / MANIFEST
    atomic_write(target, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return target


def read(run_dir: Path) -> Manifest:
    """The manifest's files (name -> sha256, bytes) and run id; an :class:`IncompleteRun`
    when there is none or it is not one, a RunError saying to upgrade when a newer
    receval wrote it."""
    path = Path(run_dir) / MANIFEST
    if not path.is_file():
        raise IncompleteRun(
            f"{run_dir}: incomplete run (no {MANIFEST}: it stopped before it finished, or was written "
            f"by a receval older than manifests); {RERUN}"
        )
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise IncompleteRun(f"{path}: {path.stat().st_size:,} bytes, not a manifest (at most {MAX_MANIFEST_BYTES:,}); {RERUN}")
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        data = None
    version = data.get("manifest_version") if isinstance(data, dict) else None
    if isinstance(version, int) and not isinstance(version, bool) and version > MANIFEST_VERSION:
        raise RunError(
            f"{path}: written by a newer receval (manifest version {version}; this receval, {__version__}, "
            f"reads version {MANIFEST_VERSION}); upgrade receval to read this run"
        )
    files = data.get("files") if isinstance(data, dict) else None
    ok = isinstance(files, dict) and all(
        name in SEALED and isinstance(entry, dict) and isinstance(entry.get("sha256"), str)
        and isinstance(entry.get("bytes"), int) and not isinstance(entry.get("bytes"), bool)
        for name, entry in files.items()
    )
    if not ok or version != MANIFEST_VERSION:
        raise IncompleteRun(f"{path}: not a receval manifest; {RERUN}")
    return Manifest(files, data.get("run_id"))


def check(run_dir: Path, files: dict[str, dict], present: dict[str, bytes]) -> None:
    """Every sealed file present (``present``: name -> the bytes the reader read, once,
    and parses next) is in the manifest with its size and hash, and every file the
    manifest names is present; an :class:`IncompleteRun` naming the first that is not."""
    for name in SEALED:
        entry, data = files.get(name), present.get(name)
        if entry is None and data is None:
            continue
        if entry is None:
            why = f"{name} is not in its {MANIFEST} (written after the run finished)"
        elif data is None:
            why = f"{name} is missing"
        elif len(data) != entry["bytes"] or hashlib.sha256(data).hexdigest() != entry["sha256"]:
            why = f"{name} differs from its {MANIFEST} (written again after the run, or stopped part-way)"
        else:
            continue
        raise IncompleteRun(f"{run_dir}: incomplete run ({why}); {RERUN}")
