"""Every difference between two saved configs, for ``compare``: a setting changed, a
component of another kind, a component added or removed
(``rerank: none -> llm:qwen@30 (first_size 30, model qwen, ...)``), each value shown as
run labels show values (:func:`receval.core.formatting.shown`, ``"label"``: a URL as its host)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from receval.results.identity import is_result_key
from receval.core.formatting import shown
from receval.results.labels import are_members, component, settings, signature

_ABSENT = object()  # a key one config of the two lacks


@dataclass(frozen=True)
class Difference:
    """One difference of two saved configs: dotted ``key``, the two values as saved
    (None when absent), and ``text`` (``rerank: none -> llm (first_size 30, ...)``)."""

    key: str
    a: Any
    b: Any
    text: str
    affects_results: bool


def differences_of(
    a: dict, b: dict, defaults: dict[str, Any] | None = None, texts: tuple[dict, dict] | None = None,
) -> list[Difference]:
    """Every difference between two saved configs, in config order: a setting changed,
    a component of another kind (``retriever: bm25 (...) -> rrf(bm25+dense) (...)``), a
    component added or removed (``rerank: none -> llm (model m, first_size 30)``).
    ``defaults`` (flattened schema defaults) stand in for a key one config lacks (a run
    saved before that setting existed); ``texts``: each run's components' texts as it
    wrote them, members filled in its nodes (:func:`receval.results.labels.as_written`)."""
    out: list[Difference] = []
    defaults = defaults or {}
    text_a, text_b = texts or ({}, {})

    def walk(x: Any, y: Any, key: str) -> None:
        if x is _ABSENT and key in defaults:
            x = defaults[key]
        if y is _ABSENT and key in defaults:
            y = defaults[key]
        if key == "hydra":
            return
        if _is_node(x) or _is_node(y):
            if signature(_value(x)) != signature(_value(y)):
                out.append(_difference(
                    key, x, y, f"{key}: {_node_text(key, x, text_a.get(key))} -> {_node_text(key, y, text_b.get(key))}"))
                return
        if isinstance(x, dict) and isinstance(y, dict):
            for k in list(x) + [k for k in y if k not in x]:
                walk(x.get(k, _ABSENT), y.get(k, _ABSENT), f"{key}.{k}" if key else str(k))
            return
        if isinstance(y, list) and are_members(key, x) and are_members(key, y) and len(x) == len(y):
            for i, (u, v) in enumerate(zip(x, y)):  # members: as the runs wrote them, filled
                walk(_node(u), _node(v), f"{key}.{i}")
            return
        if _value(x) != _value(y) or (x is _ABSENT) != (y is _ABSENT):
            out.append(_difference(key, x, y, f"{key}: {_leaf_text(x, y)} -> {_leaf_text(y, x)}"))

    walk(a or {}, b or {}, "")
    return out


def _node(x: Any) -> Any:
    """A member named by its kind alone (``dense``) as a node (``{kind: dense}``)."""
    return {"kind": x} if isinstance(x, str) else x


def _value(x: Any) -> Any:
    return None if x is _ABSENT else x


def _is_node(x: Any) -> bool:
    """A component node (a mapping with a kind), or a component slot left empty."""
    return isinstance(x, dict) and "kind" in x


def _difference(key: str, x: Any, y: Any, text: str) -> Difference:
    return Difference(key, _value(x), _value(y), text, is_result_key(key))


def _leaf_text(x: Any, other: Any) -> str:
    if x is _ABSENT:
        return "(not set)"
    text = shown(x, "label")
    if isinstance(x, str) and isinstance(other, str) and text == shown(other, "label") and x != other:
        text = _exact(x)  # two URLs on one host: what tells them apart, credentials left out
    return text


def _exact(text: str) -> str:
    try:
        parts = urlsplit(text)
    except ValueError:
        return text
    if not parts.scheme or not parts.hostname:
        return text
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.hostname}{port}{parts.path}"


def _node_group(key: str) -> str:
    bits = key.split(".")
    if len(bits) >= 2 and bits[-1] == "fusion":
        return "retriever/fusion"
    return "retriever" if bits[0] == "retriever" else bits[0]


def _node_text(key: str, node: Any, text: str | None = None) -> str:
    """A component node with its settings: ``llm (model m, first_size 30)``; ``none``
    (``text``: the component's text as the run wrote it)."""
    node = _value(node)
    if node is None:
        return "none"
    if not isinstance(node, dict):
        return shown(node, "label")
    name = component(_node_group(key), node, text)
    inner = {k: v for k, v in settings(node).items() if is_result_key(f"{key}.{k}")}  # not where it ran (rerank.ray.*)
    own = ", ".join(f"{k} {shown(v, 'label')}" for k, v in inner.items() if v is not None)
    return f"{name} ({own})" if own else name
