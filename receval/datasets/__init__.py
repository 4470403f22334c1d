"""Datasets: the labelled unit is the *section*; questions label sections, never chunks.

``load_dataset(cfg)`` reads the configured format into a :class:`Dataset`, validating
everything before any result is written; ``load_sections(cfg)`` reads its sections
alone (no questions needed: what ``receval synth`` writes questions about). The types
are :mod:`.types`; the formats :mod:`.folder` (pages and a questions file, the built-in
library included) and :mod:`.beir`, :mod:`.irds` (an ir_datasets id); questions and their evidence :mod:`.questions`
and :mod:`.evidence`.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

from receval.core.errors import DatasetError
from receval.datasets import beir, folder, irds
from receval.datasets.excluded import with_exclusions
from receval.datasets.nuggets import with_nuggets
from receval.datasets.types import (
    LIBRARY, MAX_GRADE, UNANSWERABLE, Dataset, Evidence, Nugget, Question, Section, fingerprint, grade_problem,
)

__all__ = [
    "LIBRARY", "MAX_GRADE", "UNANSWERABLE", "Dataset", "Evidence", "Nugget", "Question", "Section", "fingerprint",
    "grade_problem", "load_dataset", "load_sections", "questions_path",
]


def _reader(cfg, what: str):
    """The ``what`` function (``load`` or ``load_sections``) of the format ``cfg`` names."""
    formats = {"folder": folder, "beir": beir, "ir_datasets": irds}
    module = formats.get(str(cfg.format))
    if module is None:
        raise DatasetError(
            f"dataset.format={cfg.format!r} is not known; use one of: {', '.join(formats)}"
        )
    return getattr(module, what)


def load_dataset(cfg) -> Dataset:
    """Load the dataset a ``dataset`` config names (``format``: folder | beir | ir_datasets),
    with its questions' excluded units (:mod:`.excluded`) and nuggets (:mod:`.nuggets`)."""
    dataset = _reader(cfg, "load")(cfg)
    excluded, nuggets = _option(cfg, "excluded"), _option(cfg, "nuggets")
    files = [Path(p).expanduser() for p in (excluded, nuggets) if p]
    if nuggets:
        dataset = with_nuggets(dataset, Path(nuggets).expanduser())
    if excluded or _option(cfg, "exclude_self") or any(q.excluded for q in dataset.questions):
        dataset = with_exclusions(dataset, Path(excluded).expanduser() if excluded else None,
                                  bool(_option(cfg, "exclude_self")))
    if files:  # the files read enter the dataset's identity (a dataset without them keeps its own)
        combined = "+".join(fingerprint([f], f.parent) for f in files)  # bytes and base name, wherever run
        dataset = replace(dataset, fingerprint=hashlib.sha256(f"{dataset.fingerprint}+{combined}".encode()).hexdigest())
    return dataset


def _option(cfg, key: str, default=None):
    """A key of a ``dataset`` node (a config or any object with its attributes), or ``default``."""
    getter = getattr(cfg, "get", None)
    return getter(key, default) if callable(getter) else getattr(cfg, key, default)


def load_sections(cfg) -> list[Section]:
    """The sections of the dataset a ``dataset`` config names, without its questions."""
    return _reader(cfg, "load_sections")(cfg)


def questions_path(cfg) -> Path | None:
    """The questions file the dataset itself reads (None when its config names none)."""
    if cfg.questions:
        return Path(cfg.questions).expanduser()
    if cfg.format == "folder":
        return (Path(cfg.path).expanduser() if cfg.path else LIBRARY) / "questions.jsonl"
    if cfg.format == "beir" and cfg.path:
        return Path(cfg.path).expanduser() / "queries.jsonl"
    return None
