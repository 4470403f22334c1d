"""A dataset's types: :class:`Section` (the labelled unit; questions label sections,
never chunks), :class:`Evidence`, :class:`Question`, :class:`Dataset`, and the
:func:`fingerprint` of the files a dataset was read from. The readers of each format
import these; the package (:mod:`receval.datasets`) re-exports them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from receval.core.errors import DatasetError

UNANSWERABLE = "unanswerable"
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


MAX_GRADE = 1000  # grades are stored as int32; a larger one is a typo, refused at load time


def grade_problem(grade: int, where: str, label: str) -> str | None:
    """The problem with a judgement's grade (qrels: <= 0 is "not relevant"), or None."""
    if abs(grade) > MAX_GRADE:
        return f"{where}: grade of {label!r} is {grade}; use an integer from 1 to {MAX_GRADE}"
    return None


@dataclass(frozen=True)
class Evidence:
    """One evidence item: characters ``start:end`` of a page (``quote``: the label's
    text when it was given as a quote; located when the dataset is read)."""

    page: str | None
    start: int
    end: int
    quote: str | None = None

    @property
    def label(self) -> str:
        return f"{self.page}:{self.start}-{self.end}"

    @staticmethod
    def parse(label: str) -> "Evidence | None":
        """The item a stored label (``page:start-end``, :attr:`label`) names; None for a
        label of another form (a section id)."""
        page, _, offsets = str(label).rpartition(":")
        start, _, end = offsets.partition("-")
        if not page or not start.isdigit() or not end.isdigit() or int(start) >= int(end):
            return None
        return Evidence(page, int(start), int(end))


@dataclass(frozen=True)
class Question:
    """A question and its labels: section id -> grade (>= 1; 1 when ungraded), and
    evidence items. With evidence, the items are the relevant units (scored at chunk
    ranks, see :mod:`receval.measures.coverage`); without, the sections are. ``nonrelevant``:
    sections judged and found not relevant (a qrels score of 0), which only ``bpref``
    reads; every other measure treats them as unjudged sections."""

    id: str
    text: str
    kind: str
    split: str
    relevant: dict[str, int] = field(default_factory=dict)
    evidence: tuple[Evidence, ...] = ()
    nonrelevant: tuple[str, ...] = ()

    @property
    def answerable(self) -> bool:
        return bool(self.relevant or self.evidence)


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
