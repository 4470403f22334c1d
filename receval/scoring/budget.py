"""Where a token budget cuts a ranking: the one rule every ``@Btok`` measure uses.

A RAG system spends a context budget of tokens, not k chunks: at k = 3 a 120-word
chunker sends three times the text a 40-word one does, so "hit@3" compares unequal
amounts of context. ``<measure>@<B>tok`` (``hit@300tok``, ``recall@1000tok``) compares at
equal context instead.

The rule. The chunks are sent in rank order, each whole, while the running total of
their tokens stays within B: the first chunk that would take the total past B is *not*
sent, and neither is any chunk after it (the ranking is cut there, not skipped over to a
shorter chunk further down; a chunk is never truncated). So a question sends
``k_B`` chunks, the longest prefix of its ranking with ``tokens_1 + ... + tokens_k <= B``
(:func:`chunks_within`); when its first chunk alone is longer than B it sends nothing,
and every measure of it is 0. Tokens are counted in the unit ``chunking.max_words``
counts (whitespace-separated words, one CJK character a word:
:func:`receval.chunking.wordspans.token_spans`), of the chunk's text on its page
(heading prefixes aside), or with ``metrics.tokenizer`` set, the tokens a local
``tokenizer.json`` gives that text (an LLM's own count).

Units. A ranking of units (sections, documents) is the chunks collapsed, each unit kept at
its first chunk's rank (:func:`receval.run.evaluate.collapse_to_sections`): a unit is within
the budget when its first chunk is (:func:`units_within`), and the unit measures (hit,
recall, precision, nDCG, rr, AP) are their usual selves at that per-question cutoff
(:meth:`receval.scoring.declared.Measure.at`). A later chunk of a unit already sent still
spends budget: it is text the generator gets.

Chunk measures (``context_tokens``, the token measures, ``redundancy``, ``alpha_ndcg``,
``nugget_recall``) count the ``k_B`` chunks (:mod:`receval.scoring.chunks`).

Invariants (tested): ``context_tokens@Btok <= B``; ``k_B`` and every cumulative measure
(hit, recall, rr, AP, context tokens, token recall, nugget recall) never fall as B grows.
When a ranking ends before its tokens reach B (``depth`` too small, or few chunks
scored), the budget is not spent: :func:`short_of` counts those questions.
"""

from __future__ import annotations

import numpy as np


def chunks_within(tokens: np.ndarray, lengths: np.ndarray, budget: int) -> np.ndarray:
    """(Q,) number of leading chunks sent within ``budget``: the longest prefix of each
    row of ``tokens`` (Q, K; ``lengths`` (Q,) chunks the ranking holds, the rest padding)
    whose sum is <= ``budget``."""
    tokens = np.asarray(tokens, dtype=np.int64)
    if tokens.shape[1] == 0:
        return np.zeros(tokens.shape[0], dtype=np.int64)
    within = np.cumsum(tokens, axis=1) <= budget  # tokens >= 0: true on a prefix only
    return np.minimum(within.sum(axis=1), np.asarray(lengths, dtype=np.int64))


def units_within(first_chunk: np.ndarray, chunks: np.ndarray) -> np.ndarray:
    """(Q,) number of leading units within the budget: those whose first chunk (1-based
    chunk rank, (Q, U), 0 past the ranking's end) is among the ``chunks`` (Q,) sent."""
    first_chunk = np.asarray(first_chunk, dtype=np.int64)
    return ((first_chunk > 0) & (first_chunk <= np.asarray(chunks)[:, None])).sum(axis=1).astype(np.int64)


def short_of(tokens: np.ndarray, lengths: np.ndarray, depth: int | None, budget: int) -> np.ndarray:
    """(Q,) True where a ranking of ``depth`` chunks (``lengths``: chunks each holds) holds
    fewer than ``budget`` tokens in all: more depth might have spent more of the budget."""
    total = np.asarray(tokens, dtype=np.int64).sum(axis=1)
    full = np.ones(total.shape, dtype=bool) if depth is None else np.asarray(lengths) >= depth
    return full & (total < budget)
