"""Retrievers score every chunk for a batch of questions; ``build`` makes one from a config.

Single retrievers: ``bm25``, ``tfidf``, ``dense``. A retriever config with ``members``
is fused (:mod:`receval.retrievers.fusion`); one with ``rerank`` gets a second stage
(:mod:`receval.retrievers.rerank`). A member named twice (hybrid's ``dense`` and its
re-ranker) is built and fitted once.
"""

from __future__ import annotations

from pathlib import Path

from receval.errors import ConfigError
from receval.retrievers.base import Hits, Retriever, search
from receval.text import Tokenizer

SINGLE = ("bm25", "tfidf", "dense")


def build(cfg, vocabularies=None) -> Retriever:
    """The retriever a run config's ``retriever`` (and ``fusion``) describe.

    ``vocabularies``: a shared source of chunk token counts for lexical retrievers
    (the index cache); without it each one tokenises the chunks itself.
    """
    spec = cfg.retriever
    tokenizer = Tokenizer(stopwords=cfg.tokenizer.stopwords, stem=cfg.tokenizer.stem)
    made: dict[str, Retriever] = {}

    def single(name: str, key: str) -> Retriever:
        if name not in made:
            made[name] = _single(name, key, spec, tokenizer, cfg.cache_dir, vocabularies)
        return made[name]

    if spec.members:
        from receval.retrievers.fusion import Fused

        fusion = cfg.fusion
        members = [single(name, "retriever.members") for name in spec.members]
        first: Retriever = Fused(
            spec.name, members, method=fusion.method, k=fusion.k, normalize=fusion.normalize,
            weights=list(fusion.weights), size=fusion.candidates,
        )
    else:
        first = single(spec.name, "retriever.name")
    if not spec.rerank:
        return first
    from receval.retrievers.rerank import Reranked

    if spec.first_size < 1:
        raise ConfigError(f"retriever.first_size={spec.first_size}: use an integer >= 1")
    return Reranked(first.name, first, single(spec.rerank, "retriever.rerank"), spec.first_size)


def api_calls(retriever) -> dict[str, int]:
    """Paid API calls per stage so far: members by name, the re-ranker as ``rerank``."""
    if hasattr(retriever, "members"):
        calls: dict[str, int] = {}
        for member in retriever.members:
            calls.update(api_calls(member))
        return calls
    if hasattr(retriever, "second"):
        return {**api_calls(retriever.first), "rerank": getattr(retriever.second, "api_calls", 0)}
    return {retriever.name: getattr(retriever, "api_calls", 0)}


def _single(name: str, key: str, spec, tokenizer: Tokenizer, cache_dir, vocabularies) -> Retriever:
    if name == "bm25":
        from receval.retrievers.bm25 import BM25

        return BM25(tokenizer, k1=spec.k1, b=spec.b, vocabularies=vocabularies)
    if name == "tfidf":
        from receval.retrievers.tfidf import TfIdf

        return TfIdf(tokenizer, vocabularies=vocabularies)
    if name == "dense":
        from receval.retrievers.dense import Dense

        return Dense.from_config(spec, Path(cache_dir) if cache_dir else None)
    hint = "" if key != "retriever.name" else "; a fused retriever lists retriever.members"
    raise ConfigError(f"{key}: {name!r} is not a retriever; use one of: {', '.join(SINGLE)}{hint}")


__all__ = ["Hits", "Retriever", "api_calls", "build", "search"]
