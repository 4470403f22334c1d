"""A run's stages: the first stage (any retriever, searched through a query transform
when the run names one: :mod:`receval.transforms`), then an optional re-ranker, and
the walks over the stage tree the pipeline needs (paid calls, facts, warm-up, timing
repeats, release).

:func:`build` composes them from the run's ``retriever`` and ``rerank`` nodes;
:class:`Reranked` is the composition. Each stage lists its inner stages with
``children()`` (:class:`receval.retrievers.base.Stage`), so nothing here asks a
stage which attributes it happens to have.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from receval import retrievers, transforms

from receval.run import components
from receval.clients import http
from receval.clients.calls import merged
from receval.core.errors import ConfigError
from receval.run.components import Context
from receval.run.ranking import select_top, sort_candidates
from receval.rerankers import PAIRS, Scorer
from receval.retrievers.base import Stage, StageOutput


class Reranked(Stage):
    """A first stage followed by a re-ranker; ranks its own shortlist (``rank``). When
    the first stage answered with search calls (a trajectory), they are kept: the
    measures are of the re-ranked list, ``n_calls``... of the first stage's calls."""

    floor = None

    def __init__(self, first: Stage, reranker: Scorer, first_size: int):
        self.first, self.reranker, self.first_size = first, reranker, first_size
        self.name = first.name

    def children(self) -> tuple[Stage, ...]:
        inner = self.reranker.retriever
        return (self.first,) if inner is None or inner is self.first else (self.first, inner)

    def timed(self) -> list[str]:
        return self.first.timed() + ["rerank"]

    def calls(self) -> dict[str, int]:
        return {**self.first.calls(), "rerank": self.reranker.api_calls}

    def fit(self, texts: list[str], tie_rank: np.ndarray) -> None:
        self.tie_rank = tie_rank
        self.first.fit(texts, tie_rank)
        inner = self.reranker.retriever
        if inner is None or not any(part is inner for part in parts(self.first)):
            self.reranker.fit(texts, tie_rank)

    def rank(self, questions: list[str], depth: int) -> StageOutput:
        """Each question's top ``depth`` chunks and scores after re-ranking."""
        block = self.first.scored(questions)
        began = time.perf_counter()
        idx, scores = select_top(block.scores, max(depth, self.first_size), self.tie_rank, floor=self.first.floor)
        short = idx[:, : self.first_size]
        rescored = self.reranker.rescore(questions, short)
        new = np.asarray(rescored.scores, dtype=np.float64)
        counts = {**block.counts, PAIRS: (short >= 0).sum(axis=1).astype(np.float64)}  # a transform's, then ours
        for name, values in rescored.usage.items():
            counts[f"{name}.rerank"] = np.asarray(values, dtype=np.float64)
        keep = self.reranker.ties_keep_order
        short, new = sort_candidates(short, np.where(short >= 0, new, np.nan), self.tie_rank, keep)
        idx = np.concatenate([short, idx[:, self.first_size :]], axis=1)[:, :depth]
        scores = np.concatenate([new, scores[:, self.first_size :]], axis=1)[:, :depth]
        seconds = {**block.seconds, "rerank": time.perf_counter() - began}
        estimated = block.tokens_estimated | ({"rerank"} if rescored.tokens_estimated else set())
        replayed = merged(block.replayed, {"rerank": rescored.replay} if rescored.replay else {})
        if rescored.replay:  # answers not asked now (replayed or this run's own): their live time
            seconds["rerank"] += rescored.replay.shift
        return StageOutput(idx, scores, seconds, counts, tokens_estimated=estimated, replayed=replayed,
                           calls=block.calls)  # a trajectory's calls are the first stage's


def build(cfg, context: Context) -> Stage:
    """A run's first stage, followed by its re-ranker when ``cfg.rerank`` names one."""
    first = transforms.apply(cfg, retrievers.build(cfg.retriever, context), context)
    node = cfg.get("rerank")
    if node is None:
        return first
    reranker = components.build("rerank", node, context, "rerank")
    typed = components.typed("rerank", node, "rerank")  # a RerankConfig: first_size is a field of every re-ranker
    return Reranked(first, reranker, int(typed.first_size))


def describe(cfg) -> str:
    """The run's retriever label: ``bm25``, ``rrf(tfidf+bm25)``, ``... > dense@30``."""
    first = components.label("retriever", cfg.retriever)
    if cfg.get("transform") is not None:
        first = f"{components.label('transform', cfg.transform)} > {first}"
    node = cfg.get("rerank")
    if node is None:
        return first
    return f"{first} > {components.label('rerank', node)}"


def parts(stage: Stage) -> list[Stage]:
    """The stage and every stage inside it, each once, inner ones first."""
    found: list[Stage] = []
    for child in stage.children():
        found += [p for p in parts(child) if not any(p is q for q in found)]
    return found + [stage]


def api_calls(stage: Stage) -> dict[str, int]:
    """Paid API calls per stage so far: members by name, the re-ranker as ``rerank``."""
    return stage.calls()


def facts(stage: Stage) -> dict:
    """Facts the stages measured over the run (lancedb's ``ann_recall@k``)."""
    found: dict = {}
    for part in parts(stage):
        found.update(part.facts())
    return found


def truncated(stage: Stage) -> dict[str, int]:
    """Per dense stage: chunks longer than its model's limit, which the model cut."""
    return {part.name: part.truncated for part in parts(stage) if isinstance(part.truncated, int)}


def encoder_threads(stage: Stage) -> dict[str, int]:
    """Threads a stage's encoder runs at once, where it sets them itself (onnx: one
    batch per thread), keyed ``<stage>.encoder``."""
    return {f"{part.name}.encoder": part.encoder_threads() for part in parts(stage) if part.encoder_threads() is not None}


def warm_up(stage: Stage, questions: list[str], depth: int, tie_rank) -> None:
    """One search before the timed one: the first question, its answer dropped.

    A stage's first call pays for set-up later calls do not (lazy allocations, thread
    pools, a server connection), which would otherwise land on one question's latency.
    Stages then ``forget`` the batch they last scored, so the timed search of the same
    question does the whole work again."""
    if not questions:
        return
    retrievers.search(stage, list(questions[:1]), depth, tie_rank, 1, label=None)
    for part in parts(stage):
        part.forget()


REPEATED = ("a timing repeat re-times the local stages and never asks a remote one again, and this stage keeps no "
            "answer to read again: set timing.repeats=1 for this run")


def check_repeats(stage: Stage, repeats: int) -> None:
    """Before anything is indexed: ``timing.repeats`` above 1 is refused for a run with a
    stage that asks a remote service each question without keeping its answers (a
    search service, an embeddings API: :attr:`Stage.asks_per_question`), which a repeat
    would ask again. Remote stages that answer through the cached-call layer (re-rankers,
    LLM transforms) read their own answers in a repeat instead."""
    remote = [part.name for part in parts(stage) if part.asks_per_question]
    if repeats > 1 and remote:
        raise ConfigError(f"timing.repeats={repeats}: {', '.join(dict.fromkeys(remote))} asks a remote service for "
                          f"each question; {REPEATED}")


def timed_search(
    stage: Stage, questions: list[str], depth: int, tie_rank, batch_size: int, label: str | None, repeats: int = 1,
) -> retrievers.Hits:
    """The timed search (:func:`receval.retrievers.search`), then ``repeats - 1`` more passes
    over every question, interleaved (questions 1..n, then 1..n again: a drift of the
    machine falls on every question alike, not on one question's repeats): each
    question's latency, and each stage's, is the median of its passes; its answers and
    counts are the first pass's. A repeat re-times the local stages; a remote stage's
    answer is this run's own (the cached-call layer's, :mod:`receval.clients.calls`),
    read again and standing for the latency it had live, never asked again: no request
    may leave during a repeat (:func:`receval.clients.http.held`)."""
    hits = retrievers.search(stage, questions, depth, tie_rank, batch_size, label)
    if repeats <= 1 or not questions:
        return hits
    latency, stage_ms = [hits.latency_ms], {name: [values] for name, values in hits.stage_ms.items()}
    with http.held(f"timing.repeats={repeats}: {REPEATED}"):
        for again in range(2, repeats + 1):
            for part in parts(stage):
                part.repeat()
            shown = None if label is None else f"{label}, timing {again} of {repeats}"
            found = retrievers.search(stage, questions, depth, tie_rank, batch_size, shown)
            latency.append(found.latency_ms)
            for name, values in found.stage_ms.items():
                stage_ms.setdefault(name, []).append(values)
    return replace(hits, latency_ms=np.median(latency, axis=0),
                   stage_ms={name: np.median(values, axis=0) for name, values in stage_ms.items()})


def release(stage: Stage) -> None:
    """After the search: every stage drops what it indexed, so a run's last steps do
    not hold its index beside the results they build."""
    for part in parts(stage):
        part.release()
