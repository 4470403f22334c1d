"""The support pool of stored runs: every (question, nugget, unit) with the unit in the top
``depth`` of any run given, for a judge to say whether the unit supports the nugget
(``receval pool --nuggets``, then ``receval judge judge=llm``: :mod:`receval.judge.support`).

A pair is pooled once, with how many runs retrieved the unit and its best rank, in the
runs' question order, then best rank, unit id and the nugget's order. Only questions
whose runs store nuggets (``dataset.nuggets``) are pooled; nothing is written into the runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from receval.core.errors import RecevalError
from receval.results.identity import mixed_datasets
from receval.results.stored import Run


@dataclass(frozen=True)
class SupportPair:
    """One support line: a nugget of a question and a unit the runs retrieved for it."""

    question_id: str
    question: str
    id: str
    nugget: str
    nugget_text: str
    importance: str
    n_runs: int
    best_rank: int

    def to_dict(self, text: str | None) -> dict:
        return {"question_id": self.question_id, "question": self.question, "id": self.id, "text": text,
                "nugget": self.nugget, "nugget_text": self.nugget_text, "importance": self.importance,
                "n_runs": self.n_runs, "best_rank": self.best_rank, "role": "support"}


def support_pool(runs: list[Run], depth: int) -> list[SupportPair]:
    """Every (question, nugget, unit in a run's top ``depth``), ordered as the module says."""
    if depth < 1:
        raise RecevalError(f"--depth {depth}: give the number of top units pooled per run, >= 1 (e.g. 10)")
    if mixed := mixed_datasets(runs):  # the same question ids would pool two datasets' questions as one
        raise RecevalError(f"{mixed}; pool the runs of one dataset at a time")
    needed = ("question_id", "question", "retrieved", "nuggets", "nugget_texts", "nugget_importance")
    texts: dict[str, str] = {}
    nuggets: dict[str, list[tuple[str, str, str]]] = {}
    seen: dict[tuple[str, str], list[int]] = {}
    for run in runs:
        if not set(needed) <= set(run.table.column_names):
            continue
        columns = run.table.select(list(needed)).to_pydict()
        for qid, question, retrieved, ids, said, importance in zip(*columns.values()):
            if not ids:
                continue
            texts.setdefault(qid, question or "")
            nuggets.setdefault(qid, list(zip(ids, said or [""] * len(ids), importance or ["okay"] * len(ids))))
            for rank, uid in enumerate((retrieved or [])[:depth], 1):
                entry = seen.setdefault((qid, uid), [0, rank])
                entry[0] += 1
                entry[1] = min(entry[1], rank)
    if not nuggets:
        raise RecevalError("--nuggets: no run given stores nuggets; run with dataset.nuggets=FILE first")
    order = {qid: i for i, qid in enumerate(texts)}
    units = sorted(seen.items(), key=lambda item: (order[item[0][0]], item[1][1], item[0][1]))
    return [SupportPair(qid, texts[qid], uid, nid, said, importance, n, rank)
            for (qid, uid), (n, rank) in units for nid, said, importance in nuggets[qid]]
