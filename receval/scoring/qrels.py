"""A BEIR qrels file (``qrels/<split>.tsv``: ``query-id corpus-id score``) read into
judgements: the one reader, for a BEIR dataset (:mod:`receval.datasets.beir`) and for
qrels given to ``report`` (:mod:`receval.results.external`). Every bad line and every
pair judged twice with different scores is named, up to :data:`MAX_PROBLEMS`."""

from __future__ import annotations

from pathlib import Path

from receval.core.errors import DatasetError
from receval.scoring.questions import grade_problem

MAX_PROBLEMS = 50


def raise_problems(problems: list[str]) -> None:
    """A DatasetError naming up to :data:`MAX_PROBLEMS` problems at once (none: nothing)."""
    if problems:
        shown = problems[:MAX_PROBLEMS]
        if len(problems) > MAX_PROBLEMS:
            shown.append(f"... and {len(problems) - MAX_PROBLEMS} more problems")
        raise DatasetError(shown)


def read_judgements(path: Path) -> dict[str, dict[str, tuple[int, int]]]:
    """qrels/<split>.tsv -> query id -> document id -> (score, line), in file order.

    The first line is skipped when it is the header (its score column is not an
    integer). Blank lines are skipped; a pair judged twice with the same score is
    kept once, with different scores it is an error.
    """
    problems: list[str] = []
    qrels: dict[str, dict[str, tuple[int, int]]] = {}
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            at = f"{path}:{number}"
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as error:
                problems.append(f"{at}: not UTF-8 text ({error.reason}); save the file as UTF-8")
                continue
            if not line.strip():
                continue
            columns = [column.strip() for column in line.split("\t")]
            score = _integer(columns[2]) if len(columns) == 3 else None
            if number == 1 and len(columns) == 3 and score is None:
                continue  # the header: query-id corpus-id score
            if score is None or not columns[0] or not columns[1]:
                problems.append(
                    f"{at}: expected 3 tab-separated columns 'query-id corpus-id score' with an "
                    f"integer score, got {line[:80]!r}"
                )
                continue
            qid, doc_id = columns[0], columns[1]
            if too_big := grade_problem(score, at, doc_id):
                problems.append(too_big)
                continue
            judged = qrels.setdefault(qid, {})
            if doc_id in judged:
                old_score, old_line = judged[doc_id]
                if old_score != score:
                    problems.append(
                        f"{at}: query {qid!r} judges document {doc_id!r} {score}, but line "
                        f"{old_line} judges it {old_score}; keep one judgement"
                    )
                continue
            judged[doc_id] = (score, number)
    raise_problems(problems)
    return qrels


def _integer(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None
