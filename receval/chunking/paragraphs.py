"""``chunking=paragraphs``: blank-line paragraphs, merged up to ``max_words``.

Consecutive paragraphs of one section are merged while the chunk stays within
``max_words``; a paragraph longer than that is cut into word windows. A chunk's text
is the page text it covers (its paragraphs with their line breaks).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from receval.chunking import Chunk, at_most, chunks_of, describe_common
from receval.chunking.packing import pack
from receval.run.components import ChunkingConfig, component
from receval.schema import WORDS, range_

BLANK_LINE = re.compile(r"\n[ \t]*\n")


def paragraph_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the blank-line-separated paragraphs of ``text``."""
    spans, start = [], 0
    for match in BLANK_LINE.finditer(text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return spans


@dataclass
class ParagraphsConfig(ChunkingConfig):
    kind: str = "paragraphs"
    max_words: Optional[int] = field(default=120, metadata=range_(*WORDS, null="one chunk per section"))
    headings: bool = True

    @staticmethod
    def describe(node) -> str:
        return describe_common(at_most("paragraphs", node, ParagraphsConfig), node)


class Paragraphs:
    def __init__(self, node):
        self.node = node

    def cut(self, sections) -> list[Chunk]:
        return chunks_of(
            sections, lambda s: pack(s.text, paragraph_spans(s.text), self.node.max_words), self.node.headings
        )


@component("chunking", "paragraphs", ParagraphsConfig)
def build_paragraphs(node, context) -> Paragraphs:
    return Paragraphs(node)
