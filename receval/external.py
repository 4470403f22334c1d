"""An external system's TREC run, scored by receval's own measures beside stored runs.

``python -m receval.report RUN_DIR other_system.trec --qrels qrels.tsv`` reads the
run file (:func:`receval.trec.read_run`, trec_eval's order), keeps each question's
first ``depth`` documents (the stored runs' depth, so MRR@depth means the same), and
scores it with the same per-question code a receval run uses (:func:`receval.evaluate.judge`,
:mod:`receval.metrics`), at the cutoffs the stored runs hold. The qrels may be a
TREC qrels file (``qid 0 docid rel``) or a BEIR ``qrels/<split>.tsv`` (header
``query-id corpus-id score``); as in receval, a grade >= 1 is relevant. Questions
with a relevant document are scored (one the run never answers scores 0); those the
run answers without any are kept unscored, like receval's unanswerable questions, so
the external run pairs with a stored one question for question.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from receval import trec
from receval.datasets import UNANSWERABLE, Question
from receval.errors import RecevalError
from receval.evaluate import judge
from receval.metrics import first_relevant_rank, parse_measure
from receval.store import OVERLAP, SCHEMA_VERSION, results_schema


def read_labels(path: str | Path) -> dict[str, dict[str, int]]:
    """Qrels as question -> document -> grade, from TREC or BEIR tsv layout."""
    path = Path(path)
    if not path.is_file():
        raise RecevalError(f"--qrels {path}: file not found; give TREC qrels or a BEIR qrels/<split>.tsv")
    with path.open(encoding="utf-8", errors="replace") as handle:
        first = handle.readline()
    if first.split()[:1] != ["query-id"]:
        return trec.read_qrels(path)
    qrels: dict[str, dict[str, int]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as error:
        raise RecevalError(f"{path}: not UTF-8 text ({error.reason}); save it as UTF-8") from None
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        parts = line.split("\t")
        try:
            qid, doc, grade = parts[0], parts[1], int(parts[2])
        except (IndexError, ValueError):
            raise RecevalError(
                f"{path}:{number}: expected 'query-id<TAB>corpus-id<TAB>score' with an integer score"
            ) from None
        qrels.setdefault(qid, {})[doc] = grade
    return qrels


def external_table(run_file: str | Path, qrels_file: str | Path, depth: int, measures: list[str]) -> pa.Table:
    """The per-question table of an external run, in receval's results schema."""
    ranking = trec.read_run(run_file)
    labels = read_labels(qrels_file)
    relevant = {q: {d: g for d, g in judged.items() if g >= 1} for q, judged in labels.items()}
    if not any(relevant.values()):
        raise RecevalError(f"{qrels_file}: no question has a relevant document (grade >= 1)")
    ids = [q for q in relevant if relevant[q]] + [q for q in ranking if not relevant.get(q)]
    questions = [
        Question(q, "", "external" if relevant.get(q) else UNANSWERABLE, "all", relevant.get(q, {}))
        for q in ids
    ]
    answerable = np.array([q.answerable for q in questions])
    docs = sorted({d for q in questions for d in q.relevant} | {d for r in ranking.values() for d, _ in r})
    index = {d: i for i, d in enumerate(docs)}
    retrieved = [ranking.get(q.id, [])[:depth] for q in questions]
    idx = np.full((len(questions), depth), -1, dtype=np.int64)
    for row, ranked in enumerate(retrieved):
        idx[row, : len(ranked)] = [index[d] for d, _ in ranked]
    judged = judge(idx, questions, index)
    rank = first_relevant_rank(judged)
    columns = {
        "question_id": [q.id for q in questions],
        "kind": [q.kind for q in questions],
        "split": [q.split for q in questions],
        "question": [None] * len(questions),
        "relevant": [list(q.relevant) for q in questions],
        "grades": [list(q.relevant.values()) for q in questions],
        "retrieved": [[d for d, _ in ranked] for ranked in retrieved],
        "scores": [[s for _, s in ranked] for ranked in retrieved],
        "first_relevant_rank": [int(r) if r > 0 else None for r in rank],
    }
    for name in measures:
        values = parse_measure(name)(judged)
        columns[name] = [float(v) if ok else None for v, ok in zip(values, answerable)]
    for name in OVERLAP:
        columns[name] = [None] * len(questions)
    columns["latency_ms"] = [None] * len(questions)
    metadata = {"schema_version": SCHEMA_VERSION, "external_run": str(run_file)}
    return pa.table(columns, schema=results_schema(measures, metadata))
