"""What a run says of itself beside its results (run.json and results.parquet's metadata):
per stage its API calls and the answers it did not ask now, and the run's facts (identity,
counts, cost, cache, machine, excluded units and nuggets), from the pipeline's steps
(:mod:`receval.run.pipeline`)."""

from __future__ import annotations

import os
import numpy as np

from receval.core import machine
from receval.datasets import UNANSWERABLE
from receval.datasets.excluded import exclusion_counts
from receval.datasets.nuggets import nugget_counts
from receval.measures import cost
from receval.measures.tokens import budget_unit
from receval.run import stages
from receval.run.spec import thawed


def stage_facts(
    stages: list[str], after_index: dict, after_search: dict, after_warmup: dict | None = None
) -> dict[str, dict]:
    """Per stage: API calls made while indexing and while answering the questions
    (0 for local work); the report turns the latter into calls per 1,000 questions.
    ``warmup_api_calls`` (only when there were any): the warm-up question's calls."""
    warmed = after_index if after_warmup is None else after_warmup
    facts = {}
    for stage in stages:
        facts[stage] = {
            "index_api_calls": int(after_index.get(stage, 0)),
            "search_api_calls": int(after_search.get(stage, 0) - warmed.get(stage, 0)),
        }
        if warmed.get(stage, 0) - after_index.get(stage, 0):
            facts[stage]["warmup_api_calls"] = int(warmed.get(stage, 0) - after_index.get(stage, 0))
    return facts


def replay_facts(stage_info: dict[str, dict], replays: dict) -> int:
    """Per stage with answers not asked now (:class:`receval.clients.calls.Replay`), add to
    its facts: for answers replayed from an earlier run's cache ``replayed_answers``,
    ``replayed_live_ms`` (the live time its latency column reports) and ``replay_wall_ms``
    (the replay's own wall time, kept apart); for this run's own answers read again (the
    warm-up's, an earlier question's) ``reused_answers`` and ``reused_live_ms``. Returns
    the run's replayed answers in all: what makes a run "replayed" (never its own answers)."""
    for stage, replay in replays.items():
        facts = stage_info.setdefault(stage, {})
        if replay.answers:
            facts.update({
                "replayed_answers": int(replay.answers), "replayed_live_ms": 1000.0 * replay.live_s,
                "replay_wall_ms": 1000.0 * replay.own_s,
            })
        if replay.reused:
            facts.update({"reused_answers": int(replay.reused), "reused_live_ms": 1000.0 * replay.reused_live_s})
    return int(sum(replay.answers for replay in replays.values()))


def run_facts(spec, dataset, built, searched, ranked, replayed: int, at_start) -> dict:
    """What results.parquet's metadata and run.json both say of the run (the run id aside:
    the writer adds the folder's), from the pipeline's steps ``built``, ``searched`` and
    ``ranked`` (:class:`receval.run.pipeline.Built`, ``Searched``, ``Ranked``)."""
    cfg, questions, hits, retriever = spec.config, dataset.questions, searched.hits, built.retriever
    return {
        "config_hash": spec.config_hash,
        "dataset_fingerprint": dataset.fingerprint,
        "n_chunks": len(built.chunks),
        "n_questions": len(questions),
        "n_unanswerable": sum(q.kind == UNANSWERABLE and not q.relevant for q in questions),
        "stages": searched.stage_info,
        "replayed": replayed,  # answers an earlier run left in the cache: the latencies are their live ones
        "timing": {"repeats": int(cfg.timing.repeats)},  # each question's latency: the median of this many passes
        "cost": {
            "index": cost.index_cost(thawed(spec.prices), retriever, [chunk.text for chunk in built.chunks]),
            "tokens_estimated": sorted(hits.tokens_estimated),
        },
        "cache": dict(built.cache.events),
        "dataset_notes": dict(dataset.notes),
        "budget": budget_unit(cfg.metrics.get("tokenizer")),  # what counts a token budget (hit@300tok)
        **question_facts(questions, ranked.dropped),
        **stages.facts(retriever),
        "truncated": stages.truncated(retriever),  # chunks a dense model cut at its token limit
        # what explains the latencies: CPU, cores, threads, load
        "machine": machine.facts(at_start, stages.encoder_threads(retriever)),
        # the folder its relative paths (dataset.path, cache_dir, ...) were read from: select's best.yaml
        # makes them absolute against it (receval.results.configs.anchor_paths)
        "workdir": os.getcwd(),
    }


def question_facts(questions: list, dropped: np.ndarray) -> dict:
    """What run.json records of the questions' excluded units and nuggets, when they have any."""
    facts = {}
    if any(q.excluded for q in questions):
        facts["excluded"] = {**exclusion_counts(questions), "dropped": int(dropped.sum())}
    if any(q.nuggets for q in questions):
        facts["nuggets"] = nugget_counts(questions)
    return facts
