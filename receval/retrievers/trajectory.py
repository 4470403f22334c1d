"""Answers made of several search calls (an agent's trajectory), for the ``python`` and
``http`` retrievers.

A question may be answered, instead of with a list of ``(id, score)`` pairs, with::

    {"calls": [{"query": "...", "hits": [[id, score], ...], "latency_ms": 12.5}, ...],
     "final": [[id, score], ...]}

Each call's hits are ordered by the one tie rule (:func:`receval.retrievers.ranked.top_lists`,
with its checks) and cut to the run's depth; ``latency_ms`` (optional, >= 0) is the
call's own time, as the retriever measured it. ``final`` (optional) is ranked like a
plain answer; without it the final ranking is the calls' union in call order (each
chunk at its first appearance, with that call's score; scores of different calls are
not compared). Every measure is of the final ranking; the calls feed ``n_calls``,
``first_relevant_call`` and ``recall_union`` (:func:`receval.run.evaluate.trajectory_columns`).
A call's query is stored in ``results.parquet``: a server that echoes its request's
Authorization header there, or any key-like word the question did not hold, is replaced
by ``<hidden: key>`` first (:func:`hidden_queries`), and the run warns how many.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from receval.core import numeric
from receval.core.errors import RecevalError
from receval.core import notices
from receval.core.secrets import brief, cut, hidden_message, hide_keys, key_tokens
from receval.retrievers.ranked import Ids, top_lists


@dataclass(frozen=True)
class Call:
    """One search call of a question: its query, ranked chunk indices (-1 padded) and
    scores (NaN padded), and its own latency in ms (None: not reported)."""

    query: str
    idx: np.ndarray
    scores: np.ndarray
    latency_ms: float | None = None


def is_trajectory(answer) -> bool:
    return isinstance(answer, dict) and "calls" in answer


def _checked(
    answer: dict, where: str, question: str, clip: Callable[[str], str] = cut
) -> tuple[list[str], list, list[float | None]]:
    """(queries, hits lists, latencies) of one trajectory answer; a RecevalError naming
    the question and the field otherwise (what is quoted of the answer through ``clip``:
    a server's reply is redacted)."""
    about = f"{where} answered question {cut(brief(question))} with calls"
    calls = answer["calls"]
    if not isinstance(calls, list):
        raise RecevalError(f"{about} = {clip(brief(calls))}: give a list of {{\"query\", \"hits\"}} objects")
    unknown = set(answer) - {"calls", "final"}
    if unknown:
        raise RecevalError(f"{about}: unknown key(s) {clip(', '.join(sorted(map(str, unknown))))}; use calls and final")
    queries, hits, latencies = [], [], []
    for n, call in enumerate(calls, 1):
        if not isinstance(call, dict) or "hits" not in call:
            raise RecevalError(f"{about}: call {n} is {clip(brief(call))}; each call is {{\"query\", \"hits\"}}")
        query = call.get("query", "")
        if not isinstance(query, str):
            raise RecevalError(f"{about}: call {n}'s query is {clip(brief(query))}, not a string")
        latency = call.get("latency_ms")
        if latency is not None and (numeric.real(latency) is None or latency < 0):
            raise RecevalError(f"{about}: call {n}'s latency_ms is {clip(brief(latency))}, not a number >= 0")
        queries.append(query)
        hits.append(call["hits"])
        latencies.append(None if latency is None else float(latency))
    return queries, hits, latencies


def union(rows_idx: np.ndarray, rows_scores: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Ranked rows (one per call, -1 padded) joined in order, each index kept at its first
    place, cut to ``depth``."""
    flat = rows_idx.ravel()
    keep = flat >= 0
    flat, scores = flat[keep], rows_scores.ravel()[keep]
    _, first = np.unique(flat, return_index=True)
    first = np.sort(first)[:depth]
    idx = np.full(depth, -1, dtype=np.int32)
    out = np.full(depth, np.nan, dtype=np.float64)
    idx[: first.size], out[: first.size] = flat[first], scores[first]
    return idx, out


def hidden_queries(parsed: dict, questions: list[str], own: tuple[str, ...], where: str) -> None:
    """Each call's query (what results.parquet stores) without the request's own
    credentials ``own`` or a key-like word its question did not hold
    (:func:`receval.core.secrets.hide_keys`), in place; the run's warning says how many
    (:mod:`receval.core.notices`)."""
    count = 0
    for row, (queries, _, _) in parsed.items():
        keep = key_tokens(questions[row])
        for n, query in enumerate(queries):
            queries[n], found = hide_keys(query, own, keep)
            count += found
    notices.add(f"{where}'s search calls", count, hidden_message)


def rank_answers(
    answers: list, ids: Ids | None, tie_rank: np.ndarray, depth: int, where: str, questions: list[str],
    clip: Callable[[str], str] = cut, own: tuple[str, ...] = (),
) -> tuple[np.ndarray, np.ndarray, list[list[Call] | None] | None]:
    """Plain answers and trajectories -> (idx (B, depth), scores, calls per question: None
    for a plain answer; None for the whole batch when no answer has calls). Queries are
    stored without the request's credentials ``own`` or other keys (:func:`hidden_queries`)."""
    if not any(is_trajectory(a) for a in answers):
        return (*top_lists(answers, ids, tie_rank, depth, where, questions, clip), None)
    parsed = {row: _checked(a, where, questions[row], clip) for row, a in enumerate(answers) if is_trajectory(a)}
    hidden_queries(parsed, questions, own, where)
    owners = [row for row, (queries, _, _) in parsed.items() for _ in queries]
    flat_hits = [h for _, hits, _ in parsed.values() for h in hits]
    call_idx, call_scores = top_lists(
        flat_hits, ids, tie_rank, depth, where, [questions[row] for row in owners], clip
    )
    direct = [row for row, a in enumerate(answers) if not is_trajectory(a) or a.get("final") is not None]
    finals = [answers[row]["final"] if is_trajectory(answers[row]) else answers[row] for row in direct]
    idx = np.full((len(answers), depth), -1, dtype=np.int32)
    scores = np.full((len(answers), depth), np.nan, dtype=np.float64)
    if direct:
        asked = [questions[row] for row in direct]
        idx[direct], scores[direct] = top_lists(finals, ids, tie_rank, depth, where, asked, clip)
    calls: list[list[Call] | None] = [None] * len(answers)
    at = 0
    for row, (queries, _, latencies) in parsed.items():
        mine = slice(at, at + len(queries))
        at += len(queries)
        calls[row] = [
            Call(q, call_idx[i], call_scores[i], ms)
            for q, i, ms in zip(queries, range(mine.start, mine.stop), latencies)
        ]
        if answers[row].get("final") is None:
            idx[row], scores[row] = union(call_idx[mine], call_scores[mine], depth)
    return idx, scores, calls

