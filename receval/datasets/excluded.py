"""Excluded units: per question, units dropped from its ranking and never scored.

Some collections name, for each question, documents that must not count: BRIGHT's
``excluded_ids`` (the question's own source), castorini's exclusion files, and BEIR's
ArguAna, where each query is itself an argument of the corpus and retrieving it is trivial.
Three ways to give them, combined:

- ``dataset.excluded=FILE``: a TSV with the header ``query-id<TAB>corpus-id`` (further
  columns ignored), one pair a line;
- a questions file (the ``folder`` format) may give ``"excluded": [ids]`` per question;
- ``dataset.exclude_self=true``: each question's own id, where a unit has that id (ArguAna).

What happens (:func:`receval.exclusion.drop_excluded` on the run side): each question's
excluded units are dropped from its ranking of chunks before any cut-off (the ranking is
searched deeper by as many chunks as its excluded units hold, so it keeps ``depth`` ranks
where the collection allows), and they are never scored: a label naming an excluded unit
is removed from the question. A question whose every relevant label is excluded is an
error. A pair naming a question or a unit the dataset lacks is an error too (a typo would
exclude nothing). The run records what was dropped: per question the ``excluded``
column (chunks dropped from its ranking), and in ``run.json`` ``excluded`` (questions
with exclusions, units excluded, chunks dropped, labels removed).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from receval.core.errors import DatasetError
from receval.datasets.types import Dataset, Question

HEADER = ("query-id", "corpus-id")
MAX_PROBLEMS = 50


def read_excluded(path: Path) -> dict[str, list[tuple[str, str]]]:
    """Question id -> [(unit id, ``file:line``)] from the TSV; every bad line named at once."""
    if not path.is_file():
        raise DatasetError(f"dataset.excluded={path}: file not found; give a TSV with the header query-id<TAB>corpus-id")
    try:
        lines = path.read_text(encoding="utf-8-sig").split("\n")
    except (UnicodeDecodeError, OSError) as error:
        raise DatasetError(f"dataset.excluded={path}: cannot be read as UTF-8 text ({error})") from None
    header = lines[0].rstrip("\r").split("\t") if lines else []
    if tuple(header[:2]) != HEADER:
        raise DatasetError(
            f"{path}:1: the header is {lines[0][:80]!r}; an exclusion file starts with query-id<TAB>corpus-id"
        )
    pairs: dict[str, list[tuple[str, str]]] = {}
    problems = []
    for number, line in enumerate(lines[1:], 2):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 2 or not fields[0].strip() or not fields[1].strip():
            problems.append(f"{path}:{number}: not a query-id<TAB>corpus-id pair; fix the line")
            continue
        pairs.setdefault(fields[0].strip(), []).append((fields[1].strip(), f"{path}:{number}"))
    if problems:
        raise DatasetError(problems[:MAX_PROBLEMS])
    return pairs


def with_exclusions(dataset: Dataset, path: Path | None, self_ids: bool) -> Dataset:
    """``dataset`` with each question's excluded units (the file's, its questions file's,
    its own id with ``self_ids``) and no label on them; ``notes`` counts the labels removed."""
    units = {s.id for s in dataset.sections}
    given = read_excluded(path) if path is not None else {}
    ids = {q.id for q in dataset.questions}
    problems = [f"{where}: question {qid!r} is not among the dataset's questions" for qid, pairs in given.items()
                if qid not in ids for _, where in pairs[:1]]
    problems += [f"{where}: unit {uid!r} is not in the collection" for pairs in given.values()
                 for uid, where in pairs if uid not in units]
    problems += [f"question {q.id!r}: excluded unit {uid!r} is not in the collection" for q in dataset.questions
                 for uid in q.excluded if uid not in units]
    if problems:
        raise DatasetError(problems[:MAX_PROBLEMS])
    questions, removed = [], 0
    for q in dataset.questions:
        excluded = dict.fromkeys([*q.excluded, *(uid for uid, _ in given.get(q.id, [])),
                                  *([q.id] if self_ids and q.id in units else [])])
        if not excluded:
            questions.append(q)
            continue
        relevant = {u: g for u, g in q.relevant.items() if u not in excluded}
        removed += len(q.relevant) - len(relevant) + sum(u in excluded for u in q.nonrelevant)
        if q.relevant and not relevant and not q.evidence:
            problems.append(f"question {q.id!r}: every relevant unit is excluded, so nothing is left to score; "
                            "exclude fewer of its units, or leave the question out")
        questions.append(replace(q, relevant=relevant, excluded=tuple(excluded),
                                 nonrelevant=tuple(u for u in q.nonrelevant if u not in excluded)))
    if problems:
        raise DatasetError(problems[:MAX_PROBLEMS])
    notes = {**dataset.notes, "excluded_labels": removed} if removed else dataset.notes
    return replace(dataset, questions=questions, notes=notes)


def exclusion_counts(questions: list[Question]) -> dict[str, int]:
    """Questions with excluded units, and the units excluded in all."""
    return {"questions": sum(bool(q.excluded) for q in questions), "units": sum(len(q.excluded) for q in questions)}
