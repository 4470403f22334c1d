"""receval.core.progress on a terminal: one redrawn line, warnings printed above it; off a
terminal, short work prints nothing but warnings (plain lines for long work:
tests/test_long_runs.py)."""

from __future__ import annotations

import io

from receval.core import progress


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


def test_one_line_redrawn_in_place_on_a_terminal(monkeypatch):
    err = Terminal()
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.setattr(progress, "REDRAW", 0.0)
    with progress.Progress("encoding", 2) as line:
        line.advance()
        progress.warn("careful")
        line.advance()
    out = err.getvalue()
    assert "\n" not in out.replace("receval: warning: careful\n", "")  # only the warning ends a line
    assert out.endswith("\r\x1b[K")  # the line is cleared at the end
    assert "encoding: 1/2" in out and "encoding: 2/2" in out
    before, after = out.split("receval: warning: careful\n")
    assert before.endswith("\r\x1b[K") and after.startswith("\r\x1b[Kencoding: 1/2")  # redrawn below


def test_zero_work_shows_nothing_even_on_a_terminal(monkeypatch):
    err = Terminal()
    monkeypatch.setattr("sys.stderr", err)
    with progress.Progress("questions", 0):
        pass
    assert err.getvalue() == ""
