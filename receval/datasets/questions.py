"""Reading and validating a ``questions.jsonl`` file against the known sections.

All problems are collected and raised together, one line each naming the file, the
line and the fix, so a user mends the file in one pass.
"""

from __future__ import annotations

import difflib
import json
import unicodedata
from collections.abc import Iterable
from pathlib import Path

from receval.datasets.types import MAX_GRADE, UNANSWERABLE, Question, Section, grade_problem
from receval.core.errors import DatasetError
from receval.datasets.evidence import PageIndex, locate, pages_from_sections, parse_evidence
from receval.datasets.nuggets import parse_nuggets

MAX_PROBLEMS = 50


def closest_ids(label: str, ids: Iterable[str], n: int = 3) -> list[str]:
    """The section ids most like a mistyped label, best first."""
    ids = list(ids)
    close = difflib.get_close_matches(label, ids, n=n, cutoff=0.5)
    if not close and "#" in label:  # same page, any heading
        page = label.split("#", 1)[0] + "#"
        close = [i for i in ids if i.startswith(page)][:n]
    return close


def _labels(raw, where: str) -> tuple[dict[str, int], list[str]]:
    """``relevant`` as a list of ids or an object id -> grade."""
    if raw is None:
        return {}, []
    if isinstance(raw, list):
        bad = [x for x in raw if not isinstance(x, str) or not x]
        if bad:
            return {}, [f"{where}: 'relevant' must list section ids as strings, got {bad[0]!r}"]
        return {unicodedata.normalize("NFC", label): 1 for label in raw}, []
    if isinstance(raw, dict):
        problems = [
            f"{where}: grade of {label!r} must be an integer >= 1, got {grade!r}"
            for label, grade in raw.items()
            if isinstance(grade, bool) or not isinstance(grade, int) or grade < 1
        ]
        problems += [  # stored as int32: a huge grade would fail only when results are written
            grade_problem(grade, where, label)
            for label, grade in raw.items()
            if isinstance(grade, int) and grade > MAX_GRADE
        ]
        labels = {unicodedata.normalize("NFC", label): grade for label, grade in raw.items()}
        return ({} if problems else labels), problems
    return {}, [
        f"{where}: 'relevant' must be a list of section ids or an object id -> grade, "
        f"got {type(raw).__name__}"
    ]


def parse_question(record, where: str) -> tuple[Question | None, list[str]]:
    """One decoded JSON line -> a Question, or the problems with it."""
    if not isinstance(record, dict):
        return None, [f"{where}: expected a JSON object, got {type(record).__name__}"]
    problems = []
    qid = record.get("id")
    if isinstance(qid, int) and not isinstance(qid, bool):
        qid = str(qid)
    if qid is None or (isinstance(qid, str) and not qid.strip()):
        problems.append(f"{where}: missing 'id'; give every question a unique string id")
    elif not isinstance(qid, str):
        problems.append(
            f"{where}: 'id' must be a string or an integer, got {type(qid).__name__} {qid!r}; "
            "give every question a unique string id"
        )
    text = record.get("question")
    if not isinstance(text, str) or not text.strip():
        problems.append(f"{where}: empty question; write the question text in 'question'")
    kind = record.get("kind", "unspecified")
    split = record.get("split", "all")
    for key, value in (("kind", kind), ("split", split)):
        if not isinstance(value, str) or not value:
            problems.append(f"{where}: '{key}' must be a non-empty string, got {value!r}")
    relevant, label_problems = _labels(record.get("relevant"), where)
    problems += label_problems
    evidence, evidence_problems = parse_evidence(record, where)
    problems += evidence_problems
    excluded = record.get("excluded", [])
    if not isinstance(excluded, list) or not all(isinstance(x, str) and x for x in excluded):
        problems.append(f"{where}: 'excluded' must list unit ids as strings, got {excluded!r}"[:300])
    nuggets, nugget_problems = parse_nuggets(record["nuggets"], where) if "nuggets" in record else ((), [])
    problems += nugget_problems
    if problems:
        return None, problems
    return Question(qid, text.strip(), kind, split, relevant, evidence, excluded=tuple(excluded), nuggets=nuggets), []


def label_problems(question: Question, at: str, known: set[str]) -> list[str]:
    """Labels must name known sections; only ``unanswerable`` questions may have none."""
    problems = []
    if not question.answerable and question.kind != UNANSWERABLE:
        problems.append(
            f"{at}: question {question.id!r} has no relevant sections; label it, or set "
            f'"kind": "{UNANSWERABLE}" to keep it out of retrieval metrics'
        )
    for label in question.relevant:
        if label not in known:
            close = closest_ids(label, known)
            hint = f"; closest: {', '.join(close)}" if close else ""
            problems.append(
                f"{at}: question {question.id!r} labels {label!r}, which names no section{hint}"
            )
    return problems


def read_questions(
    path: Path, sections: list[Section], pages: dict[str, str] | None = None
) -> list[Question]:
    """Parse and validate a questions file; raise every problem at once. Evidence
    labels are located in ``pages`` (page id -> text; rebuilt from the sections when
    not given)."""
    if not path.is_file():
        raise DatasetError(
            f"{path}: questions file not found; write one JSON question per line there "
            "(or set dataset.questions)"
        )
    known = {section.id for section in sections}
    questions: list[Question] = []
    where: dict[str, str] = {}
    problems: list[str] = []
    index: PageIndex | None = None
    try:
        # "\n" only: U+2028, U+2029 and U+0085 are valid inside JSON strings
        lines = [line.removesuffix("\r") for line in path.read_text(encoding="utf-8-sig").split("\n")]
    except UnicodeDecodeError as error:
        raise DatasetError(f"{path}: not UTF-8 text ({error.reason}); save it as UTF-8") from None
    except OSError as error:
        raise DatasetError(f"{path}: cannot be read ({error.strerror}); check its permissions") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        at = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            problems.append(f"{at}: not valid JSON ({error.msg} at column {error.colno}); fix the line")
            continue
        except (ValueError, RecursionError) as error:  # a 5000-digit number, nesting too deep
            problems.append(f"{at}: cannot be read as JSON ({error}); fix the line")
            continue
        question, found = parse_question(record, at)
        problems += found
        if question is None:
            continue
        if question.id in where:
            problems.append(
                f"{at}: duplicate question id {question.id!r} (first at {where[question.id]}); "
                "give each question its own id"
            )
            continue
        where[question.id] = at
        if question.evidence:
            if index is None:
                index = PageIndex(pages if pages is not None else pages_from_sections(sections))
            question, found = locate(question, at, index)
            problems += found
            if found:
                continue
        questions.append(question)
        problems += label_problems(question, at, known)
    if not questions and not problems:
        problems.append(f"{path}: holds no questions; write one JSON object per line")
    if problems:
        shown = problems[:MAX_PROBLEMS]
        if len(problems) > MAX_PROBLEMS:
            shown.append(f"... and {len(problems) - MAX_PROBLEMS} more problems")
        raise DatasetError(shown)
    return questions
