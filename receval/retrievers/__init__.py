"""Retrievers score or rank every chunk for a batch of questions; each kind is a component.

Kinds register themselves (:mod:`receval.run.components`): ``bm25``, ``tfidf``, ``dense``,
``fused`` (members fused per chunk, :mod:`receval.retrievers.fusion`), and whatever
else a module of this package registers. Every one is a
:class:`~receval.retrievers.base.Stage`; :mod:`receval.run.stages` puts a re-ranker after
a run's first stage.
"""

from __future__ import annotations

from receval.run import components
from receval.run.components import Context
from receval.retrievers.base import Block, Hits, Retriever, Stage, StageOutput, search


def build(node, context: Context, key: str = "retriever") -> Stage:
    """The retriever a ``retriever`` config node describes."""
    return components.build("retriever", node, context, key)


__all__ = ["Block", "Context", "Hits", "Retriever", "Stage", "StageOutput", "build", "search"]
