"""``chunking=words``: windows of ``max_words`` words inside one section.

``max_words``: each chunk holds at most that many words (whitespace-separated) of one
section; ``null`` keeps each section whole. ``overlap``: consecutive windows of a
section share that many words. A window is only added when it brings words the
previous one did not hold, so the last window ends at the section's last word and no
window lies inside another. The chunk text is the window's words joined by single
spaces (offsets still point at the page text it covers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from receval.chunking import Chunk, check_words, chunk_sections, describe_common
from receval.components import component
from receval.schema import WORDS, range_


@dataclass
class WordsConfig:
    kind: str = "words"
    max_words: Optional[int] = field(default=120, metadata=range_(*WORDS, null="whole sections"))
    overlap: int = field(default=0, metadata=range_(0, WORDS[1]))  # words shared by consecutive chunks of a section
    headings: bool = True  # prefix each chunk with its heading path

    def problems(self) -> list[str]:
        return check_words(self.max_words, self.overlap)

    @staticmethod
    def describe(node) -> str:
        size = "whole sections" if node.max_words is None else f"{node.max_words} words"
        return describe_common(size, node)


class Words:
    def __init__(self, node):
        self.node = node

    def cut(self, sections) -> list[Chunk]:
        node = self.node
        return chunk_sections(sections, node.max_words, node.overlap, node.headings)


@component("chunking", "words", WordsConfig)
def build_words(node, context) -> Words:
    return Words(node)
