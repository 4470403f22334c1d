"""Which generated questions are worth keeping: no near-duplicates, no empty ones, and
no set that is mostly either (a broken server repeating one reply).

Words. A question's words are the runs of ``\\w`` characters and combining marks of its
text in Unicode NFKC, case folded: "What is a fine?" and "what is a FINE" have the same words.

Near-duplicate. Two questions are near-duplicates when their word *sets* have a
Jaccard similarity |A & B| / |A | B| of at least :data:`JACCARD` (0.9): the same
words (normalised text equality, or a reordering) always are; "How much is the late
fine for a book?" and "How much is the late fine for a DVD?" (8 shared of 10) are
not. A question with no word is *empty*.

Search. A new question is compared with the kept ones through a prefix filter
(Bayardo, Ma and Srikant, "Scaling up all pairs similarity search", WWW 2007, sec.
4; Chaudhuri, Ganti and Kaushik, ICDE 2006): with the words of every set in one
global order, two sets with Jaccard >= t share a word among the first
|x| - ceil(t |x|) + 1 words of each, so only questions indexed under those words are
checked, exactly; a set of 50,000 questions is not compared pair by pair.

Refusal (:meth:`Verdict.refusal`): when more than half of the replies were
duplicates or empty (:data:`MOST`), the set is refused: a working model asked about
different passages does not do that.
"""

from __future__ import annotations

import math
import threading
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field

from receval.core import marks

JACCARD = 0.9
MOST = 0.5  # refused when more than this share of the replies were duplicates or empty
JUDGED_FROM = 20  # replies seen before a running job may be stopped for it (the end judges any number)


def words(question: str) -> frozenset[str]:
    """The question's words (:func:`receval.core.marks.words`: their combining marks in
    them) of its NFKC, case-folded text."""
    return frozenset(marks.words(unicodedata.normalize("NFKC", question).casefold()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def _prefix(tokens: frozenset[str], threshold: float) -> list[str]:
    ordered = sorted(tokens, key=lambda w: (hash(w), w))  # any fixed order is exact; a hash spreads common words
    return ordered[: len(tokens) - math.ceil(threshold * len(tokens) - 1e-9) + 1]  # 1e-9: 0.9 * n in floats


class QuestionSet:
    """Questions kept so far; :meth:`claim` keeps a new one unless it near-duplicates
    a kept one (thread-safe: the check and the keeping are one step)."""

    def __init__(self, threshold: float = JACCARD):
        self.threshold = threshold
        self._sets: list[frozenset[str]] = []
        self._texts: list[str] = []
        self._index: dict[str, list[int]] = defaultdict(list)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._texts)

    def twin(self, tokens: frozenset[str]) -> str | None:
        """The kept question ``tokens`` near-duplicates, or None."""
        low, high = self.threshold * len(tokens), len(tokens) / self.threshold
        seen: set[int] = set()
        for word in _prefix(tokens, self.threshold):
            for i in self._index.get(word, ()):
                if i in seen:
                    continue
                seen.add(i)
                other = self._sets[i]
                if low <= len(other) <= high and jaccard(tokens, other) >= self.threshold:
                    return self._texts[i]
        return None

    def add(self, question: str, tokens: frozenset[str] | None = None) -> None:
        tokens = words(question) if tokens is None else tokens
        i = len(self._texts)
        self._sets.append(tokens)
        self._texts.append(question)
        for word in _prefix(tokens, self.threshold):
            self._index[word].append(i)

    def claim(self, question: str) -> str | None:
        """Keep ``question`` and return None, or return the kept question it repeats."""
        tokens = words(question)
        with self._lock:
            found = self.twin(tokens)
            if found is None:
                self.add(question, tokens)
            return found


@dataclass
class Verdict:
    """What came back: kept questions, dropped near-duplicates, empty questions."""

    kept: int = 0
    duplicates: int = 0
    empty: int = 0
    examples: dict[str, int] = field(default_factory=dict)  # repeated question -> times dropped
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, outcome: str, repeated: str | None = None) -> None:
        with self._lock:
            setattr(self, outcome, getattr(self, outcome) + 1)
            if repeated is not None:
                self.examples[repeated] = self.examples.get(repeated, 0) + 1

    @property
    def replies(self) -> int:
        return self.kept + self.duplicates + self.empty

    def refusal(self, at_least: int = 1) -> str | None:
        """Why the set is refused (more than half duplicates or empty), or None; judged
        once ``at_least`` replies have come back."""
        bad = self.duplicates + self.empty
        if self.replies < at_least or bad <= MOST * self.replies:
            return None
        shown = ""
        if self.examples:
            text, times = max(self.examples.items(), key=lambda item: item[1])
            shown = f" ({text[:80]!r} came back {times + 1} times)"
        return (
            f"{self.duplicates} of {self.replies} replies repeated a question already in the set{shown} "
            f"and {self.empty} had no words; a model asked about different passages does not do "
            "that: check the server and synth.model"
        )
