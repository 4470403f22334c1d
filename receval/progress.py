"""Warnings and progress on stderr: the one place that prints them.

Progress on long work (loading a model, encoding, synth requests) is a single line
redrawn in place when stderr is a terminal, and nothing at all otherwise (logs and
pipes get no bar debris). :func:`warn` clears the line, prints the warning, and the
line comes back on the next update. Safe across threads (synth's workers).
"""

from __future__ import annotations

import sys
import threading
import time

_LOCK = threading.Lock()
_ACTIVE: list["Progress"] = []  # the line on screen, if any
REDRAW = 0.1  # seconds between redraws


def warn(message: str) -> None:
    """``receval: warning: <message>`` on stderr, above any progress line."""
    with _LOCK:
        stream = sys.stderr
        if _ACTIVE:
            stream.write("\r\x1b[K")
        stream.write(f"receval: warning: {message}\n")
        stream.flush()
        if _ACTIVE:
            _ACTIVE[-1]._draw(force=True)


def shown_by_default() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """``with Progress(label, total) as p: p.advance(n)``; ``total=None`` for a status line.

    ``shown``: draw the line (default: when stderr is a terminal). Never shown when
    ``total`` is 0.
    """

    def __init__(self, label: str, total: int | None = None, shown: bool | None = None):
        self.label, self.total, self.done = label, total, 0
        self.shown = (shown_by_default() if shown is None else shown) and total != 0
        self._started = self._drawn = 0.0

    def __enter__(self) -> "Progress":
        if self.shown:
            self._started = time.monotonic()
            with _LOCK:
                _ACTIVE.append(self)
                self._draw(force=True)
        return self

    def advance(self, n: int = 1) -> None:
        with _LOCK:
            self.done += n
            if self.shown:
                self._draw()

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._drawn < REDRAW:
            return
        self._drawn = now
        text = f"{self.label} ..."
        if self.total:
            text = f"{self.label}: {self.done}/{self.total}"
            rate = self.done / max(now - self._started, 1e-9)
            if 0 < self.done < self.total and rate > 0:
                text += f", {(self.total - self.done) / rate:.0f}s left"
        sys.stderr.write(f"\r\x1b[K{text}")
        sys.stderr.flush()

    def __exit__(self, *exc) -> None:
        if self.shown:
            with _LOCK:
                if self in _ACTIVE:
                    _ACTIVE.remove(self)
                sys.stderr.write("\r\x1b[K")
                sys.stderr.flush()
                if _ACTIVE:
                    _ACTIVE[-1]._draw(force=True)
