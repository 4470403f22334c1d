"""The run id: one random id per run, carried by every file the run writes, so a folder
whose files come from two runs cannot read as one.

A run draws its id when it takes its folder (:mod:`receval.results.claim`) and writes
it into each file it seals:

- ``results.parquet``: key ``run_id`` of the ``receval`` key-value metadata;
- ``run.json`` and ``chunks.json``: key ``run_id``;
- ``.hydra/config.yaml`` and ``.hydra/overrides.yaml``: a first line
  ``# receval run <id>`` (a YAML comment: Hydra, OmegaConf and reproduce read the
  config as before);
- ``manifest.json``: key ``run_id``.

The door (:func:`receval.results.door.open_run`) checks the tie on the files it reads
(:func:`check`): every one carries the same id, else the folder is incomplete, with one
message naming which file is which run. It checks too that run.json's counts and means
are those of the rows (:func:`check_rows`), which ties run.json to the results in runs
written before run ids as well.

Runs written before run ids (no file carries one) read as before, their rows checked
against run.json. A folder where some files carry an id and others none is a mix, and
reads as incomplete: never silently one run's config with another's numbers.
"""

from __future__ import annotations

import math
import re
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from receval.core.secrets import cut
from receval.results.format import RESULTS, RUN_JSON
from receval.results.manifest import RERUN, IncompleteRun

KEY = "run_id"
HEADER = "# receval run "
_ID = re.compile(r"[0-9a-f]{32}")
_HEADED = re.compile(rb"# receval run ([0-9a-f]{32})\b")


def new_id() -> str:
    """A fresh run id: 32 hex digits (a random UUID)."""
    return uuid.uuid4().hex


def headed(run_id: str | None, text: str) -> str:
    """A saved YAML file's text with the run's id as its first line (a comment); as is
    for a run without an id."""
    return f"{HEADER}{run_id}: the run this folder holds\n{text}" if run_id else text


def header_id(data: bytes | bytearray) -> str | None:
    """The run id a saved YAML file's first line names, None when it names none."""
    found = _HEADED.match(data)
    return found.group(1).decode() if found else None


def check(run_dir: Path, carried: dict[str, object]) -> str | None:
    """The run id every file read carries (``carried``: file name -> the id it carries,
    None for none), None when none carries one (a run written before run ids); an
    :class:`IncompleteRun` naming which file is which run when they differ, or when some
    carry an id and others none."""
    ids = {name: value for name, value in carried.items() if value is not None}
    if not ids:
        return None
    named: dict[str, list[str]] = {}
    for name, value in carried.items():
        shown = (f"run {value[:8]}" if isinstance(value, str) and _ID.fullmatch(value)
                 else "no run id" if value is None else f"{cut(repr(value), 40)}, not a run id")
        named.setdefault(shown, []).append(name)
    if len(named) == 1:
        return next(iter(ids.values()))
    parts = "; ".join(f"{', '.join(names)}: {shown}" for shown, names in named.items())
    raise IncompleteRun(
        f"{run_dir}: incomplete run (its files are of different runs: {parts}; two runs wrote into this "
        f"folder, or a file was copied in); {RERUN}"
    )


def check_rows(run_dir: Path, info: dict, table: pa.Table) -> None:
    """run.json's ``n_questions`` is the number of rows, and each of its ``means`` of a
    column read is that column's mean; an :class:`IncompleteRun` naming the first that is not."""
    why = None
    count = info.get("n_questions")
    if isinstance(count, int) and not isinstance(count, bool) and count != table.num_rows:
        why = f"{RUN_JSON} counts {count:,} questions, {RESULTS} holds {table.num_rows:,} rows"
    means = info.get("means")
    if why is None and isinstance(means, dict):
        for name, saved in means.items():
            if name not in table.column_names or not pa.types.is_floating(table.column(name).type):
                continue
            mean = pc.mean(table.column(name)).as_py()
            if not _same(saved, mean):
                why = f"{RUN_JSON} gives mean {name} {cut(repr(saved), 40)}, the rows of {RESULTS} {mean!r}"
                break
    if why:
        raise IncompleteRun(f"{run_dir}: incomplete run ({why}: files of different runs, or edited); {RERUN}")


def _same(saved, mean) -> bool:
    """Equal means (to rounding; no values, NaN or null, on both sides counts as equal)."""
    if not isinstance(saved, int | float) or isinstance(saved, bool):
        return saved is None and (mean is None or math.isnan(mean))
    if mean is None or math.isnan(mean):
        return math.isnan(saved)
    return math.isclose(saved, mean, rel_tol=1e-9, abs_tol=1e-12)
