"""receval.core.progress on a terminal: a rich display, warnings printed above it; off a
terminal, short work prints nothing but warnings (plain lines for long work:
tests/test_long_runs.py)."""

from __future__ import annotations

import io
import re

from receval.core import progress

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_short_work_prints_nothing_but_warnings_when_stderr_is_not_a_terminal(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    with progress.Progress("encoding", 3) as line:
        line.advance(2)
        progress.warn("careful")
        line.advance(1)
    assert err.getvalue() == "receval: warning: careful\n"
    assert line.done == 3


def test_a_rich_display_on_a_terminal_with_warnings_above_it(monkeypatch):
    err = Terminal()
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.setattr(progress, "REDRAW", 0.0)
    with progress.Progress("encoding", 2, unit="texts") as line:
        line.advance()
        progress.warn("careful")
        with progress.Progress("loading model"):  # nested work: a second line of the one display
            assert len(progress._ACTIVE) == 2 and len(progress._DISPLAY.tasks) == 2
        line.advance()
    out = err.getvalue()
    plain = ANSI.sub("", out)
    assert "loading model" in plain and "0/?" not in plain  # a status line has no count
    before, after = plain.split("receval: warning: careful\n")  # the warning is one whole line ...
    assert "encoding" in before and "1/2 texts" in before
    assert "1/2 texts" in after and "2/2 texts" in after  # ... and the display is redrawn below it
    assert "\x1b[2K" in out[out.rindex("2/2 texts"):]  # the display is cleared at the end
    assert progress._DISPLAY is None and progress._ACTIVE == []


def test_zero_work_shows_nothing_even_on_a_terminal(monkeypatch):
    err = Terminal()
    monkeypatch.setattr("sys.stderr", err)
    with progress.Progress("questions", 0):
        pass
    assert err.getvalue() == ""
