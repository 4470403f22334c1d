"""Datasets: the labelled unit is the *section*; questions label sections, never chunks.

``load_dataset(cfg)`` reads the configured format into a :class:`Dataset`, validating
everything before any result is written; ``load_sections(cfg)`` reads its sections
alone (no questions needed: what ``receval synth`` writes questions about). The types
are :mod:`.types`; the formats :mod:`.folder` (pages and a questions file, the built-in
library included) and :mod:`.beir`, :mod:`.irds` (an ir_datasets id); questions and their evidence :mod:`.questions`
and :mod:`.evidence`.
"""

from __future__ import annotations

from pathlib import Path

from receval.core.errors import DatasetError
from receval.datasets import beir, folder, irds
from receval.datasets.types import (
    LIBRARY, MAX_GRADE, UNANSWERABLE, Dataset, Evidence, Question, Section, fingerprint, grade_problem,
)

__all__ = [
    "LIBRARY", "MAX_GRADE", "UNANSWERABLE", "Dataset", "Evidence", "Question", "Section", "fingerprint",
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
    """Load the dataset a ``dataset`` config names (``format``: folder | beir | ir_datasets)."""
    return _reader(cfg, "load")(cfg)


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
