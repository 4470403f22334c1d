"""Warnings that add up: a count per step, said once when the step's work is done.

Some findings come one answer at a time (a key hidden from an answer, a cache entry
refused), in batches of one question or one pair; a warning each would bury the run's
output in copies. A step adds its counts here (:func:`add`), and the command says each
total once (:func:`say`): a run after its search, ``synth`` and ``judge`` when their
answers are in; each starts with none (:func:`clear`). Thread-safe; each process keeps
its own (a remote job says its own).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from receval.core.progress import warn

_LOCK = threading.Lock()
_COUNTS: dict[tuple[str, Callable[[str, int], str]], int] = {}


def add(step: str, count: int, words: Callable[[str, int], str]) -> None:
    """Add ``count`` to ``step``'s tally of what ``words(step, total)`` says."""
    if count <= 0:
        return
    with _LOCK:
        _COUNTS[(step, words)] = _COUNTS.get((step, words), 0) + int(count)


def clear() -> None:
    """Forget every tally: a command starts with none (what code called before it counted,
    outside any command, is not this command's to say)."""
    with _LOCK:
        _COUNTS.clear()


def say() -> None:
    """Warn once per tally (step and finding), in the order they were first added; then forget them."""
    with _LOCK:
        found = list(_COUNTS.items())
        _COUNTS.clear()
    for (step, words), total in found:
        warn(words(step, total))
