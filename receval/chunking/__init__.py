"""Sections -> chunks, by a chunker component (one module each; ``chunking=<kind>``).

Chunkers: ``words`` (:mod:`.words`: word windows, :func:`receval.chunking.words.chunk_sections`),
``paragraphs``, ``sentences``, ``recursive``, ``tokens``. None crosses a section
boundary. ``headings``: prefix each chunk's text with its section's heading path
("Fines > Late returns"), so a chunk keeps the words of the headings above it. This
package holds what they share: :class:`Chunk`, :func:`chunks_of`, :func:`describe_common`,
and :func:`cut` (the chunks a ``chunking`` node's chunker cuts). :mod:`.cache` keeps chunk
sets and their token ids on disk by content, so a sweep cuts and tokenizes each once.

Every chunk keeps the character offsets (``start``, ``end``) of the page text it
covers, so evidence labels (:mod:`receval.datasets.evidence`) can be matched to chunks by
character overlap whatever the chunking.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from receval.datasets import Section
from receval.schema import RANGE


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



def at_most(kind: str, node, schema: type, unit: str = "words") -> str:
    """A chunking's size in its label: ``paragraphs <= 120 words``, or, with no bound
    (``max_words=null``), what null means in its schema's range (``paragraphs, one chunk
    per section``), never ``<= None``."""
    if node.max_words is not None:
        return f"{kind} <= {node.max_words} {unit}"
    bounds = next((f.metadata.get(RANGE) for f in fields(schema) if f.name == "max_words"), None)
    return f"{kind}, {getattr(bounds, 'null', None) or 'no bound'}"


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


def cut(node, sections: list[Section], checked: bool = False) -> list[Chunk]:
    """The chunks the ``chunking`` node's chunker cuts from ``sections`` (``checked``: the
    node comes from a validated run spec, :mod:`receval.run.spec`, and is not checked again)."""
    from receval.run import components

    return components.build("chunking", node, components.Context(checked=checked), "chunking").cut(sections)


def label(node) -> str:
    from receval.run import components

    return components.label("chunking", node)
