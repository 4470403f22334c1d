"""Sections -> chunks, by a chunker component (one module each; ``chunking=<kind>``).

Chunkers: ``words`` (below), ``paragraphs``, ``sentences``, ``recursive``, ``tokens``.
None crosses a section boundary. The word windows of ``chunking=words``:

``max_words``: each chunk holds at most that many words (whitespace-separated) of one
section; ``None`` keeps each section whole. ``overlap``: consecutive windows of a
section share that many words (ignored for whole sections). A window is only added
when it brings words the previous one did not hold, so the last window ends at the
section's last word and no window lies inside another. ``headings``: prefix each
chunk's text with its section's heading path ("Fines > Late returns"), so a window
keeps the words of the headings above it.

Every chunk keeps the character offsets (``start``, ``end``) of the page text it
covers, so evidence labels (:mod:`receval.evidence`) can be matched to chunks by
character overlap whatever the chunking.
"""

from __future__ import annotations

from dataclasses import dataclass

from receval.datasets import Section
from receval.core.errors import ConfigError
from receval.words import word_spans


@dataclass(frozen=True)
class Chunk:
    """A piece of one section; ``ordinal`` counts the section's windows from 0;
    ``start``/``end``: characters of the page text it covers (-1: not known)."""

    section_id: str
    ordinal: int
    text: str
    start: int = -1
    end: int = -1

    @property
    def id(self) -> str:
        return f"{self.section_id}@{self.ordinal}"



def check_words(max_words: int | None, overlap: int) -> list[str]:
    """An overlap that leaves a window no new word (keys relative to ``chunking``); the
    ranges of each number are their fields' (:class:`receval.chunking.words.WordsConfig`)."""
    if max_words is not None and overlap >= max(max_words, 1):
        return [f"overlap={overlap} must be smaller than chunking.max_words={max_words}"]
    return []


def check_chunking(max_words: int | None, overlap: int) -> None:
    """A word window's settings, as ``chunking=words`` checks them (for callers of :func:`chunk_sections`)."""
    from receval.chunking.words import WordsConfig
    from receval.schema import range_problems

    problems = range_problems(WordsConfig, {"max_words": max_words, "overlap": overlap}, "chunking")
    problems = problems or [f"chunking.{problem}" for problem in check_words(max_words, overlap)]
    if problems:
        raise ConfigError(problems)


def describe_common(size: str, node) -> str:
    """A chunking's label: its size, then overlap and headings."""
    overlap = getattr(node, "overlap", 0) if node.get("kind") in ("words", "tokens") else 0
    if overlap:
        size += f" overlap {overlap}"
    return size + (", headings" if node.headings else ", no headings")


def chunks_of(sections: list[Section], spans_of, headings: bool) -> list[Chunk]:
    """Chunks from each section's character spans (``spans_of(section)``), trimmed of
    surrounding whitespace, with page offsets and the heading prefix."""
    chunks: list[Chunk] = []
    for section in sections:
        prefix = f"{section.heading}\n" if headings and section.heading_path else ""
        text = section.text
        ordinal = 0
        for start, end in spans_of(section) or [(0, len(text))]:
            while start < end and text[start].isspace():
                start += 1
            while end > start and text[end - 1].isspace():
                end -= 1
            if start == end and ordinal:
                continue
            chunks.append(Chunk(section.id, ordinal, prefix + text[start:end], section.start + start, section.start + end))
            ordinal += 1
    return chunks


def cut(node, sections: list[Section]) -> list[Chunk]:
    """The chunks the ``chunking`` node's chunker cuts from ``sections``."""
    from receval import components

    return components.build("chunking", node, components.Context(), "chunking").cut(sections)


def label(node) -> str:
    from receval import components

    return components.label("chunking", node)


def window_starts(n_words: int, max_words: int, overlap: int) -> list[int]:
    """Start of each window over ``n_words`` words (at least one window)."""
    stride = max_words - overlap
    return [0] + [s for s in range(stride, n_words, stride) if s + overlap < n_words]


def chunk_sections(
    sections: list[Section], max_words: int | None, overlap: int = 0, headings: bool = True
) -> list[Chunk]:
    """Cut every section into chunks, in section order."""
    check_chunking(max_words, overlap)
    chunks: list[Chunk] = []
    for section in sections:
        prefix = f"{section.heading}\n" if headings and section.heading_path else ""
        if max_words is None:
            chunks.append(Chunk(section.id, 0, prefix + section.text, section.start, section.end))
            continue
        words = section.text.split()
        begins, ends = word_spans(section.text)
        for ordinal, start in enumerate(window_starts(len(words), max_words, overlap)):
            last = min(start + max_words, len(words)) - 1
            window = " ".join(words[start : start + max_words])
            begin, end = (int(begins[start]), int(ends[last])) if words else (0, 0)
            chunks.append(Chunk(section.id, ordinal, prefix + window, section.start + begin, section.start + end))
    return chunks
