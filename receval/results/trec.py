"""TREC run and qrels files: the one place that reads and writes the format.

Run file, one retrieved document per line, whitespace-separated::

    qid Q0 docid rank score tag

Qrels file, one judgement per line::

    qid 0 docid relevance

Order. trec_eval ignores the rank column: it sorts each query's documents by
score, highest first, and breaks ties by docid *descending* (string compare) --
and it holds scores as single-precision floats (``float sim`` in its
``TEXT_RESULTS``; pytrec_eval is the same code), so two scores that differ only
beyond float32 precision are a tie to it. receval breaks ties by id ascending
(:mod:`receval.run.ranking`) and stores float32 scores. So that any tool applying
trec_eval's sort sees a ranking in exactly the order given, :func:`write_run`
writes scores that are strictly decreasing *as float32* down each ranking
(:func:`strictly_decreasing`): a score whose float32 value is below the one
written above it is written as that float32 value (for receval's stored scores:
unchanged); a tie (or a rise) becomes the next float32 below the one above
(``np.nextafter``), so n tied scores move down by at most n float32 units in the
last place (about 1e-7 relative each). Each score is printed with
``repr(float)`` of that float32 value, digits enough to read back as the same
double, which converts to the same float32 exactly: trec_eval, pytrec_eval and
ranx (which sorts doubles with an unstable argsort) all see strictly decreasing
scores. Ranks are written 1, 2, 3, ... in the given order.

Reading. :func:`read_run` returns each query's documents in trec_eval's order
(float32 score descending, then docid descending), whatever the file's line or
rank order, with the scores as trec_eval holds them (float32 values, as Python
floats), so they never rise down a list; :func:`read_qrels` returns query ->
docid -> relevance. Bad lines are :class:`~receval.core.errors.RecevalError` naming
``file:line`` (all of them, up to :data:`MAX_PROBLEMS`).

Ids may not be empty or contain whitespace (the format splits on it); a writer
refuses them with an error naming the id.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from receval.core.errors import RecevalError
from receval.core.io import atomic_write
from receval.scoring.questions import grade_problem

MAX_PROBLEMS = 50
Ranking = Sequence[tuple[str, float]]


def _raise(problems: list[str]) -> None:
    if problems:
        shown = problems[:MAX_PROBLEMS]
        if len(problems) > MAX_PROBLEMS:
            shown.append(f"... and {len(problems) - MAX_PROBLEMS} more problems")
        raise RecevalError(shown)


# --------------------------------------------------------------------------- scores


def single(score: float) -> float:
    """A score as trec_eval holds it: rounded to float32, returned as a Python float."""
    with np.errstate(over="ignore"):
        return float(np.float32(score))


def strictly_decreasing(scores: Iterable[float]) -> list[float]:
    """Scores for a ranking, best first, that keep its order under trec_eval's sort.

    Each score is rounded to float32 and kept when it is below the previous
    written score, otherwise it becomes the next float32 below that one. Scores
    that are not finite in float32 are an error.
    """
    values = scores if isinstance(scores, (list, tuple, np.ndarray)) else list(scores)
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = np.asarray(values, np.float32).reshape(-1)
    if np.isfinite(rounded).all() and (rounded[1:] < rounded[:-1]).all():
        return rounded.astype(np.float64).tolist()  # already strictly decreasing: kept as they are
    out: list[float] = []
    previous = np.float32(np.inf)
    floor = np.float32(-np.inf)
    for score, single_score in zip(values, rounded):
        with np.errstate(over="ignore"):
            value = np.nextafter(previous, floor) if single_score >= previous else single_score
        if not (np.isfinite(single_score) and np.isfinite(value)):
            raise RecevalError(
                f"score {float(score)!r} is not a finite single-precision number; "
                "a TREC run needs finite scores within about +-3.4e38"
            )
        out.append(float(value))
        previous = value
    return out


def trec_order(ranking: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    """A ranking sorted as trec_eval sorts it: float32 score descending, then docid
    descending; scores returned as float32 values."""
    return sorted(((doc, single(score)) for doc, score in ranking), key=lambda p: (p[1], p[0]), reverse=True)


# --------------------------------------------------------------------------- writing


def _check_id(value: str, what: str) -> list[str]:
    if not isinstance(value, str) or not value or value != "".join(value.split()):
        return [f"{what} {value!r} cannot be written to a TREC file: ids must be non-empty and hold no whitespace"]
    return []


def format_run(run: Mapping[str, Ranking], tag: str) -> str:
    """The text of a run file; each ranking best first (see :func:`strictly_decreasing`)."""
    problems = _check_id(tag, "run tag")
    lines: list[str] = []
    for qid, ranking in run.items():
        problems += _check_id(qid, "question id")
        seen: set[str] = set()
        for doc_id, _ in ranking:
            problems += _check_id(doc_id, f"document id (question {qid!r})")
            if doc_id in seen:
                problems.append(f"question {qid!r} ranks document {doc_id!r} twice; trec_eval refuses that")
            seen.add(doc_id)
        if problems:
            continue
        try:
            scores = strictly_decreasing(score for _, score in ranking)
        except RecevalError as error:  # a NaN or infinite score: named with its question
            problems += [f"question {qid!r}: {problem}" for problem in error.problems]
            continue
        lines.extend(
            f"{qid} Q0 {doc_id} {rank} {score!r} {tag}"
            for rank, ((doc_id, _), score) in enumerate(zip(ranking, scores), start=1)
        )
    _raise(problems)
    return "".join(line + "\n" for line in lines)


def format_qrels(qrels: Mapping[str, Mapping[str, int]]) -> str:
    """The text of a qrels file: ``qid 0 docid relevance`` per judgement."""
    problems: list[str] = []
    lines: list[str] = []
    for qid, judged in qrels.items():
        problems += _check_id(qid, "question id")
        for doc_id, grade in judged.items():
            problems += _check_id(doc_id, f"document id (question {qid!r})")
            if isinstance(grade, bool) or not isinstance(grade, (int, np.integer)):
                problems.append(f"question {qid!r}: relevance of {doc_id!r} must be an integer, got {grade!r}")
                continue
            lines.append(f"{qid} 0 {doc_id} {int(grade)}")
    _raise(problems)
    return "".join(line + "\n" for line in lines)


def write_text(path: str | Path, text: str) -> Path:
    """``text`` written to ``path`` atomically (a run or qrels file already formatted)."""
    path = Path(path)
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return path


def write_run(path: str | Path, run: Mapping[str, Ranking], tag: str = "receval") -> Path:
    """Write ``run`` (question id -> [(docid, score), ...] best first) atomically."""
    return write_text(path, format_run(run, tag))


def write_qrels(path: str | Path, qrels: Mapping[str, Mapping[str, int]]) -> Path:
    """Write ``qrels`` (question id -> docid -> relevance) atomically."""
    return write_text(path, format_qrels(qrels))


# --------------------------------------------------------------------------- reading


def _lines(path: str | Path, what: str):
    """(``file:line``, whitespace-split columns) of each non-blank line."""
    path = Path(path)
    if not path.is_file():
        raise RecevalError(f"{path}: {what} file not found")
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            at = f"{path}:{number}"
            try:
                columns = raw.decode("utf-8").split()
            except UnicodeDecodeError as error:
                yield at, None, f"{at}: not UTF-8 text ({error.reason})"
                continue
            if columns:
                yield at, columns, None


def _number(text: str, kind: type) -> int | float | None:
    try:
        value = kind(text)
    except ValueError:
        return None
    return value if kind is int or math.isfinite(value) else None


def read_run(path: str | Path) -> dict[str, list[tuple[str, float]]]:
    """A TREC run file -> question id -> [(docid, score), ...] in trec_eval's order.

    Lines are ``qid Q0 docid rank score tag``; the rank must be an integer and the
    score a finite number; a document may appear once per question.
    """
    problems: list[str] = []
    run: dict[str, dict[str, float]] = {}
    first: dict[tuple[str, str], str] = {}
    for at, columns, problem in _lines(path, "run"):
        if problem:
            problems.append(problem)
            continue
        if len(columns) != 6:
            problems.append(
                f"{at}: expected 6 columns 'qid Q0 docid rank score tag', got {len(columns)}"
            )
            continue
        qid, _, doc_id, rank, score, _ = columns
        value = _number(score, float)
        if _number(rank, int) is None or value is None:
            problems.append(f"{at}: rank must be an integer and score a finite number, got {rank!r} and {score!r}")
            continue
        if (qid, doc_id) in first:
            problems.append(f"{at}: question {qid!r} lists document {doc_id!r} again (first at {first[qid, doc_id]})")
            continue
        first[qid, doc_id] = at
        run.setdefault(qid, {})[doc_id] = value
    if not run and not problems:
        problems.append(f"{path}: holds no run lines 'qid Q0 docid rank score tag'")
    _raise(problems)
    return {qid: trec_order(ranking.items()) for qid, ranking in run.items()}


def run_tags(path: str | Path) -> list[str]:
    """The distinct tags (sixth column) of a run file, in order of first appearance."""
    tags: dict[str, None] = {}
    for _, columns, _ in _lines(path, "run"):
        if columns and len(columns) == 6:
            tags.setdefault(columns[5])
    return list(tags)


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """A TREC qrels file -> question id -> docid -> relevance (an integer; <= 0 not relevant).

    Lines are ``qid iteration docid relevance``. The same pair judged twice with
    different relevance is an error; repeated with the same relevance, it is kept once.
    """
    problems: list[str] = []
    qrels: dict[str, dict[str, int]] = {}
    first: dict[tuple[str, str], str] = {}
    for at, columns, problem in _lines(path, "qrels"):
        if problem:
            problems.append(problem)
            continue
        if len(columns) != 4:
            problems.append(f"{at}: expected 4 columns 'qid 0 docid relevance', got {len(columns)}")
            continue
        qid, _, doc_id, relevance = columns
        grade = _number(relevance, int)
        if grade is None:
            problems.append(f"{at}: relevance must be an integer, got {relevance!r}")
            continue
        if too_big := grade_problem(grade, at, doc_id):
            problems.append(too_big)
            continue
        judged = qrels.setdefault(qid, {})
        if doc_id in judged and judged[doc_id] != grade:
            problems.append(
                f"{at}: question {qid!r} judges document {doc_id!r} {grade}, but "
                f"{first[qid, doc_id]} judges it {judged[doc_id]}; keep one judgement"
            )
            continue
        first.setdefault((qid, doc_id), at)
        judged[doc_id] = grade
    if not qrels and not problems:
        problems.append(f"{path}: holds no judgements 'qid 0 docid relevance'")
    _raise(problems)
    return qrels
