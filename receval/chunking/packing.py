"""Spans of a section's text -> chunks: what every chunker shares.

A chunker finds *units* in a section (paragraphs, sentences, token windows) as
character spans of ``section.text``; :func:`pack` merges consecutive units up to a
word budget and cuts a unit longer than the budget into word windows; :func:`chunks_of`
turns the spans into :class:`~receval.chunking.Chunk` objects with page offsets.
"""

from __future__ import annotations

import numpy as np

from receval.chunking import wordspans


word_count = wordspans.count_words  # each CJK character a word (the one rule)


def word_spans(text: str, start: int = 0, end: int | None = None) -> np.ndarray:
    """(n, 2) character spans of the words of ``text[start:end]`` (each CJK character a
    word: :func:`~receval.chunking.wordspans.token_spans`), in ``text`` coordinates."""
    begins, ends = wordspans.token_spans(text[start:end])
    return np.stack([begins + start, ends + start], axis=1).astype(np.int64)


def windows(spans: np.ndarray, size: int, overlap: int = 0) -> list[tuple[int, int]]:
    """Word windows of ``size`` words sharing ``overlap``: (start, end) character spans."""
    n = len(spans)
    if n == 0:
        return []
    stride = size - overlap
    starts = [0] + [s for s in range(stride, n, stride) if s + overlap < n]
    return [(int(spans[s, 0]), int(spans[min(s + size, n) - 1, 1])) for s in starts]


def pack(text: str, units: list[tuple[int, int]], max_words: int | None, overlap_units: int = 0) -> list[tuple[int, int]]:
    """Merge consecutive unit spans while the words stay within ``max_words``.

    A unit longer than ``max_words`` becomes word windows of its own. ``overlap_units``
    units of a chunk are repeated at the start of the next one (sentences).
    """
    units = [(s, e) for s, e in units if text[s:e].strip()]
    if max_words is None:
        return [(units[0][0], units[-1][1])] if units else []
    counts = [word_count(text[s:e]) for s, e in units]
    out: list[tuple[int, int]] = []
    group: list[int] = []  # unit indices in the open chunk
    words = 0

    def close() -> None:
        if group:
            out.append((units[group[0]][0], units[group[-1]][1]))

    i = 0
    while i < len(units):
        if counts[i] > max_words:
            close()
            group, words = [], 0
            out.extend(windows(word_spans(text, *units[i]), max_words))
            i += 1
            continue
        if group and words + counts[i] > max_words:
            close()
            keep = group[len(group) - overlap_units :] if 0 < overlap_units < len(group) else []
            group, words = list(keep), sum(counts[j] for j in keep)
            if group and words + counts[i] > max_words:
                group, words = [], 0
        group.append(i)
        words += counts[i]
        i += 1
    close()
    return out
