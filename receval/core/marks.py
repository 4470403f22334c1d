"""Combining marks: the part of a word Python's ``\\w`` leaves out.

``\\w`` matches letters, digits and ``_``, not the combining marks (Unicode categories
Mn, Mc, Me) that many scripts write words with: Thai vowel and tone marks (``กัน``),
Devanagari vowel signs (``हिन्दी``), Arabic harakat, Hebrew points, a decomposed accent
(``e`` + U+0301). ``\\w+`` cuts such a word at every mark. Every rule that finds words
(the lexical tokenizer, synth's duplicate test, ``--show``'s snippets, the token
estimate, heading slugs) takes its word characters from here: ``\\w`` and the marks.

The table is read from :mod:`unicodedata` when this module is imported (Python's
Unicode version), over the planes that hold marks (the Basic Multilingual Plane, the
Supplementary Multilingual Plane and the variation selectors, U+E0100-U+E01EF): about
25 ms. Matching: marks of the Basic Multilingual Plane are a bitmap lookup, astral
ones make the regex engine walk ranges, so :func:`words` uses the astral table only for
text that holds an astral character.
"""

from __future__ import annotations

import re
import unicodedata

_PLANES = (range(0x20000), range(0xE0000, 0xE0200))  # where Unicode puts its combining marks


def _class_body(codes: list[int]) -> str:
    """A character class's body (``a-zé``) of the code points ``codes`` (sorted)."""
    ranges: list[list[int]] = []
    for code in codes:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    return "".join(re.escape(chr(lo)) + (f"-{re.escape(chr(hi))}" if hi > lo else "") for lo, hi in ranges)


_CODES = [code for plane in _PLANES for code in plane if unicodedata.category(chr(code)).startswith("M")]
MARKS_BMP = _class_body([code for code in _CODES if code < 0x10000])  # a character class's body
MARKS = MARKS_BMP + _class_body([code for code in _CODES if code >= 0x10000])  # every mark
WORD = re.compile(f"[\\w{MARKS_BMP}]+")  # a word, marks of the Basic Multilingual Plane included
WORD_ANY = re.compile(f"(?:[\\w{MARKS_BMP}]|[{MARKS[len(MARKS_BMP):]}])+")  # a word, astral marks too
_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")


def words(text: str) -> list[str]:
    """The words of ``text``: runs of ``\\w`` characters and combining marks (``กันยายน``
    is one word, where ``\\w+`` finds ``ก`` and ``นยายน``)."""
    return (WORD_ANY if _ASTRAL.search(text) else WORD).findall(text)
