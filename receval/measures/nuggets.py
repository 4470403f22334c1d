"""Which nuggets the retrieved text supports, and from which chunk rank: the word rule.

A nugget (TREC RAG's: a short fact the answer should hold, vital or okay;
:class:`receval.scoring.questions.Nugget`) is *supported* by the chunks at ranks 1..r
when their words hold at least ``relevance.nugget_coverage`` (0.75 by default) of the
nugget's content words: its distinct lowercase words (``\\w+``, each CJK character a word),
the stopwords of ``tokenizer.language`` left out when receval has a list for it (all its
words when every one is a stopword). Words are matched as they are written (no stemming),
anywhere in the chunks' text on the page (heading prefixes aside), so the rule credits a
chunk that names the nugget's facts, not one that paraphrases them: a lower bound of what a
reader (or an LLM judge) would call support. The support rank is the first r where that
holds (0: never within the ranking); ``nugget_recall@k`` and ``vital_nugget_recall@k``
(:mod:`receval.scoring.chunks`) count the nuggets supported by rank k.

A support label from a judge (``report --labels`` with ``nugget`` and ``support`` lines,
:mod:`receval.results.judgments`) replaces the rule for the nuggets it labels.

Vectorised: each chunk's words are looked up once; for every (question, nugget word) the
first rank whose chunk holds the word comes from one sort, and each nugget's support rank
is the ``ceil(coverage * n)``-th smallest of its words' first ranks.
"""

from __future__ import annotations

import math
import re

import numpy as np

from receval.chunking import Chunk
from receval.core.cjk import CJK
from receval.datasets import Question
from receval.retrievers.stopwords import STOPWORDS

_WORD = re.compile(f"[{CJK}]|[^\\W{CJK}]+")
NEVER = np.iinfo(np.int64).max


def words(text: str) -> list[str]:
    """The lowercase words of ``text`` the rule matches (each CJK character one word)."""
    return _WORD.findall(text.lower())


def content_words(text: str, language: str = "english") -> list[str]:
    """A nugget's distinct content words, in order (see the module doc)."""
    found = list(dict.fromkeys(words(text)))
    stop = STOPWORDS.get(language, frozenset())
    kept = [w for w in found if w not in stop]
    return kept or found


def page_text(chunk: Chunk) -> str:
    """A chunk's text on its page: its text without the heading prefix ``chunking.headings`` adds."""
    if 0 <= chunk.start <= chunk.end:
        return chunk.text[len(chunk.text) - (chunk.end - chunk.start):]
    return chunk.text


def support_ranks(
    questions: list[Question], texts: list[str], chunk_idx: np.ndarray, coverage: float, language: str = "english",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For the Q questions and their (Q, K) rankings (indices into ``texts``, -1 padded):
    (Q, N) each nugget's support rank (0: never), whether it is vital, and whether it is
    one (False past a question's nuggets)."""
    n_rows, depth = chunk_idx.shape
    width = max((len(q.nuggets) for q in questions), default=0)
    at = np.zeros((n_rows, width), dtype=np.int64)
    vital = np.zeros((n_rows, width), dtype=bool)
    valid = np.zeros((n_rows, width), dtype=bool)
    vocabulary: dict[str, int] = {}
    rows, slots, need, word_ids = [], [], [], []
    for row, question in enumerate(questions):
        for slot, nugget in enumerate(question.nuggets):
            valid[row, slot], vital[row, slot] = True, nugget.vital
            found = content_words(nugget.text, language)
            rows.append(row)
            slots.append(slot)
            need.append(max(1, math.ceil(coverage * len(found) - 1e-9)) if found else 0)
            word_ids.append([vocabulary.setdefault(w, len(vocabulary)) for w in found])
    if not rows:
        return at, vital, valid
    first = _first_ranks(questions, texts, chunk_idx, vocabulary)
    sizes = np.fromiter(map(len, word_ids), np.int64, len(word_ids))
    owner = np.repeat(np.arange(len(rows)), sizes)  # nugget of each nugget word
    word = np.fromiter((w for ids in word_ids for w in ids), np.int64, int(sizes.sum()))
    ranks = first(np.asarray(rows, np.int64)[owner], word)
    order = np.lexsort((ranks, owner))
    starts = np.cumsum(sizes) - sizes
    need_a = np.asarray(need, np.int64)
    pick = np.minimum(starts + np.maximum(need_a, 1) - 1, max(ranks.size - 1, 0))
    chosen = ranks[order][pick] if ranks.size else np.full(len(rows), NEVER)
    supported = (need_a > 0) & (sizes > 0) & (chosen != NEVER)
    at[np.asarray(rows), np.asarray(slots)] = np.where(supported, chosen, 0)
    return at, vital, valid


def _first_ranks(questions, texts, chunk_idx, vocabulary: dict[str, int]):
    """A function (rows, words) -> the 1-based rank of the first chunk of each row's
    ranking that holds each word (:data:`NEVER`: none)."""
    wanted = np.asarray([bool(q.nuggets) for q in questions], dtype=bool)
    ranked = np.where(wanted[:, None], chunk_idx, -1)
    used = np.unique(ranked[ranked >= 0])
    per_chunk = [sorted({vocabulary[w] for w in words(texts[c]) if w in vocabulary}) for c in used.tolist()]
    counts = np.fromiter(map(len, per_chunk), np.int64, len(per_chunk))
    flat = np.fromiter((w for ids in per_chunk for w in ids), np.int64, int(counts.sum()))
    starts = np.cumsum(counts) - counts
    row, col = np.nonzero(ranked >= 0)
    slot = np.searchsorted(used, ranked[row, col])
    n = counts[slot]
    owner = np.repeat(np.arange(row.size), n)
    offsets = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n) + np.repeat(starts[slot], n)
    size = len(vocabulary) + 1
    keys = row[owner].astype(np.int64) * size + flat[offsets]
    rank = col[owner].astype(np.int64) + 1
    order = np.lexsort((rank, keys))
    keys, rank = keys[order], rank[order]
    unique, first = np.unique(keys, return_index=True)
    best = rank[first]

    def lookup(rows: np.ndarray, word: np.ndarray) -> np.ndarray:
        if not unique.size:
            return np.full(rows.shape, NEVER, dtype=np.int64)
        wanted_keys = rows * size + word
        at = np.minimum(np.searchsorted(unique, wanted_keys), unique.size - 1)
        return np.where(unique[at] == wanted_keys, best[at], NEVER)

    return lookup
