"""One run: load -> chunk -> index -> warm up -> search -> evaluate -> write, each step timed:
small named steps build the run's frozen record (:class:`receval.results.run_writer.RunRecord`),
which the one writer stores and seals (:func:`receval.results.run_writer.write_run`).

Before the timed search, the first question is searched once and its answer dropped
(:func:`receval.run.stages.warm_up`): its time is ``timings.warmup_s`` and the API
calls it made are ``warmup_api_calls``, apart from the search's. With
``timing.repeats=N`` the search passes over every question N times, interleaved, and
each question's latency is the median of its N (:func:`receval.run.stages.timed_search`;
run.json's ``timing.repeats``). ``run.json`` also
stores the machine the run was timed on (:mod:`receval.core.machine`). Plain functions on
a composed config; the Hydra shell in :mod:`receval.cli.run` only supplies the config and
the output directory.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from receval import chunking, retrievers
from receval.run import facts, stages
from receval.measures import cost
from receval.core import machine, notices
from receval.core.machine import give_back_memory
from receval.chunking.cache import IndexCache, key_of
from receval.datasets import load_dataset
from receval.run.evaluate import collapse_with_ranks, drop_excluded, excluded_depth, question_rows, trajectory_columns
from receval.results.identity import identity_hash
from receval.run.metrics import measures_for
from receval.measures.overlap import overlap_columns
from receval.run.ranking import tie_ranks
from receval.measures.spans import judge_spans, token_columns
from receval.measures.ranks import chunk_columns, completed, nugget_columns, rank_columns
from receval.results.claim import Claim, holding
from receval.results.format import stage_column
from receval.results.run_writer import RunRecord, write_run

from receval.retrievers.base import Hits, Stage
from receval.retrievers.text import Tokenizer
from receval.run.shown import show_facts
from receval.run.spec import run_spec, thawed
from receval.run.written import as_written, resolved, written_facts


@dataclass(frozen=True)
class RunResult:
    """A run stored: its folder and the record written there (:func:`receval.results.run_writer.write_run`)."""

    run_dir: Path
    record: RunRecord

    @property
    def n_chunks(self) -> int:
        return self.record.n_chunks

    @property
    def n_questions(self) -> int:
        return self.record.n_questions

    @property
    def n_unanswerable(self) -> int:
        return self.record.n_unanswerable

    @property
    def means(self) -> dict[str, float]:  # over answerable questions
        return self.record.means

    @property
    def timings(self) -> dict[str, float]:
        return self.record.timings


class _Timer:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, step: str):
        began = time.perf_counter()
        yield
        self.seconds[f"{step}_s"] = time.perf_counter() - began


def config_hash_of(cfg) -> str:
    """The identity hash stored with a run of ``cfg`` (resume compares it)."""
    from receval.measures.tokens import contents

    return identity_hash(resolved(cfg), contents(cfg.metrics.get("tokenizer")))


def capped_depth(depth: int, n_chunks: int, ks: list[int]) -> int:
    """``depth`` capped at the number of chunks (a question cannot keep more; never
    below the largest cutoff, so measures see the usual padding): ``depth=100000000``
    would otherwise allocate for ranks that cannot exist. A note says so when the
    depth asked for is far beyond the data."""
    capped = min(depth, max(n_chunks, *ks, 1))
    if capped < depth and depth > 1000:
        print(
            f"receval: note: depth={depth} is more than the {n_chunks} chunks; each question "
            f"keeps at most {capped}", file=sys.stderr, flush=True,
        )
    return capped


def search_label(cfg) -> str:
    """The search's progress stage: ``searching (bm25)``, ``searching and re-ranking (...)``."""
    stage = "searching" if cfg.get("rerank") is None else "searching and re-ranking"
    return f"{stage} ({stages.describe(cfg)})"


def check_config(cfg) -> None:
    """Every check a config gets before any data is read (the callback and the sweeper
    name this function): its run spec, built and remembered, so the run that follows
    reuses it (:func:`receval.run.spec.run_spec`)."""
    run_spec(cfg)


def run(cfg, run_dir: Path, dataset=None, claim: Claim | None = None) -> RunResult:
    """Evaluate one configuration (a composed config or its :class:`receval.run.spec.RunSpec`)
    and store its per-question results in ``run_dir`` (``dataset``: already loaded from
    ``cfg.dataset``, e.g. to check resume). The config is validated once, by its spec,
    before the folder is touched; then the run takes the folder for itself
    (:mod:`receval.results.claim`; ``claim``: already taken by the caller, the command
    line) and the one writer stores its record there with its run id
    (:func:`receval.results.run_writer.write_run`)."""
    spec = run_spec(cfg)
    with holding(run_dir, claim) as held:
        return _run(spec, Path(run_dir), dataset, held.start())


def _run(spec, run_dir: Path, dataset, claim: Claim) -> RunResult:
    """load -> chunk and index -> warm up and search -> evaluate -> the record -> write;
    the folder reads as incomplete from ``claim.start`` until the writer seals it."""
    at_start = machine.started()
    notices.clear()  # this run says what its own stages found
    timer = _Timer()
    with timer("load"):
        dataset = dataset or load_dataset(spec.config.dataset)
    built = _built(spec.config, dataset, timer)
    searched = _searched(spec.config, dataset.questions, built, timer)
    with timer("evaluate"):
        ranked = _ranked(spec.config, dataset, built, searched)
        columns = _columns(spec.config, dataset, built, searched, ranked)
    record = _record(spec, dataset, built, searched, ranked, columns, timer, at_start)
    give_back_memory()
    return RunResult(Path(run_dir), write_run(claim, record))


@dataclass(frozen=True)
class Built:
    """The run's chunks and its stages, fitted: where each chunk's section is (``chunk_section``,
    by position in ``section_ids``; ``index``: section id -> that position), the tie rule's
    ranks, the cache and the API calls indexing made per stage."""

    cache: IndexCache
    chunks: list
    retriever: Stage
    tie_rank: np.ndarray
    section_ids: list[str]
    index: dict[str, int]
    chunk_section: np.ndarray
    calls_after_index: dict


def _built(cfg, dataset, timer: _Timer) -> Built:
    """Build the stages (before anything is cached: a bad retriever setting leaves nothing
    behind), cut the chunks (cached) and fit the first stage on them."""
    cache = IndexCache(cfg.cache_dir)
    chunk_key = key_of(
        dataset=dataset.fingerprint,
        chunking=OmegaConf.to_container(cfg.chunking, resolve=True, enum_to_str=True),
    )
    context = retrievers.Context(
        cache_dir=cfg.cache_dir,
        vocabularies=cache.vocabularies(chunk_key),
        tokenizer=Tokenizer.of(cfg.tokenizer),
        checked=True,  # the spec checked every node
    )
    retriever = stages.build(cfg, context)
    stages.check_repeats(retriever, int(cfg.timing.repeats))
    with timer("chunk"):
        chunks = cache.chunks(chunk_key, lambda: chunking.cut(cfg.chunking, dataset.sections, checked=True))
    context.chunks, context.sections = chunks, dataset.sections
    with timer("index"):
        tie_rank = tie_ranks([(chunk.section_id, chunk.ordinal) for chunk in chunks])
        retriever.fit([chunk.text for chunk in chunks], tie_rank)
    section_ids = [s.id for s in dataset.sections]
    index = {sid: i for i, sid in enumerate(section_ids)}
    chunk_section = np.fromiter((index[c.section_id] for c in chunks), np.int64, len(chunks))
    return Built(cache, chunks, retriever, tie_rank, section_ids, index, chunk_section, stages.api_calls(retriever))


@dataclass(frozen=True)
class Searched:
    """The search's answers (``hits``), the depth each question keeps and each stage's calls."""

    hits: Hits
    depth: int
    stage_info: dict[str, dict]


def _searched(cfg, questions: list, built: Built, timer: _Timer) -> Searched:
    """Warm up on the first question, then search every question (timed, ``timing.repeats``
    passes); the index is released after: measures are built beside it otherwise."""
    depth = capped_depth(cfg.depth, len(built.chunks), list(cfg.metrics.ks))
    searched = min(depth + excluded_depth(questions, built.index, built.chunk_section), max(len(built.chunks), depth))
    texts = [q.text for q in questions]
    with timer("warmup"):
        stages.warm_up(built.retriever, texts, searched, built.tie_rank)
    calls_after_warmup = stages.api_calls(built.retriever)
    with timer("search"):
        hits = stages.timed_search(
            built.retriever, texts, searched, built.tie_rank, cfg.search_batch, search_label(cfg),
            int(cfg.timing.repeats),
        )
    calls_after_search = stages.api_calls(built.retriever)
    notices.say()  # what the stages hid from answers or refused from the cache, once per stage
    stages.release(built.retriever)
    give_back_memory()
    info = facts.stage_facts(list(hits.stage_ms), built.calls_after_index, calls_after_search, calls_after_warmup)
    return Searched(hits, depth, info)


@dataclass(frozen=True)
class Ranked:
    """Each question's ranking, its excluded units dropped: by chunk (``chunk_idx``,
    ``chunk_scores``), collapsed to sections (``section_idx``, ``section_scores``,
    ``unit_ranks``), judged against its evidence (``spans``) and per rank (``ranking``)."""

    chunk_idx: np.ndarray
    chunk_scores: np.ndarray
    dropped: np.ndarray
    section_idx: np.ndarray
    section_scores: np.ndarray
    unit_ranks: object
    spans: object
    ranking: object
    answerable: np.ndarray


def _ranked(cfg, dataset, built: Built, searched: Searched) -> Ranked:
    """The search's rankings, excluded units dropped, collapsed to sections and judged."""
    questions, chunks, ks = dataset.questions, built.chunks, list(cfg.metrics.ks)
    hits = searched.hits
    chunk_idx, chunk_scores, dropped = drop_excluded(
        hits.chunk_idx, hits.scores, built.chunk_section, questions, built.index, searched.depth,
    )
    section_idx, section_scores, unit_ranks = collapse_with_ranks(
        chunk_idx, chunk_scores, built.chunk_section, len(built.section_ids)
    )
    chunk_start = np.fromiter((c.start for c in chunks), np.int64, len(chunks))
    chunk_end = np.fromiter((c.end for c in chunks), np.int64, len(chunks))
    spans = judge_spans(
        questions, dataset.sections, dataset.pages, built.chunk_section, chunk_start, chunk_end,
        chunk_idx, ks, float(cfg.relevance.coverage),
    )
    ranking = completed(
        spans.ranking, questions, chunks, chunk_idx, cfg.metrics.get("tokenizer"),
        float(cfg.relevance.get("nugget_coverage", 0.75)), str(cfg.tokenizer.language),
    )
    answerable = np.asarray([q.answerable for q in questions], dtype=bool)
    spans = replace(spans, columns=chunk_columns(ranking, ks, answerable))
    return Ranked(chunk_idx, chunk_scores, dropped, section_idx, section_scores, unit_ranks, spans, ranking, answerable)


def _columns(cfg, dataset, built: Built, searched: Searched, ranked: Ranked) -> dict:
    """The per-question columns (:mod:`receval.results.format`): measures, ranks, nuggets,
    excluded units, overlap, search calls and each stage's latency."""
    questions, hits = dataset.questions, searched.hits
    columns = question_rows(
        questions, built.section_ids, ranked.section_idx, ranked.section_scores, hits.latency_ms,
        measures_for(list(cfg.metrics.ks)), ranked.spans,
        ([c.id for c in built.chunks], ranked.chunk_idx, ranked.chunk_scores), ranked.unit_ranks,
    )
    give_back_memory()  # the measures' temporaries, before the rank and overlap columns add theirs
    columns.update(rank_columns(ranked.ranking, ranked.answerable))
    if ranked.ranking.nugget_at is not None:
        columns.update(nugget_columns(questions))
    if any(q.excluded for q in questions):
        columns["excluded"] = ranked.dropped.tolist()
    columns.update(overlap_columns(questions, {s.id: s for s in dataset.sections}))
    if hits.calls is not None:  # a retriever answered with its search calls
        columns.update(trajectory_columns(
            questions, built.section_ids, built.chunk_section, hits.calls, ranked.chunk_idx, ranked.chunk_scores,
            hits.latency_ms,
        ))
    for stage, values in hits.stage_ms.items():
        columns[stage_column(stage)] = values.astype(float).tolist()
    return columns


def _record(spec, dataset, built: Built, searched: Searched, ranked: Ranked, columns: dict, timer: _Timer,
            at_start) -> RunRecord:
    """The run as it is stored: its columns with the count and money columns added, its
    facts, what run.json says of it (label, measures, config), its means and timings, and
    chunks.json (:func:`receval.run.shown.show_facts`)."""
    cfg, questions, hits = spec.config, dataset.questions, searched.hits
    replayed = facts.replay_facts(searched.stage_info, hits.replayed)
    extra = {name: values.astype(float).tolist() for name, values in hits.counts.items()}
    extra.update(cost.question_costs(thawed(spec.prices), hits.counts, searched.stage_info, len(questions)))
    columns.update(extra)
    ks = list(cfg.metrics.ks)
    names = [m.name for m in measures_for(ks)]
    stored = names + token_columns(ks, nuggets=ranked.ranking.nugget_at is not None)
    return RunRecord(
        columns=columns,
        measures=tuple(stored),
        facts=facts.run_facts(spec, dataset, built, searched, ranked, replayed, at_start),
        written={**written_facts(cfg, stored), "config": as_written(cfg)},
        means={name: float(np.mean([v for v in columns[name] if v is not None] or [np.nan])) for name in names},
        timings=dict(timer.seconds),
        shown=partial(  # written as it is sized: never one string of the whole file
            show_facts, questions, dataset.sections, dataset.pages, built.chunks, ranked.chunk_idx,
            ranked.section_idx, float(cfg.relevance.coverage),
        ),
        stages=tuple(hits.stage_ms),
        extra=tuple(extra),
    )


def summary_line(cfg, result: RunResult) -> str:
    """The one line each run prints: its name (a stage's), retriever, chunking, chunks,
    hit@1, hit@3, MRR (the names as :mod:`receval.results.labels` gives them)."""
    from receval.run.written import label_facts

    label = label_facts(resolved(cfg))
    what, words = label["what"], label["chunking"]
    scores = "  ".join(
        f"{label} {result.means[name]:.3f}"
        for label, name in (("hit@1", "hit@1"), ("hit@3", "hit@3"), ("MRR", "rr"))
        if name in result.means
    )
    where = os.path.relpath(result.run_dir)
    if where.startswith(".."):
        where = str(result.run_dir)
    return (
        f"{what:<6}  {words:<28} {result.n_chunks:>6} chunks  {scores}"
        f"  [{result.n_questions - result.n_unanswerable} questions] -> {where}"
    )
