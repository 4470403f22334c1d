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
"""

from __future__ import annotations

from dataclasses import dataclass

from receval.datasets import Section
from receval.datasets.evidence import PageIndex
from receval.synth.units import Unit


@dataclass(frozen=True)
class Source:
    """A unit's characters as its page has them, and where they start (-1: offsets
    not known, so quotes are checked against the unit's text and give no span)."""

    page: str
    start: int
    text: str


def sources(units: list[Unit], sections: dict[str, Section]) -> list[Source]:
    out = []
    for unit in units:
        section = sections.get(unit.section_id)
        if section is not None and section.start <= unit.start < unit.end <= section.end:
            text = section.text[unit.start - section.start : unit.end - section.start]
            out.append(Source(unit.page, unit.start, text))
        else:
            out.append(Source(unit.page, -1, unit.text))
    return out


def locate_quotes(quotes: list[str], shown: list[Source]) -> tuple[list[dict], str | None]:
    """(the quotes' spans ``{"page", "start", "end"}`` in page characters, None), or
    ([], the problem)."""
    index = PageIndex({str(i): source.text for i, source in enumerate(shown)})
    spans: list[dict] = []
    quoted: set[int] = set()
    for quote in quotes:
        place = next(((i, found[0]) for i in range(len(shown)) if (found := index.find(quote, str(i), limit=1))), None)
        if place is None:
            return [], (
                f"quote {' '.join(quote.split())[:60]!r} is not in the passage (compared with "
                "whitespace ignored and in Unicode NFC); quote its words exactly"
            )
        i, (_, start, end) = place
        quoted.add(i)
        source = shown[i]
        span = {"page": source.page, "start": source.start + start, "end": source.start + end}
        if source.start >= 0 and span not in spans:
            spans.append(span)
    if len(quoted) < len(shown):
        return [], f"the quotes must come from each of the {len(shown)} passages (one quote per passage)"
    return spans, None
