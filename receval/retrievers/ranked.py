"""Retrievers that return top lists rather than a score for every chunk.

Your own code (``python``), a search service (``http``) and a vector database
(``lancedb``) answer "the best k for this question", not a (B, D) score block.
:class:`RankOnly` turns such answers into receval's shape:

- ``rank(questions, depth)``: each question's answers, ordered by score with the one
  tie rule (:func:`receval.ranking.sort_candidates`; equal scores by chunk id), cut
  to ``depth``; :func:`receval.retrievers.base.search` calls it directly;
- ``score(questions)``: a (B, D) block holding each question's top ``pool`` answers
  and -inf elsewhere, so the retriever can be a member of fusion or the first stage
  of re-ranking like any other (they see its top ``pool``).

Answers name chunks by id: a chunk id (``<section id>@<ordinal>``, as ``fit`` gave
them) or a section id, which stands for that section's first chunk (so a service
with its own index over whole sections needs no ``fit``; after collapsing chunks to
sections it scores exactly the section). An unknown id is an error naming it and the
closest known ids; a non-finite score is an error; an id named twice keeps its best
score. Ids and scores quoted in a message go through ``clip`` (a server's answer:
its client's redact-then-cut :func:`receval.api.clip`; by default cut only).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

import numpy as np

from receval import api
from receval.errors import RecevalError
from receval.ranking import sort_candidates

ANSWER_TEXT = 120  # characters of an answered id or score quoted in a message


def cut(text: str) -> str:
    """Answered text as a message quotes it, cut (a local answer: no secret to redact)."""
    return api.clip(text, ANSWER_TEXT)


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

    def unknown(self, name: str, where: str, clip=cut) -> RecevalError:
        close = difflib.get_close_matches(name[:200], list(self.index), n=3, cutoff=0.5)
        hint = f"; closest known ids: {', '.join(map(repr, close))}" if close else ""
        return RecevalError(
            f"{where} answered id {clip(repr(name))}, which is neither a chunk id nor a section id of this run{hint}"
        )


def top_lists(
    answers: list[list[tuple[str, float]]], ids: Ids | None, tie_rank: np.ndarray, depth: int, where: str,
    clip=cut,
) -> tuple[np.ndarray, np.ndarray]:
    """Answers ((id, score) pairs per question) -> (idx (B, depth) int32 -1 padded,
    scores float64 NaN padded), ordered by the tie rule; ``clip`` quotes answered text."""
    n_rows = len(answers)
    counts = np.fromiter((len(a) for a in answers), np.int64, n_rows)
    rows = np.repeat(np.arange(n_rows), counts)
    flat = [pair for answer in answers for pair in answer]
    if ids is None:  # names are chunk positions already (a table's row number)
        cols = np.fromiter((int(name) for name, _ in flat), np.int64, len(flat))
    else:
        lookup = ids.index
        cols = np.fromiter((lookup.get(str(name), -1) for name, _ in flat), np.int64, len(flat))
    if ids is not None and (cols < 0).any():
        raise ids.unknown(str(flat[int(np.argmax(cols < 0))][0]), where, clip)
    try:
        values = np.array([score for _, score in flat], dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        bad = next(pair for pair in flat if not _number(pair[1]))
        raise RecevalError(
            f"{where} gave id {clip(repr(bad[0]))} the score {clip(repr(bad[1]))}: scores must be numbers"
        ) from None
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.argmax(bad))
        raise RecevalError(
            f"{where} gave id {clip(repr(flat[i][0]))} the score {clip(repr(flat[i][1]))}: scores must be finite numbers"
        )
    # an id named twice (or a section and its first chunk): keep the best score
    order = np.lexsort((-values, cols, rows))
    rows, cols, values = rows[order], cols[order], values[order]
    first = np.ones(rows.size, dtype=bool)
    first[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
    rows, cols, values = rows[first], cols[first], values[first]
    width = max(int(np.bincount(rows, minlength=n_rows).max()) if rows.size else 0, 1)
    position = np.arange(rows.size) - np.searchsorted(rows, rows, side="left")
    idx = np.full((n_rows, width), -1, dtype=np.int64)
    scores = np.full((n_rows, width), np.nan, dtype=np.float64)
    idx[rows, position], scores[rows, position] = cols, values
    idx, scores = sort_candidates(idx, scores, tie_rank)
    out_idx = np.full((n_rows, depth), -1, dtype=np.int32)
    out_scores = np.full((n_rows, depth), np.nan, dtype=np.float64)
    take = min(depth, width)
    out_idx[:, :take], out_scores[:, :take] = idx[:, :take], scores[:, :take]
    return out_idx, out_scores


def _number(value) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


class RankOnly:
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

    def rank(self, questions: list[str], depth: int) -> tuple[np.ndarray, np.ndarray]:
        return self.answer(questions, depth)

    def score(self, questions: list[str]) -> np.ndarray:
        """(B, D): each question's top ``pool`` answers' scores, -inf for the rest."""
        idx, scores = self.rank(questions, self.pool)
        block = np.full((len(questions), len(self.tie_rank)), -np.inf, dtype=np.float64)
        rows = np.broadcast_to(np.arange(len(questions))[:, None], idx.shape)
        held = idx >= 0
        block[rows[held], idx[held]] = scores[held]
        return block
