"""Query-side stages: what the first stage searches with, instead of the question alone.

The ``transform`` group is a component group like ``retriever`` and ``rerank`` (a module
registering its kind with :func:`receval.components.component`, a YAML file in
``conf/transform/``, a typed schema deriving from
:class:`receval.components.TransformConfig`):

- ``none`` (default): ``transform: null``, the question itself;
- ``rm3`` (:mod:`.rm3`): pseudo-relevance feedback for the lexical first stages;
- ``hyde`` (:mod:`.hyde`): an LLM writes a passage answering the question; the first
  stage searches with it (or with it and the question);
- ``multi_query`` (:mod:`.multi_query`): an LLM writes rewrites; each is searched and
  the lists are fused with the run's fusion method.

:func:`apply` wraps a run's first stage (before any re-ranker) in the transform's
:class:`Transformed` stage. Its work is timed as the stage ``transform``
(``latency_ms.transform``), and an LLM transform's requests and tokens per question land
in ``requests.transform``, ``input_tokens.transform`` and ``output_tokens.transform``, so
``+cost.transform.per_1m_input_tokens=...`` prices it like a re-ranker
(:mod:`receval.cost`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from receval import components

TRANSFORM = "transform"  # the stage's name in latency, count and cost columns


def apply(cfg, first, context):
    """``first`` searched through the run's ``transform`` node (``first`` itself when null)."""
    node = cfg.get(TRANSFORM)
    if node is None:
        return first
    transform = components.build(TRANSFORM, node, context, TRANSFORM)
    return transform.wrap(first, run_fusion(cfg, context))


def run_fusion(cfg, context) -> dict:
    """The run's fusion method as :func:`receval.retrievers.fusion.fuse` takes it: the fused
    first stage's ``retriever.fusion``, else reciprocal rank fusion with its defaults."""
    retriever = cfg.retriever
    node = retriever.get("fusion") if hasattr(retriever, "get") else None
    key = "retriever.fusion" if node is not None else "retriever/fusion"
    return components.build("retriever/fusion", node if node is not None else {"kind": "rrf"}, context, key)


def label(node) -> str:
    """The transform's short name in a run's label (``rm3``, ``hyde:qwen2.5``)."""
    return components.label(TRANSFORM, node)


class Transformed:
    """A first stage searched with what a transform makes of each question.

    Subclasses implement ``_score(questions)`` -> (B, D) block and may implement
    ``_rank(questions, depth)``; this class times them into ``stage_seconds``: the
    transform's own work as ``transform``, the first stage's as it names it."""

    stages: tuple[str, ...] = (TRANSFORM,)  # stage columns of its own (cost.stage_names)

    def __init__(self, first, transform):
        self.first, self.transform = first, transform
        self.name, self.floor = first.name, first.floor
        self.tie_rank = np.zeros(0, dtype=np.int64)
        self.stage_seconds: dict[str, float] = {}
        self.question_counts: dict[str, np.ndarray] = {}
        self._spent: dict[str, float] = {}

    def fit(self, texts: list[str], tie_rank: np.ndarray) -> None:
        self.tie_rank = np.asarray(tie_rank)
        self.first.fit(texts, tie_rank)
        fit = getattr(self.transform, "fit", None)
        if callable(fit):
            fit(texts, tie_rank)

    def own(self, stage: str, work: Callable):
        """Run ``work()`` and add its wall time to ``stage``."""
        began = time.perf_counter()
        out = work()
        self._spent[stage] = self._spent.get(stage, 0.0) + time.perf_counter() - began
        return out

    def inner(self, work: Callable):
        """Run the first stage's ``work()``; its time is added to its own stages."""
        began = time.perf_counter()
        out = work()
        elapsed = time.perf_counter() - began
        stages = dict(getattr(self.first, "stage_seconds", None) or {}) or {self.first.name: elapsed}
        for stage, seconds in stages.items():
            self._spent[stage] = self._spent.get(stage, 0.0) + seconds
        return out

    def _timed(self, work: Callable):
        self._spent = {TRANSFORM: 0.0}
        out = work()
        self.stage_seconds = dict(self._spent)
        return out

    def score(self, questions: list[str]) -> np.ndarray:
        return self._timed(lambda: self._score(questions))

    def rank(self, questions: list[str], depth: int) -> tuple[np.ndarray, np.ndarray]:
        return self._timed(lambda: self._rank(questions, depth))

    def _rank(self, questions: list[str], depth: int) -> tuple[np.ndarray, np.ndarray]:
        from receval.ranking import select_top

        block = self._score(questions)
        # selection is timed with the first stage, as search() would time it without a transform
        return self.own(self.first.name, lambda: select_top(block, depth, self.tie_rank, floor=self.floor))

    def _score(self, questions: list[str]) -> np.ndarray:
        raise NotImplementedError

    def facts(self) -> dict:
        """The transform's facts, under ``transform`` in run.json (:func:`receval.retrievers.facts`
        adds the first stage's)."""
        own = getattr(self.transform, "facts", None)
        return {TRANSFORM: own()} if callable(own) else {}
