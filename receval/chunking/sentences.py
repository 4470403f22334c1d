"""``chunking=sentences``: sentences merged up to ``max_words``.

Sentences come from sentencex (a maintained, rule-based splitter that knows
abbreviations such as "Dr." and "p.m."), in ``language``. Consecutive sentences of
one section are merged while the chunk stays within ``max_words``; ``overlap``
sentences of a chunk start the next one; a sentence longer than ``max_words`` is cut
into word windows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from receval.chunking import Chunk, at_most, chunks_of, describe_common
from receval.chunking.packing import pack
from receval.run.components import ChunkingConfig, component
from receval.schema import WORDS, range_


def sentence_spans(text: str, language: str = "en") -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text`` (sentencex's segments concatenate to it)."""
    from sentencex import segment

    spans, at = [], 0
    for piece in segment(language, text):
        found = text.find(piece, at)
        start = at if found < 0 else found
        spans.append((start, start + len(piece)))
        at = start + len(piece)
    return spans


@dataclass
class SentencesConfig(ChunkingConfig):
    kind: str = "sentences"
    max_words: Optional[int] = field(default=120, metadata=range_(*WORDS, null="whole sections"))
    overlap: int = field(default=0, metadata=range_(0, 10_000))  # sentences shared by consecutive chunks
    language: str = "en"  # sentencex language code
    headings: bool = True

    @staticmethod
    def describe(node) -> str:
        extra = f" overlap {node.overlap} sentences" if node.overlap else ""
        return describe_common(at_most("sentences", node, SentencesConfig) + extra, node)


class Sentences:
    def __init__(self, node):
        self.node = node

    def cut(self, sections) -> list[Chunk]:
        node = self.node
        return chunks_of(
            sections,
            lambda s: pack(s.text, sentence_spans(s.text, node.language), node.max_words, node.overlap),
            node.headings,
        )


@component("chunking", "sentences", SentencesConfig)
def build_sentences(node, context) -> Sentences:
    return Sentences(node)
