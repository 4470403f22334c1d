"""An LLM's own token count of each ranked chunk: what a token budget counts with
``metrics.tokenizer`` set (a local ``tokenizer.json``; the ``tokenizers`` package, nothing
downloaded). Without it the budget counts the words ``chunking.max_words`` counts.

The text counted is the chunk's text on its page, heading prefix aside (the same text the
word count reads, :func:`receval.measures.nuggets.page_text`), encoded without special
tokens. Each distinct chunk of the rankings is encoded once. Which tokenizer counted (the
sha256 of its file) is stored in ``run.json`` (``budget``), and the read side refuses to
compare budgets counted by different tokenizers (:mod:`receval.analysis.budget`); the
digest is part of the run's identity hash, so a tokenizer changed in place is another run.
"""

from __future__ import annotations

import numpy as np

from receval.retrievers.text import load_tokenizer_json

WORDS = {"unit": "words"}  # run.json's ``budget`` without a tokenizer


def budget_unit(path: str | None) -> dict:
    """What counts a run's budget, as run.json's ``budget`` stores it."""
    if path is None:
        return dict(WORDS)
    _, sha = load_tokenizer_json(path, "metrics.tokenizer")
    return {"unit": "tokenizer", "path": str(path), "sha256": sha}


def contents(tokenizer: str | None) -> dict[str, str]:
    """The budget tokenizer's file digest, as the run's identity holds it
    (:func:`receval.results.identity.identity_hash`); a missing file is a ConfigError."""
    return {} if tokenizer is None else {"metrics.tokenizer": budget_unit(tokenizer)["sha256"]}


def chunk_token_counts(path: str, texts: list[str], chunk_idx: np.ndarray) -> np.ndarray:
    """(Q, K) the tokenizer's count of each ranked chunk (indices into ``texts``, -1: none, 0)."""
    model, _ = load_tokenizer_json(path, "metrics.tokenizer")
    used = np.unique(chunk_idx[chunk_idx >= 0])
    encoded = model.encode_batch([texts[c] for c in used.tolist()], add_special_tokens=False) if used.size else []
    counts = np.fromiter((len(e.ids) for e in encoded), np.int64, len(encoded))
    out = np.zeros(chunk_idx.shape, dtype=np.int64)
    ok = chunk_idx >= 0
    out[ok] = counts[np.searchsorted(used, chunk_idx[ok])]
    return out
