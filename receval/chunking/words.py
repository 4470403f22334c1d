"""``chunking=words``: windows of ``max_words`` words inside one section.

``max_words``: each chunk holds at most that many words of one section (whitespace-separated,
each CJK character a word: :func:`~receval.chunking.wordspans.token_spans`); ``null``
keeps each section whole. ``overlap``: consecutive windows of a
section share that many words. A window is only added when it brings words the
previous one did not hold, so the last window ends at the section's last word and no
window lies inside another. The chunk text is the window's words joined by single
spaces, or by nothing where they touched in the page (CJK characters); its offsets point
at the page text it covers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from receval.chunking import Chunk, describe_common
from receval.chunking.wordspans import join_words, token_spans
from receval.run.components import ChunkingConfig, component
from receval.core.cjk import has_cjk
from receval.core.errors import ConfigError
from receval.datasets import Section
from receval.schema import WORDS, range_, range_problems


@dataclass
class WordsConfig(ChunkingConfig):
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
    def __init__(self, node, checked: bool = False):
        self.node, self.checked = node, checked

    def cut(self, sections) -> list[Chunk]:
        node = self.node
        return chunk_sections(sections, node.max_words, node.overlap, node.headings, check=not self.checked)


@component("chunking", "words", WordsConfig)
def build_words(node, context) -> Words:
    return Words(node, checked=context.checked)


def check_words(max_words: int | None, overlap: int) -> list[str]:
    """An overlap that leaves a window no new word (keys relative to ``chunking``); the
    ranges of each number are their fields' (:class:`WordsConfig`)."""
    if max_words is not None and overlap >= max(max_words, 1):
        return [f"overlap={overlap} must be smaller than chunking.max_words={max_words}"]
    return []


def check_chunking(max_words: int | None, overlap: int) -> None:
    """A word window's settings, as ``chunking=words`` checks them (for callers of :func:`chunk_sections`)."""
    problems = range_problems(WordsConfig, {"max_words": max_words, "overlap": overlap}, "chunking")
    problems = problems or [f"chunking.{problem}" for problem in check_words(max_words, overlap)]
    if problems:
        raise ConfigError(problems)


def window_starts(n_words: int, max_words: int, overlap: int) -> list[int]:
    """Start of each window over ``n_words`` words (at least one window)."""
    stride = max_words - overlap
    return [0] + [s for s in range(stride, n_words, stride) if s + overlap < n_words]


def chunk_sections(
    sections: list[Section], max_words: int | None, overlap: int = 0, headings: bool = True, check: bool = True
) -> list[Chunk]:
    """Cut every section into chunks, in section order."""
    if check:  # False: a run spec checked them (receval.run.spec)
        check_chunking(max_words, overlap)
    chunks: list[Chunk] = []
    for section in sections:
        prefix = f"{section.heading}\n" if headings and section.heading_path else ""
        if max_words is None:
            chunks.append(Chunk(section.id, 0, prefix + section.text, section.start, section.end))
            continue
        begins, ends = token_spans(section.text)
        n_words = len(begins)
        words = None if has_cjk(section.text) else section.text.split()  # the same words, split at C speed
        for ordinal, start in enumerate(window_starts(n_words, max_words, overlap)):
            last = min(start + max_words, n_words) - 1
            if words is None:
                window = join_words(section.text, begins[start : last + 1], ends[start : last + 1])
            else:
                window = " ".join(words[start : last + 1])
            begin, end = (int(begins[start]), int(ends[last])) if n_words else (0, 0)
            chunks.append(Chunk(section.id, ordinal, prefix + window, section.start + begin, section.start + end))
    return chunks
