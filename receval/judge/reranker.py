"""``judge=reranker``: a re-ranker's scores, mapped to grades by a calibration sample.

Any configured re-ranker (``judge.reranker``: a node of the ``rerank`` group:
``cross_encoder``, ``dense``, ``http``, ``llm``) scores each (question, passage) pair; a
remote one asks through its own client and so through the one cached-call layer
(:mod:`receval.clients.calls`), under ``judge.cache_dir``. A non-prompt judge of this
kind is an accepted judge-run type since TREC 2025.

Scores are no grades: the pool's calibration pairs (labelled units, judged blind by
the other kinds) give the map here, with as many pairs the pool never makes
(:func:`receval.judge.probe.borrowed`: a passage of another question) taken as grade 0,
since stored labels are relevant ones. For each grade g above 0 that the calibration
holds, the threshold t_g is the score cut that best separates pairs known below g from
those at g or above (balanced accuracy: both sides weigh alike whatever their counts),
taken at the midpoint between neighbouring scores and made non-decreasing in g; a pair
scoring at or above t_g gets grade g or more. A calibration pair is graded with the
thresholds fitted on the other folds (five, seeded), so its agreement is measured out of
sample; the holes with the thresholds fitted on every calibration pair.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from receval.run import components
from receval.run.components import Context, JudgeConfig, component
from receval.core.errors import ConfigError, RecevalError
from receval.core.ranges import SEED
from receval.judge.probe import borrowed
from receval.schema import range_

FOLDS = 5


@dataclass
class RerankerJudgeConfig(JudgeConfig):
    kind: str = "reranker"
    reranker: Any = None  # required: a rerank node, e.g. {kind: cross_encoder, model: /models/minilm}
    negatives: int = field(default=-1, metadata=range_(-1, 100_000))  # grade-0 pairs borrowed; -1: one per calibration pair
    seed: int = field(default=0, metadata=range_(*SEED))  # the negatives and the calibration folds
    cache_dir: Optional[str] = None  # the answer cache's root; null: RECEVAL_CACHE_DIR or .cache/receval

    def problems(self) -> list[str]:
        if self.reranker is None:
            return ["reranker is required: a rerank node, e.g. judge.reranker='{kind: http, base_url: "
                    "\"http://localhost:8080\", model: bge-reranker}' or '{kind: cross_encoder, model: /models/minilm}'"]
        return []

    @staticmethod
    def parts(node, key: str) -> list[tuple[str, Any, str]]:
        return [] if node.reranker is None else [("rerank", node.reranker, f"{key}.reranker")]

    @staticmethod
    def describe(node) -> str:
        return f"reranker:{components.label('rerank', node.reranker)}" if node.reranker is not None else "reranker"


def thresholds(scores: np.ndarray, grades: np.ndarray) -> dict[int, float]:
    """Grade -> the score at or above which a pair gets at least that grade (module
    docstring), for each grade > 0 the calibration holds on both sides of."""
    scores, grades = np.asarray(scores, dtype=np.float64), np.asarray(grades, dtype=np.int64)
    order = np.argsort(scores, kind="stable")
    s, g = scores[order], grades[order]
    cuts = np.concatenate([[s[0] - 1.0], (s[:-1] + s[1:]) / 2.0, [s[-1] + 1.0]])  # cut j: pairs j.. are above
    out: dict[int, float] = {}
    floor = -np.inf
    for grade in sorted(set(grades.tolist()) - {0}):
        high = g >= grade
        if high.all() or not high.any():
            continue
        above_high = np.concatenate([np.cumsum(high[::-1])[::-1], [0]])  # high pairs at or above cut j
        below_low = np.concatenate([[0], np.cumsum(~high)])  # low pairs below cut j
        balanced = above_high / high.sum() + below_low / (~high).sum()
        distinct = np.concatenate([[True], s[1:] != s[:-1], [True]])  # a cut between equal scores is no cut
        best = cuts[int(np.argmax(np.where(distinct, balanced, -np.inf)))]
        floor = max(floor, best)
        out[grade] = float(floor)
    return out


def grade_of(score: float, cuts: dict[int, float]) -> int:
    return max([g for g, t in cuts.items() if score >= t], default=0)


class RerankerJudge:
    def __init__(self, node, scorer):
        self.node, self.scorer = node, scorer
        self.name = f"reranker:{components.label('rerank', node.reranker)}"
        self.usage: dict[str, float] = {"requests": 0.0, "input_tokens": 0.0, "output_tokens": 0.0}

    def scores(self, records: list[dict]) -> np.ndarray:
        """The re-ranker's score of each record's (question, text); one row per question."""
        texts = list(dict.fromkeys(r.get("text") or "" for r in records))
        where = {t: i for i, t in enumerate(texts)}
        questions = list(dict.fromkeys(r.get("question") or "" for r in records))
        rows = {q: [] for q in questions}
        for i, r in enumerate(records):
            rows[r.get("question") or ""].append(i)
        width = max((len(v) for v in rows.values()), default=1)
        idx = np.full((len(questions), width), -1, dtype=np.int64)
        for row, q in enumerate(questions):
            idx[row, : len(rows[q])] = [where[records[i].get("text") or ""] for i in rows[q]]
        self.scorer.fit(texts, np.arange(len(texts)))
        rescored = self.scorer.rescore(questions, idx)
        for key, values in rescored.usage.items():
            if key in self.usage:
                self.usage[key] += float(np.nansum(values))
        out = np.full(len(records), np.nan)
        for row, q in enumerate(questions):
            out[rows[q]] = rescored.scores[row, : len(rows[q])]
        return out

    def judge(self, records: list[dict], references: dict[str, list[str]]) -> list[tuple[int | None, dict]]:
        calibration = [i for i, r in enumerate(records) if r.get("role") == "calibration"]
        if not calibration:
            raise RecevalError(f"receval.judge {self.name}: a re-ranker's scores become grades by the pool's calibration "
                               "pairs, and it has none: pool with --calibrate N (e.g. 100)")
        wanted = len(calibration) if int(self.node.negatives) < 0 else int(self.node.negatives)
        negatives = borrowed(records, wanted, int(self.node.seed))
        scored = self.scores(records + negatives)
        known = np.concatenate([[int(records[i]["known_grade"]) for i in calibration], np.zeros(len(negatives), int)])
        fitted = np.concatenate([scored[calibration], scored[len(records):]])
        if not np.isfinite(fitted).all():
            raise RecevalError(f"receval.judge {self.name}: the re-ranker left calibration pairs unscored")
        cuts = thresholds(fitted, known)
        folds = np.random.default_rng(int(self.node.seed)).permutation(len(fitted)) % FOLDS
        out: list[tuple[int | None, dict]] = []
        held = {}
        for k, i in enumerate(calibration):
            mask = folds != folds[k]
            held[i] = grade_of(float(scored[i]), thresholds(fitted[mask], known[mask]))
        provenance = {"reranker": components.label("rerank", self.node.reranker),
                      "thresholds": {str(g): t for g, t in cuts.items()}, "negatives": len(negatives)}
        for i, score in enumerate(scored[: len(records)]):
            if not np.isfinite(score):
                out.append((None, {}))
                continue
            grade = held.get(i, grade_of(float(score), cuts))
            out.append((grade, {"score": round(float(score), 6), **provenance}))
        return out


@component("judge", "reranker", RerankerJudgeConfig)
def build_reranker_judge(node, context: Context) -> RerankerJudge:
    root = node.cache_dir or os.environ.get("RECEVAL_CACHE_DIR", ".cache/receval")
    try:
        scorer = components.build("rerank", node.reranker, Context(cache_dir=str(root)), "judge.reranker")
    except ConfigError as error:
        raise ConfigError(error.problems) from None
    return RerankerJudge(node, scorer)
