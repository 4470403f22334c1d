"""The evidence of a synthetic question: the quotes the model gives, found in the
passage it was shown, as character spans of the page.

A question's label is where its answer is, not the whole unit it was written from:
labelled with a whole 40-word chunk, a question is found at once by 40-word chunks
and only by covering half of that chunk at any other size, so a chunk-size sweep
over such questions favours the size that generated them. A quote is looked up in
the unit's own characters of the page (for a chunk, ``page[start:end]``) with
whitespace ignored and under Unicode NFC (:class:`receval.datasets.evidence.PageIndex`), its
first place in the unit taken; a quote not in the passage is a bad reply (asked
again, as malformed JSON is). For ``multi`` every passage must be quoted.

The prompt shows a passage's heading on a ``Heading:`` line above its text, so a quote
may begin with what is shown there (``Heading: Opening hours The library opens at
9``, or the heading without its label): that beginning is left off and the rest
located. A quote of the heading alone quotes its passage but has no span (the heading
is not among the unit's characters); a question none of whose quotes has a span is
labelled by its sections, as when offsets are not known.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from receval.datasets import Section
from receval.datasets.evidence import PageIndex
from receval.synth.prompts import HEADING
from receval.synth.units import Unit


@dataclass(frozen=True)
class Source:
    """A unit's characters as its page has them, and where they start (-1: offsets
    not known, so quotes are checked against the unit's text and give no span)."""

    page: str
    start: int
    text: str
    heading: str = ""  # shown above the text on a ``Heading:`` line ("" when none was shown)


def _flat(text: str) -> str:
    """Whitespace runs as one space, in Unicode NFC: how quotes are compared."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def without_heading(quote: str, heading: str) -> str:
    """``quote`` less a leading heading as the prompt showed it (``Heading: X``, or ``X``);
    "" when the quote is the heading alone; the quote itself when it does not start so."""
    flat, shown = _flat(quote), _flat(heading)
    if not shown:
        return quote
    for prefix in (_flat(HEADING + shown), shown):
        if flat == prefix:
            return ""
        if flat.startswith(prefix + " "):
            return flat[len(prefix) + 1:]
    return quote


def sources(units: list[Unit], sections: dict[str, Section]) -> list[Source]:
    out = []
    for unit in units:
        section = sections.get(unit.section_id)
        if section is not None and section.start <= unit.start < unit.end <= section.end:
            text = section.text[unit.start - section.start : unit.end - section.start]
            out.append(Source(unit.page, unit.start, text, unit.heading))
        else:
            out.append(Source(unit.page, -1, unit.text, unit.heading))
    return out


def _find(index: PageIndex, quote: str, source: Source, name: str) -> tuple[str, int, int] | None:
    """The quote's first place in the source's text, else that of the quote less a
    shown heading it begins with; ``(name, -1, -1)`` for the heading alone; None when it
    is not there."""
    found = index.find(quote, name, limit=1)
    if found:
        return found[0]
    rest = without_heading(quote, source.heading)
    if rest == quote:
        return None
    if not rest:
        return (name, -1, -1)
    found = index.find(rest, name, limit=1)
    return found[0] if found else None


def locate_quotes(quotes: list[str], shown: list[Source]) -> tuple[list[dict], str | None]:
    """(the quotes' spans ``{"page", "start", "end"}`` in page characters, None), or
    ([], the problem)."""
    index = PageIndex({str(i): source.text for i, source in enumerate(shown)})
    spans: list[dict] = []
    quoted: set[int] = set()
    for quote in quotes:
        place = next(((i, found) for i in range(len(shown)) if (found := _find(index, quote, shown[i], str(i)))), None)
        if place is None:
            return [], (
                f"quote {' '.join(quote.split())[:60]!r} is not in the passage (compared with "
                "whitespace ignored and in Unicode NFC); quote its words exactly"
            )
        i, (_, start, end) = place
        quoted.add(i)
        source = shown[i]
        if start < 0:  # the heading alone: its passage is quoted, no span
            continue
        span = {"page": source.page, "start": source.start + start, "end": source.start + end}
        if source.start >= 0 and span not in spans:
            spans.append(span)
    if len(quoted) < len(shown):
        return [], f"the quotes must come from each of the {len(shown)} passages (one quote per passage)"
    return spans, None
