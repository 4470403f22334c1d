"""The judging pool of stored runs: every (question, unit) in the top ``depth`` of any run
given that carries no label, with how many runs retrieved it and its best rank (the
TREC pooling of a sweep). A seeded sample of already-labelled pairs can join it
(``calibrate``), marked with their known grade, so a judge's agreement with the known
labels can be measured on pairs it judges blind. Each question's labelled units
(grade >= 1) follow as ``reference`` lines, never judged: the one-shot judge compares
a hole with them. Nothing is written into the runs. Runs of different datasets (their
fingerprints differ, or one question id holds two texts) are refused: their question
ids would pool two datasets' questions as one.

Roles: ``hole`` (to judge), ``calibration`` (judged blind, compared with
``known_grade``), ``reference`` (a known relevant unit, with ``known_grade``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from receval.core.errors import RecevalError
from receval.core.secrets import cut
from receval.results.identity import mixed_datasets
from receval.results.stored import Run


@dataclass(frozen=True)
class PoolPair:
    """One pool line. ``known``: the stored grade of a calibration or reference pair."""

    question_id: str
    question: str
    id: str
    n_runs: int
    best_rank: int | None  # 1-based; None: no run retrieved it at this depth
    known: int | None = None
    role: str = "hole"

    def to_dict(self, text: str | None) -> dict:
        out = {"question_id": self.question_id, "question": self.question, "id": self.id, "text": text,
               "n_runs": self.n_runs, "best_rank": self.best_rank, "role": self.role}
        if self.known is not None:
            out["known_grade"] = self.known
        return out


def pool(runs: list[Run], depth: int, calibrate: int = 0, seed: int = 0) -> list[PoolPair]:
    """Holes first (question in the runs' order, then best rank, then id), then the
    calibration sample (``calibrate`` labelled pairs drawn without replacement, seeded),
    then the references."""
    if depth < 1:
        raise RecevalError(f"--depth {depth}: give the number of top units pooled per run, >= 1 (e.g. 10)")
    if calibrate < 0:
        raise RecevalError(f"--calibrate {calibrate}: give a number of labelled pairs >= 0")
    if mixed := mixed_datasets(runs):  # the same question ids would pool two datasets' questions as one
        raise RecevalError(f"{mixed}; pool the runs of one dataset at a time")
    texts: dict[str, str] = {}
    asked: dict[str, str] = {}  # question id -> the run that gave its text
    labels: dict[str, dict[str, int]] = {}
    seen: dict[tuple[str, str], list[int]] = {}  # (question, unit) -> [runs, best rank]
    for run in runs:
        columns = run.table.select(["question_id", "question", "relevant", "grades", "retrieved"]).to_pydict()
        for qid, text, relevant, grades, retrieved in zip(*columns.values()):
            if text and texts.get(qid) and texts[qid] != text:
                raise RecevalError(
                    f"question {cut(repr(qid))} is {cut(repr(texts[qid]), 60)} in {asked[qid]} and "
                    f"{cut(repr(text), 60)} in {run.run_dir}: these runs asked different questions under one id "
                    "(another dataset, or another version of it); pool the runs of one dataset at a time"
                )
            if text and not texts.get(qid):
                texts[qid], asked[qid] = text, str(run.run_dir)
            texts.setdefault(qid, "")
            known = labels.setdefault(qid, {})
            known.update(zip(relevant or [], grades or []))
            for rank, uid in enumerate((retrieved or [])[:depth], 1):
                entry = seen.setdefault((qid, uid), [0, rank])
                entry[0] += 1
                entry[1] = min(entry[1], rank)
    order = {qid: i for i, qid in enumerate(texts)}
    holes = [
        PoolPair(qid, texts[qid], uid, n, rank)
        for (qid, uid), (n, rank) in seen.items()
        if uid not in labels.get(qid, {})
    ]
    holes.sort(key=lambda p: (order[p.question_id], p.best_rank, p.id))
    known = sorted((qid, uid, grade) for qid, units in labels.items() for uid, grade in units.items())

    def line(i: int, role: str) -> PoolPair:
        qid, uid, grade = known[i]
        n, rank = seen.get((qid, uid), (0, None))
        return PoolPair(qid, texts[qid], uid, n, rank, known=int(grade), role=role)

    sample = []
    if calibrate:
        if not known:
            raise RecevalError("--calibrate: the runs hold no labelled pair to sample")
        picked = np.random.default_rng(seed).choice(len(known), size=min(calibrate, len(known)), replace=False)
        sample = [line(i, "calibration") for i in sorted(picked)]
    return holes + sample + [line(i, "reference") for i in range(len(known))]
