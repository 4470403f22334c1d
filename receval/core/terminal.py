"""Stored text made safe to print: names, ids and config values come from files anyone
may have written, and a terminal obeys escape sequences in them (``\\x1b[31m`` colours
the rest of the screen, ``\\x1b]0;...`` retitles the window, ``\\x1b[2J`` clears it).

:func:`printable` is the one rule every terminal renderer applies to stored text (the
tables of :mod:`receval.render.tables`, ``report --show``, ``reproduce``'s lines, one-line
messages): each control character (C0 but space, DEL, C1) and each bidirectional
override (U+202A-U+202E, U+2066-U+2069, which can make text read backwards) is shown as
its Python escape (``\\x1b``, ``\\u202e``), so the text is seen, never obeyed. Tabs and
newlines are escaped too: one stored value stays one cell or one line.
"""

from __future__ import annotations

_CONTROLS = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]
_BIDI = [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_ESCAPED = {code: (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}") for code in (*_CONTROLS, *_BIDI)}


def printable(text: str) -> str:
    """``text`` with every control character and bidirectional override escaped
    (``"run\\x1b[31m"`` prints as ``run\\x1b[31m``, never red)."""
    return text.translate(_ESCAPED)


def printable_lines(text: str) -> str:
    """A multi-line text (a whole ``--show`` block) through :func:`printable` line by line:
    its own line breaks kept, any other control character escaped."""
    return "\n".join(printable(line) for line in text.split("\n"))
