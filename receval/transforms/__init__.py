"""Query-side stages: what the first stage searches with, instead of the question alone.

The ``transform`` group is a component group like ``retriever`` and ``rerank`` (a module
registering its kind with :func:`receval.run.components.component`, a YAML file in
``conf/transform/``, a typed schema deriving from
:class:`receval.run.components.TransformConfig`):

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
(:mod:`receval.measures.cost`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from receval.run import components
from receval.clients.calls import Replay, merged
from receval.run.ranking import select_top
from receval.retrievers.base import Block, Stage, StageOutput

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


class Spent:
    """What one batch cost, gathered while a transform searches it: wall seconds per stage
    (``transform``, the first stage's own names, ``fusion``), per-question counts
    (``requests.transform``...) and whether tokens were estimated. Made per call, so
    nothing of a batch stays on the (possibly shared) stage."""

    def __init__(self):
        self.seconds: dict[str, float] = {TRANSFORM: 0.0}
        self.counts: dict[str, np.ndarray] = {}
        self.estimated: frozenset[str] = frozenset()
        self.replays: dict[str, Replay] = {}
        self.first_calls: list | None = None  # the first stage's search calls, per text searched
        self.first_counts: dict[str, np.ndarray] = {}  # its per-text counts (requests.<name>)

    def replayed(self, stage: str, replay: Replay) -> None:
        """Answers not asked now (replayed from an earlier run's cache, or this run's own
        read again): ``stage`` reports their live time in place of the reading's
        (:class:`receval.clients.calls.Replay`), which is kept apart."""
        if replay:
            self.seconds[stage] = self.seconds.get(stage, 0.0) + replay.shift
            self.replays = merged(self.replays, {stage: replay})

    def own(self, stage: str, work: Callable):
        """Run ``work()`` and add its wall time to ``stage``."""
        began = time.perf_counter()
        out = work()
        self.seconds[stage] = self.seconds.get(stage, 0.0) + time.perf_counter() - began
        return out

    def inner(self, first: Stage, work: Callable):
        """Run the first stage's ``work()``: a :class:`Block` or :class:`StageOutput` adds
        its own stages' seconds (and gives its scores, or (idx, scores)); anything else
        is timed under the first stage's name."""
        began = time.perf_counter()
        out = work()
        elapsed = time.perf_counter() - began
        if isinstance(out, (Block, StageOutput)):
            self.replays = merged(self.replays, out.replayed)
            self.first_calls, self.first_counts = out.calls, out.counts
            seconds, out = out.seconds, (out.scores if isinstance(out, Block) else (out.idx, out.scores))
        else:
            seconds = {first.name: elapsed}
        for stage, value in seconds.items():
            self.seconds[stage] = self.seconds.get(stage, 0.0) + value
        return out


class Transformed(Stage):
    """A first stage searched with what a transform makes of each question.

    Subclasses implement ``_score(questions, spent)`` -> (B, D) block and may implement
    ``_rank(questions, depth, spent)`` -> (idx, scores); ``spent`` (:class:`Spent`)
    gathers the batch's seconds and counts, which ``scored`` and ``rank`` return."""

    stages: tuple[str, ...] = (TRANSFORM,)  # stage columns of its own (cost.stage_names)
    one_search_per_question = True  # the first stage searches one text per question (its calls are the question's)

    def __init__(self, first: Stage, transform):
        self.first, self.transform = first, transform
        self.name, self.floor = first.name, first.floor

    def fit(self, texts: list[str], tie_rank: np.ndarray) -> None:
        self.tie_rank = np.asarray(tie_rank)
        self.first.fit(texts, tie_rank)

    def children(self) -> tuple[Stage, ...]:
        return (self.first,)

    def calls(self) -> dict[str, int]:
        return {**self.first.calls(), TRANSFORM: self.transform.api_calls}

    def timed(self) -> list[str]:
        return list(dict.fromkeys([*self.stages, *self.first.timed()]))

    def scored(self, questions: list[str]) -> Block:
        spent = Spent()
        scores = self._score(questions, spent)
        calls, counts = self._first_calls(spent)
        return Block(scores, spent.seconds, counts, spent.estimated, spent.replays, calls)

    def score(self, questions: list[str]) -> np.ndarray:
        return self.scored(questions).scores

    def rank(self, questions: list[str], depth: int) -> StageOutput:
        spent = Spent()
        idx, scores = self._rank(questions, depth, spent)
        calls, counts = self._first_calls(spent)
        return StageOutput(idx, scores, spent.seconds, counts, tokens_estimated=spent.estimated,
                           replayed=spent.replays, calls=calls)

    def _first_calls(self, spent: Spent) -> tuple[list | None, dict[str, np.ndarray]]:
        """The first stage's search calls (a trajectory, searched with what the transform
        made of each question) and the batch's counts with the first stage's; none of
        them when the transform searched several texts per question (``multi_query``)."""
        if not self.one_search_per_question or spent.first_calls is None:
            return None, spent.counts
        return spent.first_calls, {**spent.first_counts, **spent.counts}

    def _rank(self, questions: list[str], depth: int, spent: Spent) -> tuple[np.ndarray, np.ndarray]:
        block = self._score(questions, spent)
        # selection is timed with the first stage, as search() would time it without a transform
        return spent.own(self.first.name, lambda: select_top(block, depth, self.tie_rank, floor=self.floor))

    def _score(self, questions: list[str], spent: Spent) -> np.ndarray:
        raise NotImplementedError

    def facts(self) -> dict:
        """The transform's facts, under ``transform`` in run.json (the walk over the stage
        tree, :func:`receval.run.stages.facts`, adds the first stage's)."""
        return {TRANSFORM: self.transform.facts()}
