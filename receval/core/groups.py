"""The names a run config is typed by, for the side that writes one back out.

Hydra types a run by a defaults list: receval's schema (:data:`SCHEMA`, stored by
:mod:`receval.run.config`), then, in each component group (:data:`GROUPS`, the keys of
:data:`receval.run.components.BASES`), the option schema its ``kind`` names
(``retriever/base_bm25``, stored by :func:`receval.run.components.register_schemas`).
``select``'s best.yaml (:mod:`receval.render.best_yaml`) writes that list without
importing the run side."""

from __future__ import annotations

SCHEMA = "receval_schema"
GROUPS = ("chunking", "retriever", "rerank", "judge", "transform")


def primary_defaults(data: dict) -> list:
    """The defaults list of a primary config holding a whole run (``select``'s best.yaml):
    receval's schema, then each group's option schema by its ``kind``
    (``chunking: base_words``), then the file itself, so each group node is typed as
    :func:`receval.run.config.structured_run` types it."""
    groups = [
        {group: f"base_{data[group]['kind']}"}
        for group in GROUPS
        if isinstance(data.get(group), dict) and "kind" in data[group]
    ]
    return [SCHEMA, *groups, "_self_"]
