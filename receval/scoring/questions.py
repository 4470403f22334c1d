"""A question and its labels, as every measure reads them: :class:`Question`,
:class:`Evidence` (a labelled span of a page), the grade rule (:func:`grade_problem`).
Plain types, no reader: the datasets (:mod:`receval.datasets`) build them from files,
the read side from a stored run's rows."""

from __future__ import annotations

from dataclasses import dataclass, field

UNANSWERABLE = "unanswerable"
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
class Nugget:
    """A fact the answer to a question should hold (TREC RAG's nuggets): ``vital`` (the
    answer is incomplete without it) or okay (good to have)."""

    id: str
    text: str
    vital: bool


@dataclass(frozen=True)
class Question:
    """A question and its labels: section id -> grade (>= 1; 1 when ungraded), and
    evidence items. With evidence, the items are the relevant units (scored at chunk
    ranks, see :mod:`receval.measures.coverage`); without, the sections are. ``nonrelevant``:
    sections judged and found not relevant (a qrels score of 0), which only ``bpref``
    reads; every other measure treats them as unjudged sections. ``excluded``: units
    dropped from its ranking and never scored (:mod:`receval.datasets.excluded`);
    ``nuggets``: what its answer should hold (:mod:`receval.measures.nuggets`)."""

    id: str
    text: str
    kind: str
    split: str
    relevant: dict[str, int] = field(default_factory=dict)
    evidence: tuple[Evidence, ...] = ()
    nonrelevant: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    nuggets: tuple[Nugget, ...] = ()

    @property
    def answerable(self) -> bool:
        return bool(self.relevant or self.evidence)
