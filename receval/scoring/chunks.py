"""Measures of the text sent: over the first k chunks of a ranking (before the chunks
are collapsed to units), or the chunks a token budget holds (:mod:`receval.scoring.budget`).

Each reads a :class:`ChunkRanking`, per-chunk-rank counts a run computes from the pages
(:mod:`receval.measures.spans`, :mod:`receval.measures.novelty`,
:mod:`receval.measures.nuggets`) and stores with its rows, so the read side derives any
k or budget from a stored run with the same functions. Tokens are the words
``chunking.max_words`` counts (one CJK character a word). Each family's formula is the
docstring of its function (declared in :mod:`receval.scoring.shipped`), with C_k the
chunks at ranks 1..k, |c| a chunk's tokens, U_k the tokens of the pages inside C_k
counted once (their union), and E the tokens of the question's units. ``k`` is an int (every question's first k
chunks) or one cutoff per question (a budget's).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: alpha-nDCG's redundancy penalty: the TREC 2009-2012 Web track diversity task's value.
ALPHA = 0.5


@dataclass(frozen=True)
class ChunkRanking:
    """Per-chunk-rank counts of Q rankings of K chunks (0 past each ranking's end).

    ``lengths`` (Q,): chunks each ranking holds; ``words`` (Q, K): each chunk's tokens;
    ``new`` (Q, K): of those, the ones no chunk above it holds; ``evidence`` (Q, K): tokens
    of the question's units it adds to those the chunks above cover; ``evidence_total``
    (Q,): the units' tokens |E|; ``tokens`` (Q, K): the budget's count of each chunk (None:
    ``words``); ``novelty`` (Q, K) alpha-nDCG's gain G(r) and ``novelty_ideal`` (Q, L) the
    ideal ranking's; ``nugget_at`` (Q, N): each nugget's support rank (0: never), with
    ``nugget_vital`` and ``nugget_valid`` (Q, N) bool (False past a question's nuggets)."""

    lengths: np.ndarray
    words: np.ndarray
    new: np.ndarray | None = None
    evidence: np.ndarray | None = None
    evidence_total: np.ndarray | None = None
    tokens: np.ndarray | None = None
    novelty: np.ndarray | None = None
    novelty_ideal: np.ndarray | None = None
    nugget_at: np.ndarray | None = None
    nugget_vital: np.ndarray | None = None
    nugget_valid: np.ndarray | None = None

    @property
    def sent(self) -> np.ndarray:
        """The budget's count of each chunk."""
        return self.words if self.tokens is None else self.tokens


def _sum(values: np.ndarray, k) -> np.ndarray:
    """Row sums of ``values`` (Q, K) over the first k (an int, or (Q,) per question)."""
    values = np.asarray(values, dtype=np.float64)
    if np.ndim(k) == 0:
        return values[:, :k].sum(axis=1)
    k = np.asarray(k, dtype=np.int64)
    width = min(values.shape[1], int(k.max(initial=0)))
    return (values[:, :width] * (np.arange(width)[None, :] < k[:, None])).sum(axis=1)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    num, den = np.asarray(num, np.float64), np.asarray(den, np.float64)
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def context_tokens(ranking: ChunkRanking, k) -> np.ndarray:
    """sum over c in C_k of |c|: the text a generator is sent (overlapping windows count
    twice, heading prefixes do not count); in the budget's unit (``metrics.tokenizer``'s
    tokens when set). Lower is better."""
    return _sum(ranking.sent, k)


def token_recall(ranking: ChunkRanking, k) -> np.ndarray:
    """|E & U_k| / |E|: the share of the units' tokens the chunks sent hold."""
    return _ratio(_sum(ranking.evidence, k), ranking.evidence_total)


def token_precision(ranking: ChunkRanking, k) -> np.ndarray:
    """|E & U_k| / |U_k|: the share of the text sent that is the units' (0 when nothing is sent)."""
    return _ratio(_sum(ranking.evidence, k), _sum(ranking.new, k))


def token_iou(ranking: ChunkRanking, k) -> np.ndarray:
    """|E & U_k| / |E | U_k|."""
    shared = _sum(ranking.evidence, k)
    return _ratio(shared, ranking.evidence_total + _sum(ranking.new, k) - shared)


def redundancy(ranking: ChunkRanking, k) -> np.ndarray:
    """1 - |U_k| / sum_{c in C_k} |c|: the share of the tokens sent that an earlier chunk of
    the same ranking already supplied (overlapping windows of one section, a passage reached
    twice); 0 when nothing is sent. Lower is better. Text is "the same" when it is the same
    place of the same page: one passage copied onto two pages is not counted."""
    sent = _sum(ranking.words, k)
    return _ratio(sent - _sum(ranking.new, k), sent)


def _discounted(gains: np.ndarray, k) -> np.ndarray:
    gains = np.asarray(gains, dtype=np.float64)
    discount = 1.0 / np.log2(np.arange(2, gains.shape[1] + 2, dtype=np.float64))
    return _sum(gains * discount, k)


def alpha_ndcg(ranking: ChunkRanking, k) -> np.ndarray:
    """alpha-DCG@k / ideal alpha-DCG@k (Clarke et al., "Novelty and diversity in information
    retrieval evaluation", SIGIR 2008), over the question's units i (its evidence items, else
    its labelled sections, grades ignored): with J(r, i) = 1 when the chunk at rank r holds
    unit i, G(r) = sum_i J(r, i) (1 - alpha)^{c_i(r)}, c_i(r) the chunks above r holding i, and
    alpha-DCG@k = sum_{r<=k} G(r) / log2(r + 1); alpha = 0.5 (:data:`ALPHA`, the TREC Web
    track's). A second chunk of a unit already sent earns half, a third a quarter. What
    "holds" means and the ideal ranking: :mod:`receval.measures.novelty`."""
    return _ratio(_discounted(ranking.novelty, k), _discounted(ranking.novelty_ideal, k))


def _nuggets(ranking: ChunkRanking, k, vital: bool) -> np.ndarray:
    """Supported / counted nuggets (vital ones only with ``vital``); NaN with none counted."""
    counted = ranking.nugget_valid & (ranking.nugget_vital if vital else True)
    at = ranking.nugget_at
    cut = np.broadcast_to(np.asarray(k, dtype=np.int64), (at.shape[0],))
    supported = counted & (at > 0) & (at <= cut[:, None])
    total = counted.sum(axis=1).astype(np.float64)
    return np.divide(supported.sum(axis=1), total, out=np.full(total.shape, np.nan), where=total > 0)


def nugget_recall(ranking: ChunkRanking, k) -> np.ndarray:
    """Nuggets supported by C_k / the question's nuggets (TREC RAG 2024's strict nugget
    recall: Pradeep et al., "Initial nugget evaluation results for the TREC 2024 RAG track
    with the AutoNuggetizer framework", 2024): a nugget is supported by C_k when its support
    rank (:mod:`receval.measures.nuggets`, or a judge's label: :mod:`receval.results.support`)
    is <= k. Null for a question without nuggets."""
    return _nuggets(ranking, k, vital=False)


def vital_nugget_recall(ranking: ChunkRanking, k) -> np.ndarray:
    """``nugget_recall`` over the question's vital nuggets only (the answer is incomplete
    without them); null for a question without vital nuggets."""
    return _nuggets(ranking, k, vital=True)
