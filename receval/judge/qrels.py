"""``judge=qrels``: labels someone already made, looked up for each pool pair.

``judge.path``: a TREC qrels file (``qid 0 docid grade``), a BEIR ``qrels/<split>.tsv``
or labels JSONL (``{"question_id", "id", "grade"}``, e.g. a person's labels from a
spreadsheet export). A pair the file does not grade is left unlabelled, or with
``judge.missing=zero`` labelled 0: the convention of an exhaustively judged collection
(and of TREC pools), where what the assessors saw and did not list is not relevant.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from typing import Optional

from receval.run.components import Context, JudgeConfig, component
from receval.results.judgments import read_any_labels


class Missing(StrEnum):
    skip = "skip"  # no label: the pair stays a hole
    zero = "zero"  # grade 0: not relevant


@dataclass
class QrelsJudgeConfig(JudgeConfig):
    kind: str = "qrels"
    path: Optional[str] = None  # required: TREC qrels, BEIR qrels TSV or labels JSONL
    missing: Missing = Missing.skip

    def problems(self) -> list[str]:
        if not self.path:
            return ["path is required: a TREC qrels file, BEIR qrels TSV or labels JSONL (judge.path=qrels.txt)"]
        if not Path(self.path).expanduser().is_file():
            return [f"path={self.path}: file not found"]
        return []


class QrelsJudge:
    def __init__(self, path: str, missing: Missing):
        self.path, self.missing = str(path), Missing(missing)
        self.labels = read_any_labels(self.path, "judge.path")
        self.name = f"qrels:{Path(self.path).name}"
        self.usage: dict[str, float] = {}

    def judge(self, records: list[dict], references: dict[str, list[str]]) -> list[tuple[int | None, dict]]:
        out = []
        for record in records:
            grade = self.labels.get(record["question_id"], {}).get(record["id"])
            if grade is None and self.missing == Missing.zero:
                out.append((0, {"source": self.path, "missing": "zero"}))
            else:
                out.append((grade, {"source": self.path}))
        return out


@component("judge", "qrels", QrelsJudgeConfig)
def build_qrels_judge(node, context: Context) -> QrelsJudge:
    return QrelsJudge(str(Path(str(node.path)).expanduser()), node.missing)
