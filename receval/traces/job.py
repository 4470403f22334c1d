"""A traces import: check the config, read the spans, match them to questions, score the
trajectories and write an ordinary stored run (:func:`receval.results.run_writer.write_run`)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from receval.core.errors import ConfigError
from receval.datasets import UNANSWERABLE, Question, load_dataset
from receval.run.evaluate import question_rows, trajectory_columns
from receval.measures.overlap import overlap_columns
from receval.measures.spans import judge_spans, token_columns
from receval.run.metrics import measures_for
from receval.run.written import written_facts
from receval.results.identity import identity_hash
from receval.results.claim import Claim, holding
from receval.results.run_writer import RunRecord, write_run
from receval.retrievers.trajectory import Call, union
from receval.run.shown import unit_facts
from receval.traces.config import traces_problems
from receval.traces.spans import Span, read_spans

NAMED = 10  # unmatched spans named in the message (all are counted)


def check_config(cfg) -> None:
    """Every problem with the traces config at once, before anything is read."""
    missing = sorted(OmegaConf.missing_keys(cfg))
    problems = [f"{key} is required and has no value: set it on the command line ({key}=...)" for key in missing]
    problems += traces_problems(cfg)
    path = cfg.traces.get("path") if "traces.path" not in missing else None
    if path is not None and not Path(str(path)).is_file():
        problems.append(f"traces.path={path}: file not found; give the JSONL file of exported spans (one span a line)")
    if problems:
        raise ConfigError(problems)


@dataclass
class Summary:
    run_dir: Path
    spans: int = 0  # retriever spans read
    others: int = 0  # spans of other kinds, skipped
    questions: int = 0  # questions matched (rows of the run)
    calls: int = 0
    unmatched: list[tuple[int, str]] = field(default_factory=list)  # (line, query)
    repeated: int = 0  # traces of a question already matched by an earlier trace, left out
    duplicates: int = 0  # spans read twice (the same trace and span), read once
    untraced: int = 0  # questions of the dataset no trace matched
    unknown_ids: int = 0  # document ids that are no unit of the dataset, kept with their text
    means: dict[str, float] = field(default_factory=dict)


def normalised(text: str) -> str:
    return " ".join(text.split())


def match(spans: list[Span], questions: list[Question]) -> tuple[dict[str, list[Span]], list[Span], int]:
    """Question id -> its trace's retriever spans in start order; the spans of traces no
    question matched; how many traces repeated an already matched question.

    A trace (spans sharing a trace id) belongs to the question named by a span's
    ``receval.question_id``; else to the first span (by start time) whose query is a
    question's text, whitespace normalised. Traces are taken in the order they start;
    a question's first trace is kept."""
    by_id = {q.id: q for q in questions}
    by_text: dict[str, str] = {}
    for q in questions:
        by_text.setdefault(normalised(q.text), q.id)
    traces: dict[str, list[Span]] = {}
    for span in spans:
        traces.setdefault(span.trace, []).append(span)
    matched: dict[str, list[Span]] = {}
    unmatched: list[Span] = []
    repeated = 0
    for trace in sorted(traces.values(), key=lambda mine: min(s.start_ns for s in mine)):
        trace.sort(key=lambda s: (s.start_ns, s.line))
        named = [s.question_id for s in trace if s.question_id in by_id]
        texts = [by_text[normalised(s.query)] for s in trace if normalised(s.query) in by_text]
        qid = named[0] if named else texts[0] if texts else None
        if qid is None:
            unmatched.extend(trace)
        elif qid in matched:
            repeated += 1
        else:
            matched[qid] = trace
    return matched, unmatched, repeated


def import_traces(cfg, run_dir: Path, claim: Claim | None = None, saved: dict[str, str] | None = None) -> Summary:
    """Score the traces of ``cfg.traces.path`` against ``cfg.dataset`` into ``run_dir``,
    taken for this run (:mod:`receval.results.claim`; ``claim``: taken by the caller,
    ``saved``: the files Hydra saved for the job). Traces that match no question are an
    error, and the folder is left as it was."""
    with holding(run_dir, claim) as held:
        return _import(cfg, Path(run_dir), held, saved)


def _import(cfg, run_dir: Path, claim: Claim, saved: dict[str, str] | None) -> Summary:
    """read and match the spans -> score the trajectories -> the record -> write (the claim
    started only now: until the writer seals it, the folder reads as incomplete)."""
    began = time.perf_counter()
    dataset = load_dataset(cfg.dataset)
    spans, others, duplicates = read_spans(cfg.traces.path)
    matched, unmatched, repeated = match(spans, dataset.questions)
    questions = [q for q in dataset.questions if q.id in matched]
    if not questions:  # a run of no question is no run: nothing is written
        raise ConfigError(
            f"traces.path={cfg.traces.path}: none of its {len(spans)} retriever spans matched a question of the "
            f"dataset ({len(dataset.questions)} questions; a span matches by receval.question_id or by the "
            "question's text as its input.value): check that dataset= is the one the application answered"
        )
    units, texts, calls = _calls(matched, questions, dataset.sections)
    summary = Summary(
        Path(run_dir), spans=len(spans), others=others, questions=len(questions),
        calls=sum(map(len, calls)), unmatched=[(s.line, s.query) for s in unmatched], repeated=repeated,
        duplicates=duplicates,
        untraced=len(dataset.questions) - len(questions), unknown_ids=len(texts),
    )
    record = _record(cfg, dataset, questions, units, texts, calls, summary)
    record = replace(record, timings={"import_s": time.perf_counter() - began})
    claim.start(saved)  # from here until the writer seals it the folder reads as incomplete
    summary.means = write_run(claim, record).means
    return summary


def _calls(matched: dict[str, list[Span]], questions: list[Question], sections: list):
    """Each question's search calls (:class:`receval.retrievers.trajectory.Call`) over the
    units: the dataset's sections, then the ids no section has (kept, with the text a span
    gave: ``texts``)."""
    units = [s.id for s in sections]
    index = {uid: i for i, uid in enumerate(units)}
    texts: dict[str, str | None] = {}  # unknown ids -> the text a span gave
    calls: list[list[Call]] = []
    for q in questions:
        mine = []
        for span in matched[q.id]:
            ids = []
            for doc in span.documents:
                uid = doc.id if doc.id in index else _section_of(doc.id, index)
                if uid is None:
                    uid = doc.id
                    index[uid] = len(units)
                    units.append(uid)
                    texts[uid] = doc.content
                elif uid in texts and texts[uid] is None:
                    texts[uid] = doc.content
                ids.append(index[uid])
            scores = np.asarray([0.0 if d.score is None else d.score for d in span.documents], dtype=np.float64)
            mine.append(Call(span.query, np.asarray(ids, dtype=np.int64), scores, span.latency_ms))
        calls.append(mine)
    return units, texts, calls


def _final(calls: list[list[Call]], depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Each question's final ranking: the union of its calls' (:func:`receval.retrievers.trajectory.union`)."""
    final_idx = np.full((len(calls), depth), -1, dtype=np.int64)
    final_scores = np.full((len(calls), depth), np.nan, dtype=np.float64)
    for row, mine in enumerate(calls):
        width = max((c.idx.size for c in mine), default=0)
        rows_idx = np.full((len(mine), width), -1, dtype=np.int64)
        rows_scores = np.full((len(mine), width), np.nan, dtype=np.float64)
        for i, c in enumerate(mine):
            rows_idx[i, : c.idx.size], rows_scores[i, : c.idx.size] = c.idx, c.scores
        final_idx[row], final_scores[row] = union(rows_idx, rows_scores, depth)
    return final_idx, final_scores


def _record(cfg, dataset, questions: list[Question], units: list[str], texts: dict, calls: list[list[Call]],
            summary: Summary) -> RunRecord:
    """The imported run as it is stored: its per-question columns (measures, overlap,
    trajectories, the unknown ids' texts), its facts (with the import's, ``traces``), what
    run.json says of it and chunks.json (:func:`receval.run.shown.unit_facts`)."""
    final_idx, final_scores = _final(calls, int(cfg.depth))
    latency = np.fromiter((sum(c.latency_ms for c in mine) for mine in calls), np.float64, len(calls))
    ks = list(cfg.metrics.ks)
    measures = measures_for(ks)
    evidence = judge_spans(questions, dataset.sections, dataset.pages, *_unit_offsets(dataset.sections, len(units)),
                           final_idx, ks, float(cfg.relevance.coverage))
    columns = question_rows(questions, units, final_idx, final_scores, latency, measures, evidence,
                            (units, final_idx, final_scores))
    columns.update(overlap_columns(questions, {s.id: s for s in dataset.sections}))
    columns.update(trajectory_columns(questions, units, np.arange(len(units)), calls, final_idx, final_scores, latency))
    columns["documents"] = [
        [{"id": units[i], "text": texts[units[i]]} for i in dict.fromkeys(int(i) for c in mine for i in c.idx)
         if units[i] in texts]
        for mine in calls
    ]
    config = run_config(cfg)
    names = [m.name for m in measures]
    stored = names + token_columns(ks)
    return RunRecord(
        columns=columns,
        measures=tuple(stored),
        facts=_facts(cfg, dataset, questions, config, summary),
        written={**written_facts(OmegaConf.create(config), stored), "config": config},  # label, filled, measures
        means={name: float(np.mean([v for v in columns[name] if v is not None] or [np.nan])) for name in names},
        timings={},
        shown=partial(unit_facts, dataset.sections, units, final_idx),  # what report --show reads
        write_timing=None,
    )


def _facts(cfg, dataset, questions: list[Question], config: dict, summary: Summary) -> dict:
    """What results.parquet's metadata and run.json both say of the imported run, with
    ``traces``: what the import read, matched and left out."""
    traces = {
        "path": str(cfg.traces.path), "spans": summary.spans, "other_spans": summary.others, "calls": summary.calls,
        "unmatched_spans": len(summary.unmatched),
        "unmatched": [{"line": n, "query": q} for n, q in summary.unmatched[:NAMED]],
        "repeated_traces": summary.repeated, "duplicate_spans": summary.duplicates,
        "untraced_questions": summary.untraced, "unknown_ids": summary.unknown_ids,
    }
    return {
        "config_hash": identity_hash(config),
        "dataset_fingerprint": dataset.fingerprint,
        "n_chunks": len(dataset.sections),
        "n_questions": len(questions),
        "n_unanswerable": sum(q.kind == UNANSWERABLE and not q.relevant for q in questions),
        "stages": {},
        "dataset_notes": dict(dataset.notes),
        "traces": traces,
    }


def _unit_offsets(sections, n_units: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each unit as a chunk for the evidence judgement (:func:`receval.measures.spans.judge_spans`):
    its section and character span; a unit the dataset lacks covers nothing (an empty span)."""
    unit_section = np.zeros(n_units, dtype=np.int64)
    start, end = np.zeros(n_units, dtype=np.int64), np.zeros(n_units, dtype=np.int64)
    unit_section[: len(sections)] = np.arange(len(sections))
    start[: len(sections)] = np.fromiter((s.start for s in sections), np.int64, len(sections))
    end[: len(sections)] = np.fromiter((s.end for s in sections), np.int64, len(sections))
    return unit_section, start, end


def _section_of(uid: str, index: dict[str, int]) -> str | None:
    """A chunk id ``<section id>@<ordinal>`` of a section of the dataset: that section."""
    section, at, ordinal = uid.rpartition("@")
    return section if at and ordinal.isdigit() and section in index else None


def run_config(cfg) -> dict:
    """The run's saved config: a run config (its ``name``, dataset, depth, cutoffs, evidence
    coverage and bootstrap), so report, compare and pool read the run as any other. The traces file
    is named in run.json's ``traces`` facts. No re-ranker, no query transform: said, so
    a report beside ordinary runs does not show them as differences."""
    data = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    kept = {key: data[key] for key in ("name", "dataset", "depth", "metrics", "relevance", "bootstrap") if key in data}
    return {**kept, "rerank": None, "transform": None}


def summary_line(summary: Summary) -> str:
    means = "  ".join(f"{label} {summary.means[name]:.3f}" for label, name in (("hit@1", "hit@1"), ("MRR", "rr"))
                      if name in summary.means)
    where = os.path.relpath(summary.run_dir)
    return (
        f"traces  {summary.spans} retriever spans -> {summary.questions} questions, {summary.calls} calls  {means}"
        f"  -> {summary.run_dir if where.startswith('..') else where}"
    )


def notes(summary: Summary) -> list[str]:
    """What was left out, for stderr: unmatched spans (counted and named), repeated traces,
    questions without a trace, ids kept as unknown units."""
    out = []
    if summary.unmatched:
        shown = ", ".join(f"line {n} {q[:60]!r}" for n, q in summary.unmatched[:NAMED])
        more = f" and {len(summary.unmatched) - NAMED} more" if len(summary.unmatched) > NAMED else ""
        out.append(f"{len(summary.unmatched)} retriever spans matched no question (no receval.question_id of the "
                   f"dataset, no question's text): {shown}{more}")
    if summary.repeated:
        out.append(f"{summary.repeated} traces repeat a question an earlier trace answered; the first was kept")
    if summary.duplicates:
        out.append(f"{summary.duplicates} spans were read twice (the same trace and span); each was counted once")
    if summary.untraced:
        out.append(f"{summary.untraced} questions of the dataset have no trace; the run holds the {summary.questions} "
                   "that do")
    if summary.unknown_ids:
        out.append(f"{summary.unknown_ids} document ids are no section of the dataset; kept with their text "
                   "(column documents) for pool and judge")
    return out
