"""How much of each question is copied from its passage: ROUGE precision.

A synthetic question that repeats its passage's words is easy for a lexical
retriever and says little about real users, who do not know the page's wording.
For every answerable question this module measures the share of the question found
in its relevant section(s):

- ``rouge1_p``: clipped unigram precision, ``sum_g min(q(g), p(g)) / sum_g q(g)`` over
  the question's words ``g`` (``q``, ``p``: counts in question and passage);
- ``rouge2_p``: the same over bigrams (consecutive word pairs);
- ``rougeL_p``: ``LCS(question, passage) / len(question)``, the longest common
  subsequence of words (in order, gaps allowed) over the question's length.

Cost, for a question of ``m`` words against a section of ``n`` words: the section is
tokenised, counted and indexed once per run (``O(n log n)``); then each question costs
``O(m)`` for ROUGE-1/2 and ``O(r log r + m * r)`` byte-wide numpy steps plus
``m * ceil(r / 64)`` word operations for ROUGE-L (:func:`lcs_work`), where ``r <= n``
is the number of the section's words that are question words. It never walks the
whole section per question: against a 1.7M-word section that is about 4 ms instead
of the dynamic programme's 0.22 s (``benchmarks/rouge_l_long.py``).

These are the *precision* halves of ROUGE-1, ROUGE-2 and ROUGE-L with the question
as the prediction and the passage as the reference, the numbers the ``rouge-score``
package reports as ``RougeScorer([...], use_stemmer=False).score(target=passage,
prediction=question)[...].precision``. A question with no words (or, for ROUGE-2,
a single word) scores 0, as there. With several relevant sections each measure is
the maximum over them (each measure separately). Unanswerable questions get
``None``. The passage is the section's text, without its heading path.

Tokenisation (:func:`tokenize`) is rouge-score's default tokenizer: Python's
``str.lower``, then every run of characters other than ASCII ``a-z0-9`` splits
words, no stemming, no stopwords. Non-ASCII letters are therefore *separators*
("café" -> ``caf``), which is crude for other languages but keeps the numbers equal
to the package's. This is deliberately not :mod:`receval.retrievers.text`'s retrieval
tokenizer: the point is a number comparable with published ROUGE figures. One
addition: each CJK character (the retrieval tokenizer's :data:`~receval.retrievers.text.CJK`
class) is a word of its own, as Chinese and Japanese ROUGE is usually counted, where
rouge-score drops it (a Chinese question would have no words and score 0). So
``rouge2_p`` counts the very character bigrams the retrievers search with; text
without CJK gets rouge-score's words exactly.

The stored values are bucketed ``low``/``medium``/``high`` by the read side
(:func:`receval.analysis.breakdown.overlap_bucket`, ``report --by overlap``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from receval.datasets import Question, Section
from receval.core.cjk import CJK, has_cjk

COLUMNS = ("rouge1_p", "rouge2_p", "rougeL_p")
BUCKETS = ("low", "medium", "high")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
_WORD_OR_CJK = re.compile(f"[a-z0-9]+|[{CJK}]")


def tokenize(text: str) -> list[str]:
    """rouge-score's default tokens: lowercase ASCII letters and digits, split on the
    rest; and each CJK character a token (see the module doc)."""
    if has_cjk(text):
        return _WORD_OR_CJK.findall(text.lower())
    return [t for t in _NON_ALNUM.sub(" ", text.lower()).split() if t]


def _ngrams(tokens: Sequence[int], n: int) -> Counter:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def ngram_precision(question: Sequence, passage: Sequence, n: int) -> float:
    """Clipped n-gram precision of ``question`` against ``passage`` (token sequences)."""
    q, p = _ngrams(question, n), _ngrams(passage, n)
    total = sum(q.values())
    if not total:
        return 0.0
    return sum(min(count, p[gram]) for gram, count in q.items()) / total


def lcs_length(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common subsequence of two token-id sequences (exact,
    bit-parallel over the tokens of ``b`` that occur in ``a``: :func:`lcs_work`)."""
    return lcs_work(a, _Index(np.asarray(b, dtype=np.int64)))[0]


def lcs_work(question: Sequence[int], passage: "_Index") -> tuple[int, int, int]:
    """``(LCS length, steps, r)``: the exact LCS of ``question`` and the indexed passage,
    and the work it took: ``steps`` updates (at most ``len(question)``) of integers of
    ``r`` bits, ``r`` the number of passage positions holding a question token.

    Only those ``r`` positions can be in a common subsequence, so the passage is cut
    down to them first, from its inverted index (one sort of ``r`` keys, never a pass
    over the whole passage): the sequence ``B``. The LCS of the question and ``B`` is
    computed bit-parallel (H. Hyyrö 2004, "Bit-parallel LCS-length computation
    revisited", after L. Allison and T. Dix 1986 and M. Crochemore et al. 2001): ``V``
    holds one bit per place of ``B``, all ones at first; for each question token with
    match mask ``M`` (the places of ``B`` holding it), ``U = V & M`` and
    ``V = (V + U) | (V - U)``, cut to ``r`` bits; the LCS is the number of zero bits
    left in ``V``. A question token absent from the passage has ``M = 0`` and leaves
    ``V`` unchanged, so it is skipped. Python integers are the bit vectors, so each
    update is a few C loops over ``ceil(r / 64)`` words: ``O(r log r + m * r)`` byte
    steps to build the masks and ``m * ceil(r / 64)`` word steps for the LCS, against
    ``m * len(passage)`` cells for the dynamic programme (``m = len(question)``).
    """
    q = np.asarray(question, dtype=np.int64)
    tokens = np.unique(q)
    starts, counts = passage.runs(tokens)
    r = int(counts.sum())
    if not r:
        return 0, 0, 0
    kinds = len(tokens)  # B in passage order, each place as its token number: one sort of (position, number)
    number = np.repeat(np.arange(kinds), counts)
    where = passage.order[np.arange(r) + np.repeat(starts - (np.cumsum(counts) - counts), counts)]
    label = np.sort(where * kinds + number) % kinds
    masks = {
        token: int.from_bytes(np.packbits(label == k, bitorder="little").tobytes(), "little")
        for k, token in enumerate(tokens.tolist())
        if counts[k]
    }
    full = (1 << r) - 1
    v, steps = full, 0
    for token in q.tolist():
        m = masks.get(token)
        if m is None:
            continue
        u = v & m
        v = ((v + u) | (v - u)) & full
        steps += 1
    return r - v.bit_count(), steps, r


class _Index:
    """A passage's token ids with an inverted index: ``order`` lists the positions
    grouped by token id, each group ascending (a stable sort of the ids)."""

    def __init__(self, ids: np.ndarray):
        self.ids = ids
        n = max(ids.size, 1)  # (id, position) as one int64 key: one sort, ties impossible
        self.order = np.sort(ids * n + np.arange(ids.size)) % n
        self.sorted = ids[self.order]

    def runs(self, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where each token's positions start in ``order``, and how many there are."""
        starts = np.searchsorted(self.sorted, tokens)
        return starts, np.searchsorted(self.sorted, tokens + 1) - starts


def rouge_precision(question: str, passage: str) -> tuple[float, float, float]:
    """(ROUGE-1, ROUGE-2, ROUGE-L) precision of one question against one passage."""
    return _precisions(tokenize(question), tokenize(passage))


def _precisions(q_tokens: list[str], p_tokens: list[str]) -> tuple[float, float, float]:
    vocab: dict[str, int] = {}
    passage = _Passage.of(p_tokens, vocab)
    return passage.precisions([vocab.setdefault(t, len(vocab)) for t in q_tokens])


class _Passage:
    """A passage tokenised once: token ids with their inverted index, and its unigram
    and bigram counts, reused for every question that labels it (a 10 MB section is
    read once per run)."""

    def __init__(self, ids: list[int]):
        self.index = _Index(np.asarray(ids, dtype=np.int64))
        self.grams = {1: _ngrams(ids, 1), 2: _ngrams(ids, 2)}

    @classmethod
    def of(cls, tokens: list[str], vocab: dict[str, int]) -> "_Passage":
        return cls([vocab.setdefault(t, len(vocab)) for t in tokens])

    def precisions(self, q: list[int]) -> tuple[float, float, float]:
        scores = []
        for n in (1, 2):
            total = max(len(q) - n + 1, 0)
            counts = _ngrams(q, n)
            scores.append(sum(min(c, self.grams[n][g]) for g, c in counts.items()) / total if total else 0.0)
        rouge_l = lcs_work(q, self.index)[0] / len(q) if q else 0.0
        return scores[0], scores[1], rouge_l


def overlap_columns(
    questions: list[Question], sections_by_id: dict[str, Section]
) -> dict[str, list[float | None]]:
    """Columns ``rouge1_p``, ``rouge2_p``, ``rougeL_p``: one value per question, in order.

    ``None`` for a question with no relevant section (unanswerable). Each value is the
    maximum over the question's relevant sections. A section is tokenised once and
    kept only until the last question that labels it (a run's labelled sections,
    each with its n-gram counts, would otherwise all be held at once). A label naming no section in
    ``sections_by_id`` is a ``KeyError`` (datasets are validated before this runs).
    """
    columns: dict[str, list[float | None]] = {name: [] for name in COLUMNS}
    passages: dict[str, _Passage] = {}
    vocab: dict[str, int] = {}
    last_use = {section_id: row for row, question in enumerate(questions) for section_id in question.relevant}
    for row, question in enumerate(questions):
        if not question.relevant:
            for name in COLUMNS:
                columns[name].append(None)
            continue
        q_ids = [vocab.setdefault(t, len(vocab)) for t in tokenize(question.text)]
        best = [0.0, 0.0, 0.0]
        for section_id in question.relevant:
            if section_id not in passages:
                try:
                    text = sections_by_id[section_id].text
                except KeyError:
                    raise KeyError(
                        f"question {question.id!r} labels {section_id!r}, which is not among the sections"
                    ) from None
                passages[section_id] = _Passage.of(tokenize(text), vocab)
            scores = passages[section_id].precisions(q_ids)
            best = [max(b, s) for b, s in zip(best, scores)]
            if last_use[section_id] == row:  # no later question labels it: free its counts
                del passages[section_id]
        for name, value in zip(COLUMNS, best):
            columns[name].append(value)
    return columns
