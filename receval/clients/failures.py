"""The one failure rule for every remote step (synth, judge, query transforms, LLM re-rank).

A remote step asks a server for ``asked`` items (questions to write, pairs to grade,
queries to rewrite, rankings to re-order) and sends ``sent`` requests for them
(retries and format fallbacks included; answers from the cache send none). Each item
ends ``usable`` or ``failed``; ``last_reason`` is why the latest failure failed. The
rule, the same for every step:

- nothing usable out of something asked: the step fails (exit 2), naming the last reason;
- more than half the items asked failed (:data:`MOST`, synth's old rule for duplicates,
  now everyone's): the step is refused the same way;
- the counts always say what was sent: "N requests sent, M of K answers usable".

A step that fails keeps what it already wrote (a rerun asks only for what is missing),
and says so in ``kept``. Used by ``receval judge`` (:mod:`receval.judge.job`, items are
pairs) and ``receval synth`` (:mod:`receval.synth.job`, items are questions). The query
transforms (:mod:`receval.transforms._llm`, items are questions' rewrites) and the remote
re-rankers (:mod:`receval.rerankers.llm`, :mod:`receval.rerankers.http`) hold a stricter
form of it (:func:`stop`): a run with one question unanswered would not compare, so
their first failed item stops the run (exit 2), in the same words and counts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from receval.core.errors import RecevalError

MOST = 0.5  # refused when more than this share of the items asked failed


class StepFailed(RecevalError):
    """A remote step gave nothing usable, or too little: exit 2 with the counts and the last reason."""


@dataclass(frozen=True)
class Counts:
    """What a remote step asked for and what came back."""

    step: str  # e.g. "receval.judge llm:qwen", "synth", "transform=hyde"
    sent: int  # requests sent to the server (retries included; cached answers are not sent)
    asked: int  # items asked for (pairs, questions, queries)
    usable: int  # items that came back usable (from the server or the cache)
    failed: int  # items that did not
    last_reason: str | None = None  # why the latest failed item failed
    item: str = "answer"  # the name of one item, for the message
    replayed: int = 0  # answers read from the cache (receval.clients.calls): asked by an earlier run

    def line(self) -> str:
        """``N requests sent[ (R answers replayed from the cache)], M of K answers usable, F failed``:
        the same words in every step."""
        plural = "" if self.sent == 1 else "s"
        text = f"{self.sent} request{plural} sent"
        if self.replayed:
            text += f" ({self.replayed} answer{'' if self.replayed == 1 else 's'} replayed from the cache)"
        text += f", {self.usable} of {self.asked} {self.item}s usable"
        if self.failed:
            text += f", {self.failed} failed"
            if self.last_reason:
                text += f" (last: {self.last_reason})"
        return text


def verdict(counts: Counts) -> str | None:
    """Why the step's result is refused, or None when it stands."""
    if counts.asked <= 0:
        return None
    if counts.usable <= 0:
        return f"nothing usable came back: {counts.line()}"
    if counts.failed > MOST * counts.asked:
        return f"more than half failed: {counts.line()}"
    return None


def check(counts: Counts, fix: str = "check the server's URL, model and replies, then rerun", kept: str = "") -> None:
    """Raise :class:`StepFailed` (exit 2) when :func:`verdict` refuses the step's result."""
    why = verdict(counts)
    if why is not None:
        raise StepFailed(f"{counts.step}: {why}; {fix}" + (f". {kept}" if kept else ""))


def stop(counts: Counts, fix: str) -> None:
    """The stricter form, for steps whose every item must be usable (a run with one question
    unanswered would not compare): any failed item raises :class:`StepFailed`, in the rule's
    words when :func:`verdict` refuses, else saying why one failure is enough."""
    if counts.failed <= 0:
        return
    why = verdict(counts) or f"a run with a question left unanswered would not compare: {counts.line()}"
    raise StepFailed(f"{counts.step}: {why}; {fix}")


def ask_until_failure(
    items: Sequence, ask: Callable, failed: type[Exception], concurrency: int = 1
) -> tuple[list, list[str]]:
    """``ask(item)`` for each item, ``concurrency`` at a time, for :func:`stop`'s steps: the
    first item that fails for good (``failed``, whose ``reason`` is kept) stops the rest,
    which are not sent; any other exception (a wrong key or URL, Ctrl-C) stops them too and
    is raised. Returns (the answers, in item order, the reasons of the items that failed)."""
    halt = threading.Event()

    def one(item):
        if halt.is_set():
            return None  # not asked: the run stops
        try:
            return ask(item)
        except failed as error:
            halt.set()
            return _Failed(error.reason)
        except BaseException:
            halt.set()
            raise

    if concurrency == 1 or len(items) < 2:
        results = [one(item) for item in items]
    else:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            results = list(pool.map(one, items))
    reasons = [r.reason for r in results if isinstance(r, _Failed)]
    return [r for r in results if r is not None and not isinstance(r, _Failed)], reasons


@dataclass(frozen=True)
class _Failed:
    reason: str
