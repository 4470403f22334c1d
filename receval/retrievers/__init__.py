"""Retrievers score every chunk for a batch of questions; each kind is a component.

Kinds register themselves (:mod:`receval.components`): ``bm25``, ``tfidf``, ``dense``,
``fused`` (members fused per chunk, :mod:`receval.retrievers.fusion`), and whatever
else a module of this package registers. :func:`stages` builds a run's first stage
from its own config node and, when the run names a ``rerank`` node, puts the
re-ranker (:mod:`receval.rerankers`) after it.
"""

from __future__ import annotations

from receval import components
from receval.components import Context
from receval.retrievers.base import Hits, Retriever, search


def build(node, context: Context, key: str = "retriever") -> Retriever:
    """The retriever a ``retriever`` config node describes."""
    return components.build("retriever", node, context, key)


def stages(cfg, context: Context) -> Retriever:
    """A run's first stage (searching through ``cfg.transform`` when it names one,
    :mod:`receval.transforms`), followed by its re-ranker when ``cfg.rerank`` names one."""
    first = build(cfg.retriever, context)
    if cfg.get("transform") is not None:
        from receval.transforms import apply

        first = apply(cfg, first, context)
    node = cfg.get("rerank")
    if node is None:
        return first
    from receval.rerankers import Reranked

    reranker = components.build("rerank", node, context, "rerank")
    typed = components.typed("rerank", node, "rerank")  # a RerankConfig: first_size is a field of every re-ranker
    return Reranked(first, reranker, int(typed.first_size))


def api_calls(retriever) -> dict[str, int]:
    """Paid API calls per stage so far: members by name, the re-ranker as ``rerank``,
    a query transform as ``transform``."""
    if hasattr(retriever, "transform"):
        return {**api_calls(retriever.first), "transform": getattr(retriever.transform, "api_calls", 0)}
    if hasattr(retriever, "reranker"):
        return {**api_calls(retriever.first), "rerank": getattr(retriever.reranker, "api_calls", 0)}
    if hasattr(retriever, "members"):
        calls: dict[str, int] = {}
        for member in retriever.members:
            calls.update(api_calls(member))
        return calls
    return {retriever.name: getattr(retriever, "api_calls", 0)}


def facts(retriever) -> dict:
    """Facts a retriever measured over the run (lancedb's ``ann_recall@k``), its members' (and
    a query transform's first stage's) included."""
    found = dict(retriever.facts()) if hasattr(retriever, "facts") else {}
    inner = [retriever.first] if hasattr(retriever, "transform") else []
    for member in [*getattr(retriever, "members", ()), *inner]:
        found.update(facts(member))
    return found


def parts(retriever) -> list:
    """The retriever and every stage inside it (fused members, a re-ranked first stage,
    the retriever a re-ranker scores with), each once, inner ones first."""
    found: list = []
    inner = [getattr(retriever, "first", None), getattr(getattr(retriever, "reranker", None), "retriever", None)]
    for part in [*getattr(retriever, "members", ()), *inner]:
        if part is not None and part is not retriever:
            found += [p for p in parts(part) if not any(p is q for q in found)]
    return found + [retriever]


def truncated(retriever) -> dict[str, int]:
    """Per dense stage: chunks longer than its model's limit, which the model cut."""
    return {part.name: part.truncated for part in parts(retriever) if isinstance(getattr(part, "truncated", None), int)}


def encoder_threads(retriever) -> dict[str, int]:
    """Threads a stage's encoder runs at once, where it sets them itself (onnx: one
    batch per thread), keyed ``<stage>.encoder``."""
    found = {}
    for part in parts(retriever):
        count = getattr(getattr(part, "encoder", None), "threads", None)
        if isinstance(count, int):
            found[f"{part.name}.encoder"] = count
    return found


def warm_up(retriever, questions: list[str], depth: int, tie_rank) -> None:
    """One search before the timed one: the first question, its answer dropped.

    A stage's first call pays for set-up later calls do not (lazy allocations, thread
    pools, a server connection), which would otherwise land on one question's latency.
    Stages forget the batch they last scored (``forget``), so the timed search of the
    same question does the whole work again."""
    if not questions:
        return
    search(retriever, list(questions[:1]), depth, tie_rank, 1, label=None)
    for part in parts(retriever):
        forget = getattr(part, "forget", None)
        if callable(forget):
            forget()


def release(retriever) -> None:
    """After the search: every stage that can drops what it indexed (``release``), so
    a run's last steps do not hold its index beside the results they build."""
    for part in parts(retriever):
        drop = getattr(part, "release", None)
        if callable(drop):
            drop()


def describe(cfg) -> str:
    """The run's retriever label: ``bm25``, ``rrf(tfidf+bm25)``, ``... > dense@30``."""
    first = components.label("retriever", cfg.retriever)
    if cfg.get("transform") is not None:
        first = f"{components.label('transform', cfg.transform)} > {first}"
    node = cfg.get("rerank")
    if node is None:
        return first
    return f"{first} > {components.label('rerank', node)}"


__all__ = [
    "Context", "Hits", "Retriever", "api_calls", "build", "describe", "facts", "parts", "release", "search", "stages",
    "warm_up",
]
