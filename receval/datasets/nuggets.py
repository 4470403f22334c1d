"""Nuggets: the facts a question's answer should hold, as TREC RAG distributes them.

``dataset.nuggets=FILE`` (JSONL, one question a line) gives each question its nuggets, in
the shape the TREC 2024 RAG track's AutoNuggetizer writes::

    {"qid": "q01", "nuggets": [{"text": "DVDs are lent for one week", "importance": "vital"},
                               {"text": "a DVD can be renewed once", "importance": "okay"}]}

``question_id`` may stand for ``qid``; a nugget's ``id`` is optional (``n1``, ``n2``... by
position otherwise), other keys (``assignment``, ``query``) are ignored; ``importance`` is
``vital`` or ``okay``. A questions file (the ``folder`` format) may instead give a question's
``"nuggets"`` in the same list shape. A question named twice (the file and its questions
line, or two lines) is an error, as is a question id no question has; every problem is
named with its file and line, at once. The measures that read them:
:mod:`receval.measures.nuggets` (which nuggets the retrieved text supports),
``nugget_recall@k`` and ``vital_nugget_recall@k`` (:mod:`receval.scoring.chunks`).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from receval.core.errors import DatasetError
from receval.datasets.types import Dataset, Nugget, Question

IMPORTANCE = ("vital", "okay")
MAX_PROBLEMS = 50


def parse_nuggets(raw, where: str) -> tuple[tuple[Nugget, ...], list[str]]:
    """A question's ``nuggets`` list -> its nuggets, or the problems with it."""
    if not isinstance(raw, list):
        return (), [f"{where}: 'nuggets' must be a list of {{\"text\", \"importance\"}} objects, got {type(raw).__name__}"]
    nuggets, problems, seen = [], [], set()
    for i, item in enumerate(raw, 1):
        if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not item["text"].strip():
            problems.append(f"{where}: nugget {i} must be an object with a non-empty 'text'")
            continue
        importance = item.get("importance")
        if importance not in IMPORTANCE:
            problems.append(f"{where}: nugget {i} has importance {importance!r}; use \"vital\" or \"okay\"")
            continue
        nid = item.get("id", f"n{i}")
        if not isinstance(nid, str | int) or isinstance(nid, bool) or not str(nid).strip():
            problems.append(f"{where}: nugget {i}'s id must be a non-empty string")
            continue
        if str(nid) in seen:
            problems.append(f"{where}: nugget id {str(nid)!r} repeats; give each nugget of a question its own id")
            continue
        seen.add(str(nid))
        nuggets.append(Nugget(str(nid), item["text"].strip(), importance == "vital"))
    return tuple(nuggets), problems


def read_nuggets(path: Path) -> dict[str, tuple[tuple[Nugget, ...], str]]:
    """Question id -> (its nuggets, ``file:line``) from a nuggets JSONL; every problem at once."""
    if not path.is_file():
        raise DatasetError(f"dataset.nuggets={path}: file not found; give a JSONL of {{\"qid\", \"nuggets\"}} lines")
    found: dict[str, tuple[tuple[Nugget, ...], str]] = {}
    problems: list[str] = []
    try:
        lines = path.read_text(encoding="utf-8-sig").split("\n")
    except (UnicodeDecodeError, OSError) as error:
        raise DatasetError(f"dataset.nuggets={path}: cannot be read as UTF-8 text ({error})") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            problems.append(f"{where}: not valid JSON; fix the line")
            continue
        qid = record.get("qid", record.get("question_id")) if isinstance(record, dict) else None
        if isinstance(qid, int) and not isinstance(qid, bool):
            qid = str(qid)
        if not isinstance(qid, str) or not qid:
            problems.append(f"{where}: no question id; each line is {{\"qid\": ..., \"nuggets\": [...]}}")
            continue
        nuggets, bad = parse_nuggets(record.get("nuggets"), where)
        problems += bad
        if qid in found:
            problems.append(f"{where}: question {qid!r} is given nuggets again (first at {found[qid][1]}); keep one line")
            continue
        found[qid] = (nuggets, where)
    if problems:
        raise DatasetError(problems[:MAX_PROBLEMS] + ([f"... and {len(problems) - MAX_PROBLEMS} more problems"]
                                                      if len(problems) > MAX_PROBLEMS else []))
    return found


def with_nuggets(dataset: Dataset, path: Path) -> Dataset:
    """``dataset`` with the nuggets file's nuggets on its questions."""
    given = read_nuggets(path)
    by_id = {q.id: q for q in dataset.questions}
    problems = [f"{where}: question {qid!r} is not among the dataset's questions" for qid, (_, where) in given.items()
                if qid not in by_id]
    problems += [f"{where}: question {qid!r} already has nuggets in its questions file; give them in one place"
                 for qid, (_, where) in given.items() if qid in by_id and by_id[qid].nuggets]
    if problems:
        raise DatasetError(problems[:MAX_PROBLEMS])
    questions = [replace(q, nuggets=given[q.id][0]) if q.id in given else q for q in dataset.questions]
    return replace(dataset, questions=questions)


def nugget_counts(questions: list[Question]) -> dict[str, int]:
    """What the run records of its nuggets: questions with any, nuggets, vital nuggets."""
    return {"questions": sum(bool(q.nuggets) for q in questions),
            "nuggets": sum(len(q.nuggets) for q in questions),
            "vital": sum(n.vital for q in questions for n in q.nuggets)}
