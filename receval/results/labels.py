"""A run's name: one rule for every place that shows runs (the line a run prints, the
report in every format and its plots, ``compare``, ``select``, ``--show`` and ``list``).

- A run an experiment's stage made (``+experiment=stages`` runs ``+stage=hybrid_rerank``)
  is called by that name: ``conf/stage/*.yaml`` save it as the config's ``name`` key
  (any run may be given one: ``name=baseline``); a run saved before that key existed
  is named by its ``+stage=`` override.
- Among several runs, a run is called by what differs between them (:func:`naming`):
  its retriever as it reads (``bm25``, ``rrf(bm25+dense)``), a component another run
  lacks or has of another kind (``rerank=none`` beside ``rerank=dense@30``), then
  ``key=value`` for each other setting that differs (``max_words=40``). A setting
  differs only between runs whose component is of the same kind (bm25's ``k1`` beside
  tfidf is no difference); a named run leaves out what its name already tells apart.
- One run alone, or runs that differ in nothing, are described (:func:`describe`):
  ``bm25 > dense@30, 120 words, headings``.

A value is shown as typed (:func:`receval.core.formatting.shown`, ``"label"``), never as ``null`` (a setting a run does not
have is left out; one set to null reads ``none``) and never as a URL (its host), a
file path by its last part. ``compare`` lists every difference of two saved configs
with the same values (:mod:`receval.analysis.differences`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from receval.core.formatting import shown
from receval.core.secrets import without_urls
from receval.results.identity import is_result_key
from receval.results.configs import ordered_as_named

NAME = "name"  # the config key naming a run (set by conf/stage/*.yaml)
STAGE_GROUP = "stage"  # conf/stage/: ``+stage=keyword`` names runs saved before NAME existed
GROUPS = ("chunking", "retriever", "rerank", "transform")  # components a run has (rerank, transform: or not)
OPTIONAL = ("rerank", "transform")  # components a run may lack (null, or saved before the group existed)
_BARE = "retriever"  # the one component shown without ``key=``: what the run is


# ------------------------------------------------------------------ one config


def run_name(config: dict, overrides: list[str] | None = None) -> str | None:
    """The name a run was given (``name`` in its config, else its ``+stage=`` override)."""
    value = config.get(NAME) if isinstance(config, dict) else None
    if isinstance(value, str) and value.strip():
        return value.strip()
    for override in overrides or []:
        key, _, choice = str(override).lstrip("+~").partition("=")
        if key == STAGE_GROUP and choice.strip():
            return choice.strip()
    return None


def component(group: str, node: Any, text: str | None = None) -> str:
    """A component as it reads: ``text``, what the run wrote for it (run.json's
    ``label.components``: its schema's ``describe``, ``rrf(bm25+dense)``, ``dense@30``),
    else its kind; ``none`` when the run has none."""
    if node is None:
        return "none"
    if isinstance(node, str):
        return node
    if isinstance(text, str) and text:
        return without_urls(text)
    return without_urls(str(node.get("kind", node.get("name", "?"))) if isinstance(node, dict) else "?")


def signature(node: Any) -> tuple:
    """What kind of component ``node`` is, members and fusion included:
    ``("fused", ("bm25",), ("dense",), ("rrf",))``; ``("none",)`` when absent."""
    if node is None:
        return ("none",)
    if isinstance(node, str):
        return (node,)
    if isinstance(node, list | tuple):
        return tuple(signature(item) for item in node)
    if not isinstance(node, dict):
        return ()
    parts: list = [node.get("kind", node.get("name"))]
    for key, value in node.items():
        if isinstance(value, dict) and "kind" in value:  # a fused retriever's fusion
            parts.append(signature(value))
        elif are_members(key, value):
            parts.extend(signature(v) for v in value)
    return tuple(parts)


MEMBERS = "members"  # a component's list of components (retriever.members)


def are_members(key: str, items: Any) -> bool:
    """``items`` is a list of components: kind names or nodes with a kind under ``members``."""
    return (str(key).rsplit(".", 1)[-1] == MEMBERS and isinstance(items, list)
            and all(isinstance(v, str) or (isinstance(v, dict) and "kind" in v) for v in items))


def settings(config: dict) -> dict[str, Any]:
    """Every setting that can tell runs apart, dotted, in config order: each component's
    keys (a fused retriever's members by index: ``retriever.members.0.k1``) and the
    top-level ones. Left out: kinds (the component says them), the name, and settings
    that do not change results (:data:`receval.results.identity.NON_RESULT_KEYS`)."""
    out: dict[str, Any] = {}

    def walk(node: Any, key: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k != "kind":
                    walk(v, f"{key}.{k}" if key else str(k))
            return
        if node and are_members(key, node):
            for i, item in enumerate(node):
                walk({"kind": item} if isinstance(item, str) else item, f"{key}.{i}")
            return
        if is_result_key(key) and key not in (NAME, "hydra") and not key.startswith("hydra."):
            out[key] = tuple(node) if isinstance(node, list) else node

    walk(config if isinstance(config, dict) else {}, "")
    return out


def as_written(config: dict, written: Any) -> tuple[dict, dict[str, str]]:
    """A run's config with its component nodes as the run wrote them (run.json's
    ``label.nodes``: members filled by their kinds' schemas, so a default left out and
    the same value written out are no difference), and its components' texts."""
    written = written if isinstance(written, dict) else {}
    nodes = written.get("nodes") if isinstance(written.get("nodes"), dict) else {}
    texts = written.get("components") if isinstance(written.get("components"), dict) else {}
    config = config if isinstance(config, dict) else {}
    if nodes:
        config = {**config, **{g: nodes[g] for g in GROUPS if g in config and g in nodes}}
    return config, {g: t for g, t in texts.items() if isinstance(t, str)}


def parts(config: dict, overrides: list[str] | None = None, texts: dict[str, str] | None = None) -> tuple[str, str]:
    """One run on its own, in two parts (the line a run prints aligns them): what it
    is, ``[name: ]retriever[ > rerank]``, and its chunking, ``120 words, headings``
    (``texts``: each component's text as the run wrote it, :func:`component`)."""
    texts = texts or {}
    name = run_name(config or {}, overrides)
    what = ""
    if config and config.get("retriever"):
        what = component("retriever", config["retriever"], texts.get("retriever"))
        if config.get("transform"):
            what = f"{component('transform', config['transform'], texts.get('transform'))} > {what}"
        if config.get("rerank"):
            what += f" > {component('rerank', config['rerank'], texts.get('rerank'))}"
    what = f"{name}: {what}" if name and what else (name or what)
    chunks = component("chunking", config["chunking"], texts.get("chunking")) if config and config.get("chunking") else ""
    return what, chunks


def describe(config: dict, overrides: list[str] | None = None, texts: dict[str, str] | None = None) -> str:
    """One run on its own: ``hybrid_rerank: rrf(bm25+dense) > dense@30, 120 words, headings``."""
    return ", ".join(part for part in parts(config, overrides, texts) if part) or "?"


# ------------------------------------------------------------------ several runs


@dataclass(frozen=True)
class Naming:
    """How a list of runs is shown: ``labels`` (one per run, distinct), ``columns`` (the
    names of what differs, the report's parameter columns: ``name`` when a run has one,
    ``retriever``, ``rerank``, ``max_words``...), ``params`` (per run, column -> value,
    only what applies to that run: a component's text, a setting's saved value)."""

    labels: list[str]
    columns: list[str]
    params: list[dict[str, Any]]
    keys: dict[str, str]  # column -> the dotted config key it shows (``max_words`` -> ``chunking.max_words``)


def _component_of(key: str) -> str | None:
    group = key.split(".", 1)[0]
    return group if group in GROUPS else None


def naming(
    configs: list[dict], overrides: list[list[str]] | None = None, fallbacks: list[str] | None = None,
    written: list[dict | None] | None = None,
) -> Naming:
    """Labels and parameter columns for runs shown together (see the module docstring).
    ``configs``: each run's saved config (plain data); ``overrides``: each run's
    command-line overrides (they order the columns and name pre-``name`` stage runs);
    ``fallbacks``: what to call a run with no saved config (its folder); ``written``:
    each run's run.json ``label`` (its components' texts and filled nodes, :func:`as_written`)."""
    n = len(configs)
    pairs = [as_written(c, w) for c, w in zip(configs, written or [None] * n)]
    configs = [c for c, _ in pairs]
    texts = [t for _, t in pairs]
    overrides = list(overrides or [[] for _ in configs])
    names = [run_name(c or {}, o) for c, o in zip(configs, overrides)]
    values: list[dict[str, Any]] = []  # per run: component (its signature) or setting -> value
    order: dict[str, None] = {}
    for config in configs:
        config = config if isinstance(config, dict) else {}
        run_values: dict[str, Any] = {}
        for group in GROUPS:
            if group in config or group in OPTIONAL and config:
                run_values[group] = signature(config.get(group))
        run_values.update(settings(config))
        values.append(run_values)
        order.update(dict.fromkeys(_config_order(run_values)))

    def text(i: int, group: str) -> str:  # only for what is shown: describe() is not free
        node = configs[i].get(group)
        if group == "chunking":  # its settings say the rest
            return str(node.get("kind", "?")) if isinstance(node, dict) else str(node)
        return component(group, node, texts[i].get(group))

    def differs(key: str, among: list[int]) -> bool:
        group = _component_of(key) if key not in GROUPS else None
        by_kind: dict[Any, set] = {}
        for i in among:
            if key in values[i]:
                kind = values[i].get(group) if group else None
                by_kind.setdefault(repr(kind), set()).add(repr(values[i][key]))
        return any(len(v) > 1 for v in by_kind.values())

    everyone = list(range(n))
    differing = [k for k in ordered_as_named(list(order), overrides) if differs(k, everyone)]
    named = [i for i in everyone if names[i]]
    by_name: dict[str, list[int]] = {}
    for i in named:
        by_name.setdefault(names[i], []).append(i)
    # a key the name tells apart is no part of a named run's label (the table keeps it)
    unexplained = [k for k in differing if any(differs(k, group) for group in by_name.values())]
    short = _short_names(differing, reserved={"name"} if named else set())

    labels, params = [], []
    for i in everyone:
        keys = unexplained if names[i] else differing
        pieces = [names[i]] if names[i] else []
        for key in keys:
            if key not in values[i]:
                continue
            if key in GROUPS:
                what = text(i, key)
                pieces.append(what if key == _BARE else f"{short[key]}={what}")
            else:
                pieces.append(f"{short[key]}={shown(values[i][key], 'label')}")
        if not pieces:
            pieces = [describe(configs[i], overrides[i], texts[i]) if configs[i] else
                      f"{fallbacks[i] if fallbacks else '?'} (no saved config)"]
        labels.append(without_urls(" ".join(pieces)))
        row = {"name": names[i]} if named and names[i] else {}
        for key in differing:
            if key in values[i]:
                row[short[key]] = text(i, key) if key in GROUPS else values[i][key]
        params.append(row)
    columns = (["name"] if named else []) + [short[k] for k in differing]
    counts = Counter(labels)
    labels = [f"{label} #{i}" if counts[label] > 1 else label for i, label in enumerate(labels)]
    return Naming(labels=labels, columns=columns, params=params,
                  keys={**({"name": NAME} if named else {}), **{short[k]: k for k in differing}})


def naming_of(runs: list) -> Naming:
    """:func:`naming` of stored runs (:class:`receval.results.stored.Run`)."""
    return naming([r.config for r in runs], [r.overrides for r in runs], [r.run_dir.name for r in runs],
                  [r.facts.get("label") for r in runs])


def nodes_of(run) -> dict:
    """A stored run's config with its component nodes as it wrote them (:func:`as_written`)."""
    return as_written(run.config, run.facts.get("label"))[0]


def run_labels(runs: list) -> list[str]:
    """The labels of stored runs shown together."""
    return naming_of(runs).labels


def _config_order(run_values: dict[str, Any]) -> list[str]:
    """A run's keys, each component before its own settings."""
    out: dict[str, None] = {}
    for key in run_values:
        group = key.split(".", 1)[0]
        if group in run_values:
            out[group] = None
        out[key] = None
    return list(out)


def _short_names(keys: list[str], reserved: set[str] = frozenset()) -> dict[str, str]:
    """The shortest dotted suffix naming each key apart from the others (and from the
    ``reserved`` column names), never a bare index: ``chunking.max_words`` ->
    ``max_words``; ``retriever.k1`` beside ``retriever.members.0.k1`` ->
    ``retriever.k1`` and ``members.0.k1``."""
    out: dict[str, str] = {}
    for key in keys:
        bits = key.split(".")
        for n in range(1, len(bits) + 1):
            candidate = ".".join(bits[-n:])
            if bits[-n].isdigit() and n < len(bits):
                continue
            clash = (candidate in reserved and candidate != key) or any(
                other != key and (other == candidate or other.endswith("." + candidate)) for other in keys
            )
            if not clash or n == len(bits):
                out[key] = candidate
                break
    return out
