"""Warnings and progress on stderr: the one place that prints them.

Progress on long work (loading a model, encoding, searching and re-ranking, synth
requests) shows in one of two ways:

- on a terminal, a :mod:`rich.progress` display (one line per piece of work open:
  label, bar, done/total, time left), cleared when the work ends;
- anywhere else (a log file, a pipe, a batch job), a plain line at most every
  ``RECEVAL_PROGRESS_SECONDS`` seconds (default 10): stage, done/total, rate and time
  left, and a last line with the total time when the work took that long. Short work
  prints nothing, so logs get no debris.

Warnings go through Python's :mod:`warnings` as :class:`~receval.core.errors.RecevalWarning`,
so a Python caller filters or records them like any other warning
(``warnings.filterwarnings("ignore", category=RecevalWarning)``). receval shows them
as ``receval: warning: <message>`` on stderr, above any progress line, each time they
occur. Safe across threads (synth's workers).
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
import warnings

from rich.console import Console
from rich.progress import BarColumn, SpinnerColumn, TextColumn, TimeRemainingColumn
from rich.progress import Progress as RichProgress

from receval.core.errors import RecevalError, RecevalWarning
from receval.core.terminal import printable_lines

_LOCK = threading.RLock()
_ACTIVE: list["Progress"] = []  # terminal lines open (tasks of _DISPLAY)
_DISPLAY: RichProgress | None = None  # the one rich display while a terminal line is open
REDRAW = 0.1  # seconds between redraws of the terminal display
EVERY_ENV = "RECEVAL_PROGRESS_SECONDS"
EVERY = 10.0  # seconds between plain lines off a terminal, unless EVERY_ENV says otherwise


def warn(message: str) -> None:
    """Issue ``message`` as a :class:`RecevalWarning` (shown as ``receval: warning: ...``)."""
    warnings.warn(message, RecevalWarning, stacklevel=2)


def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` for receval's warnings: one ``receval: warning:`` line on
    stderr, with the terminal's progress line cleared first and redrawn below it; any
    other warning goes to the hook that was there before."""
    if not (isinstance(category, type) and issubclass(category, RecevalWarning)):
        return _shown_before(message, category, filename, lineno, file, line)
    message = printable_lines(str(message))  # stored text in a warning is shown, never obeyed
    with _LOCK:
        if _DISPLAY is not None and file is None:  # printed above the display, which stays
            _DISPLAY.console.print(f"receval: warning: {message}", markup=False, highlight=False, soft_wrap=True)
            return
        stream = file or sys.stderr
        if stream is None:
            return
        stream.write(f"receval: warning: {message}\n")
        stream.flush()


_shown_before = warnings.showwarning
warnings.showwarning = show_warning
# every occurrence is shown (each job of a sweep says what it found); appended, so a
# caller's own filters come first
warnings.filterwarnings("always", category=RecevalWarning, append=True)


def on_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def every_seconds() -> float:
    """Seconds between plain progress lines: ``$RECEVAL_PROGRESS_SECONDS`` or 10."""
    text = os.environ.get(EVERY_ENV, "").strip()
    if not text:
        return EVERY
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise RecevalError(f"{EVERY_ENV}={text!r}: use a number of seconds >= 0 (10 by default)")
    return value


def duration(seconds: float) -> str:
    """``42s``, ``3m 05s``, ``2h 10m``: short, for a progress line."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m {seconds % 60:02d}s"
    return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"


def per_second(rate: float) -> str:
    """``1234/s``, ``16.2/s``, ``0.333/s``: three figures at most, never an exponent."""
    if rate >= 100:
        return f"{rate:.0f}/s"
    if rate >= 10:
        return f"{rate:.1f}/s"
    return f"{rate:.3g}/s" if rate >= 0.001 else f"{rate:.4f}/s"


class Progress:
    """``with Progress(label, total, unit="texts") as p: p.advance(n)``; ``total=None`` for
    a status line (no count).

    ``shown``: ``False`` prints nothing; ``True`` or ``None`` (the default) shows the
    redrawn line on a terminal and plain lines elsewhere. Never shown when ``total`` is
    0. ``every``: seconds between plain lines (default :func:`every_seconds`).
    """

    def __init__(
        self, label: str, total: int | None = None, shown: bool | None = None, unit: str = "",
        every: float | None = None,
    ):
        self.label, self.total, self.unit, self.done = label, total, unit, 0
        if shown is False or total == 0:
            self.mode = "off"
        else:
            self.mode = "line" if on_terminal() else "plain"
        self.every = every_seconds() if every is None else float(every)
        self._started = self._drawn = self._printed = 0.0
        self.lines = 0  # plain lines printed

    @property
    def shown(self) -> bool:
        return self.mode != "off"

    def __enter__(self) -> "Progress":
        self._started = self._printed = time.monotonic()
        if self.mode == "line":
            with _LOCK:
                display = _display()
                self._task = display.add_task(self.label, total=self.total, count=self.count())
                _ACTIVE.append(self)
                self._draw(force=True)
        return self

    def advance(self, n: int = 1) -> None:
        with _LOCK:
            self.done += n
            if self.mode == "line":
                self._draw()
            elif self.mode == "plain":
                now = time.monotonic()
                if now - self._printed >= self.every:
                    self._printed = now
                    self._print(self.status(now))

    def count(self) -> str:
        """``done/total unit`` (nothing for a status line without a total)."""
        if not self.total:
            return ""
        return f"{self.done}/{self.total}" + (f" {self.unit}" if self.unit else "")

    def status(self, now: float) -> str:
        """``label: done/total unit (pct), rate/s, left``: what a plain line says now."""
        if not self.total:
            return f"{self.label}: {duration(now - self._started)} so far"
        elapsed = max(now - self._started, 1e-9)
        rate = self.done / elapsed
        text = f"{self.label}: {self.count()} ({100 * self.done / self.total:.0f}%), {per_second(rate)}"
        if 0 < self.done < self.total and rate > 0:
            text += f", {duration((self.total - self.done) / rate)} left"
        return text

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._drawn < REDRAW:
            return
        self._drawn = now
        if _DISPLAY is not None:
            _DISPLAY.update(self._task, completed=self.done, count=self.count())
            _DISPLAY.refresh()

    def _print(self, text: str) -> None:
        self.lines += 1
        sys.stderr.write(f"receval: {text}\n")
        sys.stderr.flush()

    def __exit__(self, *exc) -> None:
        now = time.monotonic()
        with _LOCK:
            if self.mode == "line":
                if self in _ACTIVE:
                    _ACTIVE.remove(self)
                    _close(self._task)
            elif self.mode == "plain" and exc[0] is None and (self.lines or now - self._started >= self.every):
                took = now - self._started
                if self.total:
                    unit = f" {self.unit}" if self.unit else ""
                    rate = self.done / max(took, 1e-9)
                    self._print(f"{self.label}: {self.done}/{self.total}{unit} in {duration(took)} ({per_second(rate)})")
                else:
                    self._print(f"{self.label}: done in {duration(took)}")


def _display() -> RichProgress:
    """The rich display the open terminal lines share, started by the first one (rich
    allows one live display per console; nested work adds a line to it)."""
    global _DISPLAY
    if _DISPLAY is None:
        console = Console(file=sys.stderr, force_terminal=True, highlight=False)
        _DISPLAY = RichProgress(
            SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[count]}"),
            TimeRemainingColumn(),
            console=console, transient=True, auto_refresh=False,
            redirect_stdout=False, redirect_stderr=False,
        )
        _DISPLAY.start()
    return _DISPLAY


def _close(task) -> None:
    """Remove a finished line; the last one stops the display, which clears it."""
    global _DISPLAY
    if _DISPLAY is None:
        return
    _DISPLAY.remove_task(task)
    if _ACTIVE:
        _DISPLAY.refresh()
        return
    _DISPLAY.stop()
    _DISPLAY = None
