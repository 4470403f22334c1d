"""``chunking=recursive``: the common RAG default (as LangChain's recursive splitter).

A section longer than ``max_words`` is split at the first separator in
``separators`` that occurs in it (markdown ``headings`` lines, blank-line
``paragraphs``, ``sentences``), each piece still too long is split by the next
separator, and the last resort is word windows (``words``). Consecutive pieces are
then merged back while a chunk stays within ``max_words``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Optional

from receval.chunking import Chunk, at_most, chunks_of, describe_common
from receval.chunking.packing import pack, windows, word_count, word_spans
from receval.chunking.paragraphs import paragraph_spans
from receval.chunking.sentences import sentence_spans
from receval.run.components import ChunkingConfig, component
from receval.schema import WORDS, range_

HEADING_LINE = re.compile(r"^#{1,6}[ \t]", re.MULTILINE)


class Separator(StrEnum):
    headings = "headings"
    paragraphs = "paragraphs"
    sentences = "sentences"
    words = "words"


def _heading_spans(text: str) -> list[tuple[int, int]]:
    starts = sorted({0, *(m.start() for m in HEADING_LINE.finditer(text))})
    return [(s, e) for s, e in zip(starts, starts[1:] + [len(text)])]


def _pieces(text: str, start: int, end: int, separator: Separator, language: str) -> list[tuple[int, int]]:
    inner = text[start:end]
    if separator == Separator.headings:
        found = _heading_spans(inner)
    elif separator == Separator.paragraphs:
        found = paragraph_spans(inner)
    else:
        found = sentence_spans(inner, language)
    return [(start + s, start + e) for s, e in found]


def split(text: str, start: int, end: int, separators: list[Separator], max_words: int, language: str) -> list[tuple[int, int]]:
    """Spans of pieces of ``text[start:end]`` of at most ``max_words`` words each."""
    if word_count(text[start:end]) <= max_words:
        return [(start, end)]
    for i, separator in enumerate(separators):
        if separator == Separator.words:
            break
        pieces = _pieces(text, start, end, separator, language)
        if len(pieces) > 1:
            out: list[tuple[int, int]] = []
            for s, e in pieces:
                out += split(text, s, e, separators[i + 1 :], max_words, language)
            return out
    return windows(word_spans(text, start, end), max_words)


@dataclass
class RecursiveConfig(ChunkingConfig):
    kind: str = "recursive"
    max_words: Optional[int] = field(default=120, metadata=range_(*WORDS, null="whole sections"))
    separators: list[Separator] = field(
        default_factory=lambda: [Separator.headings, Separator.paragraphs, Separator.sentences, Separator.words]
    )
    language: str = "en"  # for the sentences separator
    headings: bool = True

    @staticmethod
    def describe(node) -> str:
        return describe_common(at_most("recursive", node, RecursiveConfig), node)


class Recursive:
    def __init__(self, node):
        self.node = node

    def cut(self, sections) -> list[Chunk]:
        node = self.node
        separators = [Separator(s) for s in node.separators]

        def spans(section):
            if node.max_words is None:
                return [(0, len(section.text))]
            return pack(section.text, split(section.text, 0, len(section.text), separators, node.max_words, node.language), node.max_words)

        return chunks_of(sections, spans, node.headings)


@component("chunking", "recursive", RecursiveConfig)
def build_recursive(node, context) -> Recursive:
    return Recursive(node)
