"""Evidence labels: the passages that answer a question, as character spans of pages.

A question may label, beside or instead of sections:

- ``"evidence": ["exact quote", {"quote": "...", "page": "essay-1"}]``: each quote is
  looked up in the page texts with whitespace ignored (any run of spaces, tabs and
  newlines matches any other, so a quote may run across a paragraph break) and under
  Unicode NFC on both sides (a quote typed with a composed "é" matches a page that
  stores "e" + a combining accent, as macOS and some PDF exports write it; the span
  found is in the page's own characters). Not found is an error naming the closest
  passage; found in more than one place is an error unless the item names its
  ``page`` (and is unique there).
- ``"spans": [{"page": "essay-1", "start": 1200, "end": 1450}]``: character offsets
  into the page file's text (Python string indices; ``end`` exclusive). A span
  holding only whitespace is an error: nothing in it can be retrieved or covered.

Page names, as section labels, are compared in NFC.

Both become :class:`~receval.datasets.Evidence` items (page, start, end).
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from bisect import bisect_right
from dataclasses import replace

import numpy as np

from receval.datasets.types import Evidence, Question, Section

_WORD = re.compile(r"\S+")
_QUOTE_SHOWN = 80


def parse_evidence(record: dict, where: str) -> tuple[tuple[Evidence, ...], list[str]]:
    """The ``evidence`` and ``spans`` keys of one question record (quotes not located yet)."""
    items: list[Evidence] = []
    problems: list[str] = []
    quotes = record.get("evidence")
    if quotes is not None:
        if not isinstance(quotes, list):
            quotes = [None]
        for quote in quotes:
            page = None
            if isinstance(quote, dict):
                quote, page = quote.get("quote"), quote.get("page")
            if not isinstance(quote, str) or not quote.split() or not (page is None or isinstance(page, str)):
                problems.append(
                    f"{where}: 'evidence' must list quotes, each a string or "
                    '{"quote": "...", "page": "PAGE"}' + f", got {quote!r}"
                )
                continue
            items.append(Evidence(_nfc(page), -1, -1, quote))
    spans = record.get("spans")
    if spans is not None:
        for span in spans if isinstance(spans, list) else [spans]:
            ok = isinstance(span, dict) and isinstance(span.get("page"), str) and all(
                isinstance(span.get(key), int) and not isinstance(span.get(key), bool) for key in ("start", "end")
            )
            if not ok or not 0 <= span["start"] < span["end"]:
                problems.append(
                    f"{where}: 'spans' must list objects "
                    '{"page": "PAGE", "start": INT, "end": INT} with 0 <= start < end' + f", got {span!r}"
                )
                continue
            items.append(Evidence(_nfc(span["page"]), span["start"], span["end"]))
    return tuple(items), problems


def _nfc(text: str | None) -> str | None:
    return None if text is None else unicodedata.normalize("NFC", text)


def _nfc_offset(word: str, position: int) -> int:
    """A position in NFC(word) -> the matching position in ``word``: the longest prefix
    whose NFC is no longer than ``position`` (so a start never splits a composed
    character from its accents, and an end takes them all)."""
    return bisect_right(range(len(word) + 1), position, key=lambda j: len(unicodedata.normalize("NFC", word[:j]))) - 1


def closest_pages(page: str, pages) -> list[str]:
    """The page ids most like a mistyped one, best first."""
    return difflib.get_close_matches(page, list(pages), n=3, cutoff=0.5)


def pages_from_sections(sections: list[Section]) -> dict[str, str]:
    """Page texts rebuilt from sections at their offsets (gaps, such as headings, become
    spaces): for callers that read sections without their page files."""
    ends: dict[str, int] = {}
    for section in sections:
        ends[section.page] = max(ends.get(section.page, 0), section.end)
    buffers = {page: [" "] * end for page, end in ends.items()}
    for section in sections:
        buffers[section.page][section.start : section.end] = section.text
    return {page: "".join(chars) for page, chars in buffers.items()}


class PageIndex:
    """Page texts with whitespace collapsed and each word in NFC, for quote search that
    ignores whitespace and Unicode normalisation; positions map back to the page's own
    characters (only words NFC changes need more than an addition)."""

    def __init__(self, pages: dict[str, str]):
        self.pages = pages
        self.norm: dict[str, str] = {}
        self._maps: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._changed: dict[str, dict[int, str]] = {}  # page -> word number -> the word as the page has it
        for page, text in pages.items():
            spans = [(m.start(), m.end()) for m in _WORD.finditer(text)]
            words = [text[s:e] for s, e in spans]
            changed: dict[int, str] = {}
            if not unicodedata.is_normalized("NFC", text):
                for i, word in enumerate(words):
                    if (composed := unicodedata.normalize("NFC", word)) != word:
                        changed[i], words[i] = word, composed
            starts = np.fromiter((s for s, _ in spans), np.int64, len(spans))
            lengths = np.fromiter((len(w) for w in words), np.int64, len(words))
            norm_starts = np.concatenate([[0], np.cumsum(lengths + 1)[:-1]]).astype(np.int64)
            self.norm[page] = " ".join(words)
            self._maps[page] = (norm_starts, starts)
            self._changed[page] = changed
        # every page in one string (NUL between pages: never in a quote), searched at C speed
        self._names = list(self.norm)
        self._joined = "\0".join(self.norm.values())
        sizes = np.fromiter((len(t) + 1 for t in self.norm.values()), np.int64, len(self.norm))
        self._offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)

    def original(self, page: str, position: int) -> int:
        """A position (a start, or an exclusive end) in the collapsed text -> the same
        place in the page."""
        norm_starts, starts = self._maps[page]
        word = int(np.searchsorted(norm_starts, position, side="right")) - 1
        offset = position - int(norm_starts[word])
        if word in self._changed[page]:
            offset = _nfc_offset(self._changed[page][word], offset)
        return int(starts[word]) + offset

    def find(self, quote: str, page: str | None, limit: int = 2) -> list[tuple[str, int, int]]:
        """Up to ``limit`` places (page, start, end) of the quote in the pages."""
        needle = " ".join(unicodedata.normalize("NFC", quote).split())
        text, base = (self.norm[page], 0) if page is not None else (self._joined, None)
        found, at = [], -1
        while len(found) < limit and (at := text.find(needle, at + 1)) >= 0:
            name, local = page, at
            if base is None:
                i = int(np.searchsorted(self._offsets, at, side="right")) - 1
                name, local = self._names[i], at - int(self._offsets[i])
            found.append((name, self.original(name, local), self.original(name, local + len(needle))))
        return found

    def closest(self, quote: str, page: str | None) -> str:
        """The passage sharing the longest run of words with the quote, for messages."""
        words = quote.split()[:60]
        for n in range(len(words), 0, -1):
            for i in range(len(words) - n + 1):
                places = self.find(" ".join(words[i : i + n]), page, limit=1)
                if places:
                    name, start, _ = places[0]
                    passage = " ".join(self.pages[name][start:].split()[: len(words)])
                    return f"{name}:{start}: {passage[:_QUOTE_SHOWN]!r}"
        return "no word of it occurs in the pages"


def locate(question: Question, at: str, index: PageIndex) -> tuple[Question, list[str]]:
    """The question with every quote located and every span checked against the pages."""
    items, problems = [], []
    for item in question.evidence:
        if item.page is not None and item.page not in index.pages:
            problems.append(
                f"{at}: question {question.id!r} names page {item.page!r}, which is not among "
                f"the pages; closest: {', '.join(closest_pages(item.page, index.pages)) or 'none'}"
            )
            continue
        if item.quote is None:
            size = len(index.pages[item.page])
            if item.end > size:
                problems.append(
                    f"{at}: question {question.id!r} span {item.label} ends past the page's "
                    f"{size} characters; give offsets into the page file's text"
                )
            elif not index.pages[item.page][item.start : item.end].strip():
                problems.append(
                    f"{at}: question {question.id!r} span {item.label} holds only whitespace "
                    f"({index.pages[item.page][item.start : item.end]!r}); give the offsets of the "
                    "passage's words"
                )
            items.append(item)
            continue
        places = index.find(item.quote, item.page)
        shown = " ".join(item.quote.split())[:_QUOTE_SHOWN]
        if not places:
            problems.append(
                f"{at}: question {question.id!r} quotes {shown!r}, which is not in the "
                f"{'page' if item.page else 'pages'} (compared with whitespace ignored and both in "
                f"Unicode NFC); closest: {index.closest(item.quote, item.page)}"
            )
        elif len(places) > 1:
            where = ", ".join(f"{p}:{s}" for p, s, _ in places)
            fix = "quote more text" if item.page else '"page" it is on, or quote more text'
            problems.append(
                f"{at}: question {question.id!r} quotes {shown!r}, found in more than one place "
                f"({where}); give the {fix}"
            )
        else:
            page, start, end = places[0]
            items.append(Evidence(page, start, end, item.quote))
    return replace(question, evidence=tuple(items)), problems
