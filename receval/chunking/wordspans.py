"""Words as ``str.split()`` finds them, with their character offsets, vectorised.

The words chunker counts these words, and the token measures (:mod:`receval.measures.spans`)
count them as tokens; both need where each word starts and ends in the page text.
"""

from __future__ import annotations

import numpy as np

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
