"""Datasets: the labelled unit is the *section*; questions label sections, never chunks.

``load_dataset(cfg)`` reads the configured format into a :class:`Dataset`, validating
everything before any result is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from receval.errors import DatasetError

UNANSWERABLE = "unanswerable"
LIBRARY = Path(__file__).resolve().parent / "library"


@dataclass(frozen=True)
class Section:
    """Text under one heading; ``id`` is ``<page stem>#<heading slug>``."""

    id: str
    page: str
    heading_path: tuple[str, ...]
    text: str

    @property
    def heading(self) -> str:
        """The heading path as people read it: ``Fines > Late returns``."""
        return " > ".join(self.heading_path)


@dataclass(frozen=True)
class Question:
    """A question and its labels: section id -> grade (>= 1; 1 when ungraded)."""

    id: str
    text: str
    kind: str
    split: str
    relevant: dict[str, int] = field(default_factory=dict)

    @property
    def answerable(self) -> bool:
        return bool(self.relevant)


@dataclass(frozen=True)
class Dataset:
    name: str
    sections: list[Section]
    questions: list[Question]
    fingerprint: str  # sha256 of the files read: pages and questions
    notes: dict = field(default_factory=dict)  # loader counts, e.g. {"unjudged_questions": 300}


def load_dataset(cfg) -> Dataset:
    """Load the dataset a ``dataset`` config names (``format``: folder | beir)."""
    from receval.datasets import beir, folder

    formats = {"folder": folder.load, "beir": beir.load}
    loader = formats.get(cfg.format)
    if loader is None:
        raise DatasetError(
            f"dataset.format={cfg.format!r} is not known; use one of: {', '.join(formats)}"
        )
    return loader(cfg)
