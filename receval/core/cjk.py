"""Which characters are CJK: one table for every rule that treats them apart.

Chinese and Japanese text has no spaces between words, so each rule that counts words
needs to know these characters: the lexical tokenizer's bigrams
(:mod:`receval.retrievers.text`), ROUGE's tokens (:mod:`receval.measures.overlap`), and
the word counting shared by the chunkers and the evidence-span measures
(:func:`receval.chunking.wordspans.token_spans`).
"""

from __future__ import annotations

import re

import numpy as np

# The word characters of the Han, Hiragana, Katakana and Hangul scripts (with the kana
# voicing marks and prolonged-sound mark they share with Common), as code point ranges:
# one table for the regular expressions and the numpy mask.
CJK_RANGES = (
    (0x1100, 0x11FF), (0x2E80, 0x2FDF), (0x3005, 0x3007), (0x3021, 0x3029), (0x3038, 0x303B),
    (0x3041, 0x309F), (0x30A1, 0x30FA), (0x30FC, 0x30FF), (0x3131, 0x318E), (0x31F0, 0x31FF),
    (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xA960, 0xA97F), (0xAC00, 0xD7FF), (0xF900, 0xFAFF),
    (0xFF66, 0xFF9F), (0xFFA0, 0xFFDC), (0x16FE2, 0x16FE3), (0x16FF0, 0x16FF6), (0x1AFF0, 0x1B16F),
    (0x1F200, 0x1F200), (0x20000, 0x3FFFF),
)
CJK = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in CJK_RANGES)  # a character class's body
_CJK_ANY = re.compile(f"[{CJK}]")
_BOUNDS = np.asarray([edge for lo, hi in CJK_RANGES for edge in (lo, hi + 1)], dtype=np.int64)
# The same test in two cheap steps: a class of Basic Multilingual Plane ranges is a bitmap
# lookup per character, while astral ranges make the regex engine walk every range (six
# times slower on a page without CJK); astral CJK is looked for only in text that has any
# astral character.
_CJK_BMP = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in CJK_RANGES if hi < 0x10000) + "]")
_CJK_ASTRAL = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in CJK_RANGES if lo >= 0x10000) + "]")
_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a CJK character (:data:`CJK_RANGES`)."""
    if text.isascii():
        return False
    if _CJK_BMP.search(text) is not None:
        return True
    return _ASTRAL.search(text) is not None and _CJK_ASTRAL.search(text) is not None


def cjk_mask(codes: np.ndarray) -> np.ndarray:
    """(n,) True where a code point (``codes``, e.g. a text's UTF-32) is a CJK character."""
    return np.searchsorted(_BOUNDS, codes, side="right") % 2 == 1
