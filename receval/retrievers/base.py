"""The stage protocol and the one search loop every retriever goes through.

Every first stage, fused retriever and re-ranked pipeline is a :class:`Stage`. A stage
is fitted on chunk texts once; then, per batch of questions, ``rank`` returns a
:class:`StageOutput` (each question's top chunks with scores, the seconds each inner
stage took, per-question counts). What a stage carries about itself is declared on the
base class with its neutral value (no paid calls, no facts, nothing truncated, no
children), so a stage that has something to report overrides it, and nothing is probed
with ``hasattr``. Per-call results travel in the :class:`StageOutput`, never on the
(possibly shared) stage object.

``search`` batches the questions, calls ``rank`` and times each batch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from receval.clients.calls import Replay, merged
from receval.core.progress import Progress
from receval.run.ranking import select_top

# Cap on one dense score block (questions x chunks), in floats: bounds memory on
# large corpora whatever the batch size.
MAX_BLOCK = 1 << 25


@dataclass(frozen=True)
class Block:
    """A batch's (B, D) scores of every question against every chunk, the wall seconds
    of each stage that made them (a fused retriever: its members and ``fusion``), and
    what a query transform counted per question (:class:`StageOutput`'s fields), and
    ``calls``: per question, the search calls of a trajectory answer (a rank-only
    retriever's, :mod:`receval.retrievers.trajectory`), or None, which a re-ranker or a
    query transform after it passes on in its own :class:`StageOutput`."""

    scores: np.ndarray
    seconds: dict[str, float]
    counts: dict[str, np.ndarray] = field(default_factory=dict)
    tokens_estimated: frozenset[str] = frozenset()
    replayed: dict[str, Replay] = field(default_factory=dict)
    calls: list | None = None


@dataclass(frozen=True)
class StageOutput:
    """One batch ranked by a stage.

    ``idx`` (B, depth) int32 chunk indices, -1 padded, best first by the tie rule;
    ``scores`` (B, depth) float64, NaN padded; ``seconds``: wall seconds per inner stage
    (members, ``fusion``, ``rerank``, ``select``) for the whole batch; ``counts``:
    per-question (B,) counts (``pairs_scored``, ``requests.rerank``...);
    ``question_seconds``: each question's own wall time when the stage measures it
    (concurrent requests), else None (the batch's time is shared out);
    ``tokens_estimated``: stages whose token counts were estimated, not reported;
    ``replayed``: per stage, the answers replayed from the cache (:class:`Replay`): the
    stage's ``seconds`` already hold their live time; the batch's wall time does not.
    ``calls``: per question, the search calls of a trajectory answer
    (:mod:`receval.retrievers.trajectory`; None for a plain answer), or None."""

    idx: np.ndarray
    scores: np.ndarray
    seconds: dict[str, float]
    counts: dict[str, np.ndarray] = field(default_factory=dict)
    question_seconds: np.ndarray | None = None
    tokens_estimated: frozenset[str] = frozenset()
    replayed: dict[str, Replay] = field(default_factory=dict)
    calls: list | None = None


class Stage:
    """Base of every retriever: ``fit`` once, then ``score`` or ``rank`` per batch.

    A subclass implements ``fit`` and either ``score`` (a (B, D) block; ``rank`` then
    selects each row's top by the tie rule above ``floor``) or ``rank`` itself (stages
    that answer top lists, or order a shortlist). ``tie_rank`` is set by ``fit``."""

    name: str = "stage"
    floor: float | None = None  # scores at or below are never retrieved (None: keep any finite)
    api_calls: int = 0  # paid requests so far (a property where a client counts them)
    truncated: int | None = None  # chunks the stage's model cut at its token limit (None: unknown)
    tie_rank: np.ndarray = np.zeros(0, dtype=np.int64)
    encoder = None  # the encoder a dense stage embeds questions with (priced when remote)
    # answers each question by a request no answer cache keeps (a search service, an embeddings
    # API): a timing repeat would ask it again, so timing.repeats > 1 is refused for it
    asks_per_question: bool = False

    def fit(self, texts: list[str], tie_rank: np.ndarray) -> None:
        """Index the chunk texts; ``tie_rank`` is their id order (for stages that rank)."""
        raise NotImplementedError

    def score(self, questions: list[str]) -> np.ndarray:
        """(B, D) scores of each question against each fitted chunk."""
        raise NotImplementedError(f"{type(self).__name__} ranks its own top lists; it has no score block")

    def scored(self, questions: list[str]) -> Block:
        """``score`` with its wall time under the stage's name (fused stages: per member)."""
        began = time.perf_counter()
        scores = self.score(questions)
        return Block(scores, {self.name: time.perf_counter() - began})

    def rank(self, questions: list[str], depth: int) -> StageOutput:
        """Each question's top ``depth`` chunks: the block's best by the tie rule."""
        block = self.scored(questions)
        began = time.perf_counter()
        idx, scores = select_top(block.scores, depth, self.tie_rank, floor=self.floor)
        seconds = {**block.seconds, "select": time.perf_counter() - began}
        return StageOutput(idx, scores, seconds, block.counts, tokens_estimated=block.tokens_estimated,
                           replayed=block.replayed)

    def timed(self) -> list[str]:
        """The names ``rank`` reports seconds under (before ``select``): the run's
        ``latency_ms.<stage>`` columns."""
        return [self.name]

    def children(self) -> tuple[Stage, ...]:
        """The stages inside this one (fused members, a re-ranked first stage, the
        retriever a re-ranker scores with)."""
        return ()

    def calls(self) -> dict[str, int]:
        """Paid requests so far per stage name (members by name)."""
        inner = self.children()
        if not inner:
            return {self.name: self.api_calls}
        found: dict[str, int] = {}
        for child in inner:
            found.update(child.calls())
        return found

    def facts(self) -> dict:
        """What the stage measured over the run for ``run.json`` (lancedb's ``ann_recall@k``)."""
        return {}

    def encoder_threads(self) -> int | None:
        """Threads the stage's encoder runs at once where it sets them itself (onnx)."""
        return None

    def forget(self) -> None:
        """Drop anything remembered about the last batch (after the warm-up search)."""

    def repeat(self) -> None:
        """Before a timing repeat (``timing.repeats``, :func:`receval.run.stages.timed_search`):
        drop what would let the repeat skip local work (a dense stage's last batch) and
        count nothing more into the run's record: a repeat only times."""

    def release(self) -> None:
        """Drop the index once the run's questions are answered."""


Retriever = Stage  # the name the rest of receval and users' type hints know


@dataclass(frozen=True)
class Hits:
    """Top chunks of every question: ``chunk_idx`` (Q, depth) int32, -1 padded;
    ``scores`` (Q, depth) float64; ``latency_ms`` (Q,) amortised over each batch;
    ``stage_ms``: the same per stage of a multi-stage retriever (member retrievers,
    fusion, rerank), plus ``select`` for top-k selection; ``counts``: per-question
    counts the stages report (``pairs_scored``, ``requests.rerank``...);
    ``tokens_estimated``: stages whose tokens were estimated in any batch;
    ``calls``: per question, its search calls when the stage answered any question with
    a trajectory (None for a plain answer), else None."""

    chunk_idx: np.ndarray
    scores: np.ndarray
    latency_ms: np.ndarray
    stage_ms: dict[str, np.ndarray]
    counts: dict[str, np.ndarray] = field(default_factory=dict)
    tokens_estimated: frozenset[str] = frozenset()
    replayed: dict[str, Replay] = field(default_factory=dict)
    calls: list | None = None


def search(
    retriever: Stage,
    questions: list[str],
    depth: int,
    tie_rank: np.ndarray,
    batch_size: int = 256,
    label: str | None = "searching",
) -> Hits:
    """Rank all questions in batches and keep each one's best ``depth`` chunks.

    Latency per question is its batch's wall time (scoring and selection) divided by
    the batch size, or the question's own time when the stage measures it, with a
    replayed answer's live time in place of the replay's own (:class:`Replay`);
    ``search_batch=1`` times each question on its own. ``label``: the progress line's
    stage (:mod:`receval.core.progress`; ``None``: no line); it is updated after each
    batch, outside the timed part.
    """
    n_chunks = max(len(tie_rank), 1)
    step = max(1, min(batch_size, MAX_BLOCK // n_chunks))
    idx = np.full((len(questions), depth), -1, dtype=np.int32)
    scores = np.full((len(questions), depth), np.nan, dtype=np.float64)
    latency = np.zeros(len(questions), dtype=np.float64)
    stage_ms: dict[str, np.ndarray] = {}
    counts: dict[str, np.ndarray] = {}
    estimated: set[str] = set()
    replayed: dict[str, Replay] = {}
    calls: list | None = None
    shown = None if label is not None else False
    with Progress(label or "", len(questions), shown, unit="questions") as line:
        for start in range(0, len(questions), step):
            batch = questions[start : start + step]
            began = time.perf_counter()
            out = retriever.rank(batch, depth)
            elapsed = time.perf_counter() - began
            rows = slice(start, start + len(batch))
            idx[rows], scores[rows] = out.idx, out.scores
            own = out.question_seconds
            shift = sum(replay.shift for replay in out.replayed.values()) / len(batch)
            latency[rows] = 1000.0 * (shift + (own if own is not None and len(own) == len(batch) else elapsed / len(batch)))
            replayed = merged(replayed, out.replayed)
            # a stage that ranks by itself selects inside its own time: "select" is 0 there
            for stage, seconds in {**out.seconds, "select": out.seconds.get("select", 0.0)}.items():
                stage_ms.setdefault(stage, np.zeros(len(questions)))[rows] = 1000.0 * seconds / len(batch)
            for name, values in out.counts.items():
                counts.setdefault(name, np.zeros(len(questions)))[rows] = values
            estimated |= out.tokens_estimated
            if out.calls is not None:
                calls = calls or [None] * len(questions)
                calls[rows] = out.calls
            line.advance(len(batch))
    return Hits(idx, scores, latency, stage_ms, counts, frozenset(estimated), replayed, calls)
