"""Retrievers score every chunk for a batch of questions; ``build`` picks one by name."""

from __future__ import annotations

from receval.errors import ConfigError
from receval.retrievers.base import Retriever, search
from receval.text import Tokenizer


def build(cfg, tokenizer: Tokenizer) -> Retriever:
    """The retriever a ``retriever`` config names."""
    from receval.retrievers.bm25 import BM25
    from receval.retrievers.tfidf import TfIdf

    if cfg.name == "bm25":
        return BM25(tokenizer, k1=cfg.k1, b=cfg.b)
    if cfg.name == "tfidf":
        return TfIdf(tokenizer)
    raise ConfigError(f"retriever.name={cfg.name!r} is not known; use one of: bm25, tfidf")


__all__ = ["Retriever", "build", "search"]
