"""The component registry: a config group's ``kind`` -> the class that builds it, and its schema.

A component (a retriever, a re-ranker, a chunker) is one module that decorates its
builder with :func:`component` plus one YAML file in its config group::

    @dataclass
    class BM25Config(RetrieverConfig):   # the group's typed base (BASES)
        kind: str = "bm25"
        k1: float = field(default=1.2, metadata=range_(0, 1000))

    @component("retriever", "bm25", BM25Config)
    def build_bm25(node, context): ...

Nothing central switches on names: :func:`discover` imports every module of the
component packages, so the decorators run, and :func:`register_schemas` stores each
schema in Hydra's ConfigStore as ``<group>/base_<kind>`` (Hydra's structured-config
pattern), so a YAML option starting ``defaults: [base_bm25]`` is typed: a misspelt
key (with or without ``+``) or a wrong type is an error naming the key, and each number
is checked against the range declared beside its field (:mod:`receval.schema`). A
component is built from its own config node (``build("retriever", cfg.retriever,
context)``), so what a run saves and what identifies it is only what applies to it.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, ClassVar

from omegaconf import DictConfig, ListConfig, OmegaConf

from receval.core.errors import ConfigError
from receval.schema import SHORTLIST, deep_range_problems, deep_unknown_keys, range_

# Packages whose modules register components (imported by ``discover``).
PACKAGES = {
    "retriever": "receval.retrievers", "rerank": "receval.rerankers", "chunking": "receval.chunking",
    "judge": "receval.judge", "transform": "receval.transforms",
}


@dataclass
class ChunkingConfig:
    """The type of a run's ``chunking`` node: every chunker's schema derives from it.

    No fields: OmegaConf types a field declared with a base dataclass as that base until
    an option's own schema (``chunking/base_words``, a subclass) is merged in, and then
    as the subclass; a field here would be a key of every chunker."""

    component_group: ClassVar[str] = "chunking"


@dataclass
class RetrieverConfig:
    """The type of a run's ``retriever`` node: every retriever's schema derives from it
    (no fields, as :class:`ChunkingConfig`)."""

    component_group: ClassVar[str] = "retriever"


@dataclass
class RerankConfig:
    """The type of a run's ``rerank`` node and the fields every re-ranker has."""

    component_group: ClassVar[str] = "rerank"
    first_size: int = field(default=30, metadata=range_(*SHORTLIST))  # chunks of the first stage re-scored per question

    def problems(self) -> list[str]:
        return []


@dataclass
class JudgeConfig:
    """The type of ``receval judge``'s ``judge`` node and the fields every judge has."""

    component_group: ClassVar[str] = "judge"
    # probe pairs graded besides the pool (receval.judge.probe): unrelated passages with the
    # question's words, or an instruction claiming relevance, injected; rates in <out>.probe.json
    probe: int = field(default=0, metadata=range_(0, 100_000))

    def problems(self) -> list[str]:
        return []


@dataclass
class TransformConfig:
    """The type of a run's ``transform`` node (what the first stage searches with:
    :mod:`receval.transforms`); no fields, as :class:`ChunkingConfig`."""

    component_group: ClassVar[str] = "transform"


# The typed base of each config group's options (Hydra's ``retriever: RetrieverConfig =
# MISSING`` pattern); a schema registered in one of these groups must derive from it.
BASES: dict[str, type] = {
    "chunking": ChunkingConfig, "retriever": RetrieverConfig, "rerank": RerankConfig, "judge": JudgeConfig,
    "transform": TransformConfig,
}


@dataclass(frozen=True)
class Entry:
    group: str
    kind: str
    schema: type
    builder: Callable[[Any, "Context"], Any]


_REGISTRY: dict[tuple[str, str], Entry] = {}
_discovered: set[str] = set()


def component(group: str, kind: str, schema: type) -> Callable:
    """Register ``builder(node, context)`` as the maker of ``group`` components of ``kind``."""
    if not is_dataclass(schema) or "kind" not in {f.name for f in fields(schema)}:
        raise TypeError(f"{schema.__name__}: a component schema is a dataclass with a 'kind' field")
    base = BASES.get(group)
    if base is not None and not issubclass(schema, base):
        raise TypeError(
            f"{schema.__name__}: a {group} schema derives from receval.run.components.{base.__name__} "
            f"(@dataclass class {schema.__name__}({base.__name__}): ...), the type of the run's {group} node"
        )

    def register(builder: Callable) -> Callable:
        _REGISTRY[(group, kind)] = Entry(group, kind, schema, builder)
        return builder

    return register


def discover(group: str | None = None) -> None:
    """Import every module of the component packages (once), registering their components."""
    for package in PACKAGES.values():  # a package may register several groups (retriever/fusion)
        if package in _discovered:
            continue
        _discovered.add(package)
        module = importlib.import_module(package)
        for info in pkgutil.iter_modules(module.__path__):
            if not info.name.startswith("_"):
                importlib.import_module(f"{package}.{info.name}")


def kinds(group: str) -> list[str]:
    discover(group)
    return sorted(kind for g, kind in _REGISTRY if g == group)


def entry(group: str, kind: str, key: str) -> Entry:
    discover(group)
    found = _REGISTRY.get((group, kind))
    if found is None:
        raise ConfigError(f"{key}={kind!r} is not a {group} kind; use one of: {', '.join(kinds(group))}")
    return found


def register_schemas() -> None:
    """Store every component schema in Hydra's ConfigStore as ``<group>/base_<kind>``."""
    from hydra.core.config_store import ConfigStore

    discover()
    store = ConfigStore.instance()
    for (group, kind), found in _REGISTRY.items():
        store.store(group=group, name=f"base_{kind}", node=found.schema)


@dataclass
class Context:
    """What components share within one run: the cache folder, the lexical index cache,
    and components already built (two nodes with equal config share one object, so a
    hybrid's dense member and a dense re-ranker load and encode once)."""

    cache_dir: str | None = None
    vocabularies: Any = None
    tokenizer: Any = None
    chunks: Any = None  # the run's chunks and sections, set once chunked (rank-only retrievers)
    sections: Any = None
    shared: dict[tuple, Any] = field(default_factory=dict)
    # the nodes come from a validated run spec (receval.run.spec): ranges and each schema's own
    # rules were checked there, once, so building does not check them again
    checked: bool = False

    def once(self, schema: type, node: Any, make: Callable[[], Any]) -> Any:
        """The object ``make`` builds for ``node``, built once per :func:`shared_key`
        (``schema``: the dataclass whose fields decide the object, e.g. ``EncoderFields``
        for every stage that encodes with one model)."""
        key = shared_key(schema, node)
        if key not in self.shared:
            self.shared[key] = make()
        return self.shared[key]


def shared_key(schema: type, node: Any) -> tuple:
    """What components share one object under: ``schema``'s name and the value ``node``
    holds for each of its fields. Every field is in the key, so a field added to a
    schema later can never let two different configs share one object."""
    if not is_dataclass(schema):
        raise TypeError(f"{schema!r}: a shared object's key comes from a dataclass schema")

    def value(name: str) -> Any:
        if isinstance(node, DictConfig):
            if name not in node:
                raise TypeError(f"{schema.__name__}.{name}: the config node has no such key")
            return node[name]
        return node[name] if isinstance(node, dict) else getattr(node, name)

    return (f"{schema.__module__}.{schema.__qualname__}", *((f.name, _hashable(value(f.name))) for f in fields(schema)))


def _hashable(value: Any) -> Any:
    """A config value as a hashable, comparable key part (containers become tuples)."""
    if isinstance(value, (DictConfig, ListConfig)):
        value = OmegaConf.to_container(value, resolve=True)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _hashable(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    return value


def typed(group: str, node: Any, key: str) -> DictConfig:
    """``node`` (a kind name, a dict or a config node) checked against its kind's schema."""
    if isinstance(node, str):
        node = {"kind": node}
    if node is None or "kind" not in node:
        raise ConfigError(f"{key}: name a {group} kind ({key}.kind=...); kinds: {', '.join(kinds(group))}")
    found = entry(group, str(node["kind"]), f"{key}.kind")
    unknown = deep_unknown_keys(found.schema, node, key)  # a key force-added with "+" survives the merge
    if unknown:
        raise ConfigError(unknown)
    base = OmegaConf.structured(found.schema)
    try:
        merged = OmegaConf.merge(base, node)
    except Exception as error:  # omegaconf's validation errors name the field
        field_key = getattr(error, "full_key", None)  # retriever.distributed=rya: name the key, not its node
        raise ConfigError(f"{key}.{field_key}: {_reason(error)}" if field_key else f"{key}: {_reason(error)}") from None
    return merged


def build(group: str, node: Any, context: Context, key: str | None = None) -> Any:
    """The component ``node`` describes, built by its kind's registered builder."""
    key = key or group
    checked = typed(group, node, key)
    found = entry(group, str(checked.kind), f"{key}.kind")
    problems = [] if context.checked else problems_of(checked, key)
    if problems:
        raise ConfigError(problems)
    return found.builder(checked, context)


def problems_of(node: DictConfig, key: str) -> list[str]:
    """Numbers outside their fields' ranges (:mod:`receval.schema`); once those hold, what
    the schema's optional ``problems`` method reports (values that must agree)."""
    values = OmegaConf.to_object(node)
    out_of_range = deep_range_problems(type(values), node, key)
    if out_of_range:
        return out_of_range
    check = getattr(values, "problems", None)
    return [f"{key}.{problem}" for problem in check()] if check else []


def tree_problems(group: str, node: Any, key: str) -> list[str]:
    """Every problem of ``node`` and of the components it holds (a fused retriever's members),
    without building anything: the checks a sweep runs before its first job."""
    try:
        checked = typed(group, node, key)
    except ConfigError as error:
        return list(error.problems)
    problems = problems_of(checked, key)
    parts = getattr(entry(group, str(checked.kind), key).schema, "parts", None)
    for child_group, child, child_key in parts(checked, key) if parts else ():
        problems += tree_problems(child_group, child, child_key)
    return problems


def label(group: str, node: Any) -> str:
    """A short human name for a component node: its schema's ``describe`` or its kind."""
    if node is None:
        return "none"
    if isinstance(node, str):
        return node
    kind = str(node.get("kind", "?"))
    describe = getattr(entry(group, kind, f"{group}.kind").schema, "describe", None)
    return describe(typed(group, node, group)) if describe else kind  # typed: a member's defaults filled


def _reason(error: Exception) -> str:
    message = str(error).splitlines()[0] if str(error) else type(error).__name__
    return message
