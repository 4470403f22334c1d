"""Output files never destroy inputs: one check for every flag that writes a file.

:func:`check_output` is called by every command before any work: an existing file
is refused unless ``--force``; a path inside a stored run folder or a dataset
folder (one the command reads, or any folder that looks like one) is always
refused; a directory given as a file is one clear message.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from receval.core.errors import RecevalError

RUN_MARKERS = ("results.parquet", "run.json", ".hydra")
FOLDER_DATASET = ("pages", "questions.jsonl")  # both: a folder dataset
BEIR_DATASET = "corpus.jsonl"


class OutputError(RecevalError):
    """An output path that would overwrite an input or another file."""


def _what(folder: Path) -> str | None:
    """'stored run' or 'dataset' when ``folder`` is one, else None."""
    try:
        if any((folder / marker).exists() for marker in RUN_MARKERS):
            return "stored run"
        if (folder / FOLDER_DATASET[0]).is_dir() and (folder / FOLDER_DATASET[1]).is_file():
            return "dataset"
        if (folder / BEIR_DATASET).is_file():
            return "dataset"
    except OSError:
        return None
    return None


def check_output(
    path: str | Path | None, *, force: bool = False, protected_dirs: Iterable[str | Path] = (),
    flag: str = "--out", existing_ok: bool = False, force_flag: str = "--force",
) -> Path | None:
    """Refuse an output ``path`` that would destroy something; returns it as a Path.

    ``protected_dirs``: folders (or files) the command reads. ``existing_ok``: the
    output is appended to, never replaced (``synth.out``). ``force_flag``: how the
    command spells ``force`` in the message (``force=true`` for a Hydra command)."""
    if path is None:
        return None
    target = Path(path).expanduser()
    name = f"{flag} {path}"
    if target.is_dir():
        raise OutputError(f"{name} is a directory; give the name of a file to write")
    full = target.resolve()
    for item in protected_dirs:
        inside = Path(item).expanduser().resolve()
        if full == inside or inside in full.parents:
            raise OutputError(
                f"{name} is inside {item}, which this command reads; write outputs elsewhere"
            )
    for folder in full.parents:
        what = _what(folder)
        if what:
            raise OutputError(
                f"{name} is inside the {what} folder {folder}; outputs never go into a {what}: "
                "write it elsewhere"
            )
    if target.exists() and not (force or existing_ok):
        raise OutputError(f"{name} already exists; pass {force_flag} to replace it, or choose another name")
    return target


def add_force(parser) -> None:
    parser.add_argument("--force", action="store_true", help="replace output files that already exist")
