"""Retrievers that return top lists rather than a score for every chunk.

Your own code (``python``), a search service (``http``) and a vector database
(``lancedb``) answer "the best k for this question", not a (B, D) score block.
:class:`RankOnly` turns such answers into receval's shape:

- ``rank(questions, depth)``: each question's answers, ordered by score with the one
  tie rule (:func:`receval.run.ranking.sort_candidates`; equal scores by chunk id), cut
  to ``depth``, as a :class:`~receval.retrievers.base.StageOutput`;
- ``score(questions)``: a (B, D) block holding each question's top ``pool`` answers
  and -inf elsewhere, so the retriever can be a member of fusion or the first stage
  of re-ranking like any other (they see its top ``pool``).

Answers name chunks by id: a chunk id (``<section id>@<ordinal>``, as ``fit`` gave
them) or a section id, which stands for that section's first chunk (so a service
with its own index over whole sections needs no ``fit``; after collapsing chunks to
sections it scores exactly the section). An unknown id is an error naming it and the
closest known ids; a score that is not a finite real number, an answer that is not a
list of (id, score) pairs, and a chunk named twice in one answer are errors naming the
question (:func:`top_lists`).
Ids and scores quoted in a message go through ``clip`` (a server's answer: its
client's redact-then-cut :func:`receval.core.secrets.clip`; a local answer is cut only).
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from receval.core import numeric
from receval.core.secrets import brief, cut
from receval.core.errors import RecevalError
from receval.run.ranking import sort_candidates
from receval.retrievers.base import Block, Stage, StageOutput



@dataclass(frozen=True)
class Passage:
    """What a user retriever's ``fit`` receives for each chunk (also as ``passage[key]``)."""

    id: str  # unique in the run: "<section id>@<ordinal>"
    text: str  # as the run's chunking.headings made it
    section_id: str
    page: str
    heading: str  # "Fines > Late returns"

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def keys(self) -> list[str]:
        return ["id", "text", "section_id", "page", "heading"]


def passages(chunks, sections) -> list[Passage]:
    """The run's chunks as :class:`Passage` records."""
    by_id = {section.id: section for section in sections}
    return [
        Passage(chunk.id, chunk.text, chunk.section_id, by_id[chunk.section_id].page, by_id[chunk.section_id].heading)
        for chunk in chunks
    ]


class Ids:
    """Chunk ids and section ids -> chunk index (a section id: its first chunk)."""

    def __init__(self, chunks):
        self.index: dict[str, int] = {}
        for i, chunk in enumerate(chunks):
            self.index.setdefault(chunk.section_id, i)  # chunks come in section order
        for i, chunk in enumerate(chunks):
            self.index[chunk.id] = i  # a chunk id wins over an equal section id

    def unknown(self, name: str, where: str, clip: Callable[[str], str] = cut) -> RecevalError:
        close = difflib.get_close_matches(name[:200], list(self.index), n=3, cutoff=0.5)
        hint = f"; closest known ids: {', '.join(map(repr, close))}" if close else ""
        return RecevalError(
            f"{where} answered id {clip(brief(name))}, which is neither a chunk id nor a section id of this run{hint}"
        )


def top_lists(
    answers: list, ids: Ids | None, tie_rank: np.ndarray, depth: int, where: str, questions: list[str],
    clip: Callable[[str], str] = cut,
) -> tuple[np.ndarray, np.ndarray]:
    """Answers ((id, score) pairs per question) -> (idx (B, depth) int32 -1 padded,
    scores float64 NaN padded), ordered by the tie rule.

    Checked first, each a RecevalError naming ``where`` (the retriever) and the question:
    an answer that is not a list of (id, score) pairs, a score that is not a finite real
    number (:func:`receval.core.numeric.reals`: no strings, booleans, lists or None), an
    unknown id, and a chunk named twice in one answer (also as a section id and its
    first chunk's id). ``clip`` cuts (and for a server, redacts) what is shown of them."""
    n_rows = len(answers)
    for row, answer in enumerate(answers):
        if not isinstance(answer, (list, tuple)) or not all(
            isinstance(pair, (list, tuple)) and len(pair) == 2 for pair in answer
        ):
            raise RecevalError(
                f"{where} answered question {cut(brief(questions[row]))} with {clip(brief(answer))}: "
                "each answer is a list of (id, score) pairs"
            )
    counts = np.fromiter((len(a) for a in answers), np.int64, n_rows)
    rows = np.repeat(np.arange(n_rows), counts)
    flat = [pair for answer in answers for pair in answer]
    values = numeric.reals([score for _, score in flat])
    if values is None:
        i = next(i for i, (_, score) in enumerate(flat) if numeric.real(score) is None)
        raise RecevalError(
            f"{where} gave id {clip(brief(flat[i][0]))} the score {clip(brief(flat[i][1]))} for question "
            f"{cut(brief(questions[rows[i]]))}: scores must be finite real numbers (not strings, booleans, "
            "lists or None)"
        )
    if ids is None:  # names are chunk positions already (a table's row number)
        cols = np.fromiter((int(name) for name, _ in flat), np.int64, len(flat))
    else:
        lookup = ids.index
        cols = np.fromiter((lookup.get(str(name), -1) for name, _ in flat), np.int64, len(flat))
        if (cols < 0).any():
            i = int(np.argmax(cols < 0))
            raise ids.unknown(str(flat[i][0]), f"{where} (question {cut(brief(questions[rows[i]]))})", clip)
    order = np.lexsort((cols, rows))
    twice = np.flatnonzero((rows[order][1:] == rows[order][:-1]) & (cols[order][1:] == cols[order][:-1]))
    if twice.size:
        a, b = (flat[order[twice[0] + step]][0] for step in (0, 1))
        named = f"id {clip(brief(a))} twice" if a == b else f"one chunk twice, as {clip(brief(a))} and {clip(brief(b))}"
        raise RecevalError(
            f"{where} named {named} for question {cut(brief(questions[rows[order[twice[0]]]]))}: "
            "give each chunk at most once per answer (a section id stands for its first chunk)"
        )
    width = max(int(counts.max()) if n_rows else 0, 1)
    position = np.arange(rows.size) - np.repeat(np.cumsum(counts) - counts, counts)
    idx = np.full((n_rows, width), -1, dtype=np.int64)
    scores = np.full((n_rows, width), np.nan, dtype=np.float64)
    idx[rows, position], scores[rows, position] = cols, values
    idx, scores = sort_candidates(idx, scores, tie_rank)
    out_idx = np.full((n_rows, depth), -1, dtype=np.int32)
    out_scores = np.full((n_rows, depth), np.nan, dtype=np.float64)
    take = min(depth, width)
    out_idx[:, :take], out_scores[:, :take] = idx[:, :take], scores[:, :take]
    return out_idx, out_scores


class RankOnly(Stage):
    """Base of retrievers that answer top lists; subclasses implement ``answer``
    (and ``index`` when they build something from the chunks)."""

    floor = None
    pool = 100  # answers per question when fused or re-ranked

    def __init__(self, name: str, context, pool: int = 100):
        self.name, self.context, self.pool = name, context, int(pool)
        self.tie_rank = np.zeros(0, dtype=np.int64)
        self.ids: Ids | None = None

    def fit(self, texts: list[str], tie_rank: np.ndarray) -> None:
        chunks = self.context.chunks
        if chunks is None or len(chunks) != len(texts):
            raise RuntimeError("a rank-only retriever needs the run's chunks in its Context (context.chunks)")
        self.tie_rank = np.asarray(tie_rank)
        self.ids = Ids(chunks)
        self.index(passages(chunks, self.context.sections or []), texts)

    def index(self, records: list[Passage], texts: list[str]) -> None:
        """Build what the retriever needs from the run's chunks (nothing by default)."""

    def answer(self, questions: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def answer_calls(self, questions: list[str], k: int) -> tuple[np.ndarray, np.ndarray, list | None]:
        """``answer`` plus each question's search calls when the retriever answers with
        trajectories (:mod:`receval.retrievers.trajectory`; None: plain answers only)."""
        return (*self.answer(questions, k), None)

    def output(self, idx, scores, seconds: dict, calls: list | None, question_seconds=None) -> StageOutput:
        """A batch's StageOutput; with trajectories, ``requests.<name>`` counts each
        question's calls (a price per request is then money per call)."""
        counts = {}
        if calls is not None:  # a plain answer is one call
            made = (1 if c is None else len(c) for c in calls)
            counts[f"requests.{self.name}"] = np.fromiter(made, np.float64, len(calls))
        return StageOutput(idx, scores, seconds, counts, question_seconds=question_seconds, calls=calls)

    def rank(self, questions: list[str], depth: int) -> StageOutput:
        began = time.perf_counter()
        idx, scores, calls = self.answer_calls(questions, depth)
        return self.output(idx, scores, {self.name: time.perf_counter() - began}, calls)

    def score(self, questions: list[str]) -> np.ndarray:
        """(B, D): each question's top ``pool`` answers' scores, -inf for the rest."""
        return self.spread(*self.answer(questions, self.pool))

    def scored(self, questions: list[str]) -> Block:
        """:meth:`score` timed, with each question's search calls when the retriever
        answers with trajectories (each call cut to ``pool``, what a re-ranker sees), so
        a re-ranker or a query transform after it keeps them (``n_calls``...)."""
        began = time.perf_counter()
        idx, scores, calls = self.answer_calls(questions, self.pool)
        block = self.spread(idx, scores)
        counts = self.output(idx, scores, {}, calls).counts
        return Block(block, {self.name: time.perf_counter() - began}, counts, calls=calls)

    def spread(self, idx: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """(B, D) block holding each row's answers' scores, -inf for the other chunks."""
        block = np.full((len(idx), len(self.tie_rank)), -np.inf, dtype=np.float64)
        rows = np.broadcast_to(np.arange(len(idx))[:, None], idx.shape)
        held = idx >= 0
        block[rows[held], idx[held]] = scores[held]
        return block
