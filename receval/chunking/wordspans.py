"""Words with their character offsets, vectorised: the one rule for counting words.

:func:`word_spans` finds the words ``str.split()`` finds. :func:`token_spans` is the
rule everything that counts words uses: those words, except that each CJK character
(:mod:`receval.core.cjk`) is a word of its own, since Chinese or Japanese text has no
spaces and a whole paragraph would otherwise be one word. The chunkers' ``max_words``
(:mod:`receval.chunking.words`, :mod:`receval.chunking.packing`) and the token measures
(:mod:`receval.measures.spans`) both count these; a text without CJK gets exactly the
``str.split()`` words.
"""

from __future__ import annotations

import numpy as np

from receval.core.cjk import cjk_mask, has_cjk

_LIMIT = 0x3001  # no whitespace character (str.isspace) lies above U+3000
_SPACE = np.array([chr(c).isspace() for c in range(_LIMIT)], dtype=bool)


def word_spans(text: str) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the runs of non-whitespace characters in ``text``: the words
    ``text.split()`` returns, ``text[starts[i]:ends[i]] == text.split()[i]``."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    space = np.zeros(codes.size, dtype=bool)
    small = codes < _LIMIT
    space[small] = _SPACE[codes[small]]
    edge = np.diff(np.concatenate([[0], (~space).astype(np.int8), [0]]))
    return np.flatnonzero(edge == 1), np.flatnonzero(edge == -1)


def token_spans(text: str) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the words of ``text`` as receval counts them: its
    whitespace-separated words (:func:`word_spans`, exactly, when it has no CJK), with
    every CJK character split out as a word of its own (``東京 tower`` -> ``東``, ``京``,
    ``tower``; ``abc東`` -> ``abc``, ``東``)."""
    starts, ends = word_spans(text)
    if not has_cjk(text):
        return starts, ends
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    delta = np.zeros(codes.size + 1, np.int64)
    delta[starts] += 1
    delta[ends] -= 1
    inside = np.cumsum(delta[:-1]) > 0
    cjk = cjk_mask(codes)
    before = np.concatenate([[False], inside[:-1] & ~cjk[:-1]])  # a non-CJK letter just before
    after = np.concatenate([inside[1:] & ~cjk[1:], [False]])  # a non-CJK letter just after
    begin = inside & (cjk | ~before)
    end = inside & (cjk | ~after)
    return np.flatnonzero(begin), np.flatnonzero(end) + 1


def count_words(text: str) -> int:
    """How many words :func:`token_spans` finds in ``text`` (``len(text.split())`` without CJK)."""
    return len(token_spans(text)[0]) if has_cjk(text) else len(text.split())


def join_words(text: str, starts: np.ndarray, ends: np.ndarray) -> str:
    """The words ``text[starts[i]:ends[i]]`` joined by one space where whitespace parted
    them in ``text`` and by nothing where they touched (two CJK characters): ``" ".join``
    of the words when they are :func:`word_spans`."""
    if len(starts) == 0:
        return ""
    words = [text[s:e] for s, e in zip(starts.tolist(), ends.tolist())]
    gaps = np.where(starts[1:] > ends[:-1], " ", "").tolist()
    return words[0] + "".join(gap + word for gap, word in zip(gaps, words[1:]))
