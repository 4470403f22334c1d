"""A dataset's types: :class:`Section` (the labelled unit; questions label sections,
never chunks), :class:`Dataset`, and the :func:`fingerprint` of the files a dataset was
read from. :class:`Evidence`, :class:`Question` and the grade rule live in
:mod:`receval.scoring.questions` (the read side scores with them too) and are
re-exported here. The readers of each format import these; the package
(:mod:`receval.datasets`) re-exports them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from receval.core.errors import DatasetError
from receval.scoring.questions import (  # noqa: F401  (re-exported: the scoring layer's types)
    MAX_GRADE, UNANSWERABLE, Evidence, Nugget, Question, grade_problem,
)

LIBRARY = Path(__file__).resolve().parent / "library"


@dataclass(frozen=True)
class Section:
    """Text under one heading; ``id`` is ``<page stem>#<heading slug>``."""

    id: str
    page: str
    heading_path: tuple[str, ...]
    text: str
    start: int = 0  # character offsets into the page text: page[start:end] == text
    end: int = -1  # -1: start + len(text) (a page that is one section, as a BEIR document)

    def __post_init__(self) -> None:
        if self.end < 0:
            object.__setattr__(self, "end", self.start + len(self.text))

    @property
    def heading(self) -> str:
        """The heading path as people read it: ``Fines > Late returns``."""
        return " > ".join(self.heading_path)


@dataclass(frozen=True)
class Dataset:
    name: str
    sections: list[Section]
    questions: list[Question]
    fingerprint: str  # sha256 of the files read: pages and questions
    notes: dict = field(default_factory=dict)  # loader counts, e.g. {"unjudged_questions": 300}
    pages: dict[str, str] = field(default_factory=dict)  # page id -> text offsets point into


def fingerprint(files: list[Path], root: Path) -> str:
    """sha256 over each file's path (relative to ``root`` when inside it) and bytes,
    read in 1 MiB blocks (corpora can be large): the dataset's identity in run records
    and cache keys."""
    digest = hashlib.sha256()
    for file in files:
        try:
            name = file.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            name = file.name
        digest.update(name.encode() + b"\0")
        with file.open("rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()
