"""Does the judge grade runs it helped make?

LLM judges favour rankers built on LLMs (Balog, Metzler & Qin, "Rankers, judges, and
assistants", SIGIR 2025), and a model grading passages a copy of itself chose or
rewrote the query for is the sharpest case. The pool describes each run it pooled
(``role: run`` lines, :mod:`receval.analysis.pool`): its stages that call a chat model,
by kind, model and endpoint id (:func:`receval.core.endpoints.endpoint_id`). Two notes:

- the judge's endpoint and model also serve a stage of a run it judges (a transform or
  re-ranker; for ``judge=reranker``, its re-ranker's): that run's labels come from the
  model that chose or rewrote for it;
- an LLM judge grades runs with LLM stages at all (another model or endpoint).
"""

from __future__ import annotations

from receval.core.endpoints import endpoint_id

CITE = "LLM judges favour LLM-based rankers (Balog, Metzler & Qin, SIGIR 2025)"


def notes(judge_node, run_lines: list[dict]) -> list[str]:
    """The circularity notes for a judge config node and the pool's run lines."""
    inner = _get(judge_node, "reranker")  # judge=reranker: the re-ranker's endpoint is the judge's
    node = inner if inner is not None and not isinstance(inner, str) else judge_node
    base_url, model = _get(node, "base_url"), _get(node, "model")
    if not base_url or not model:  # qrels, oneshot, a local re-ranker: no endpoint
        return []
    chat = str(_get(node, "kind")) == "llm"
    mine = endpoint_id(str(base_url))
    same, other = [], []
    for run in run_lines:
        for stage in run.get("llm") or []:
            where = f"{run.get('run', '?')} ({stage.get('stage')} {stage.get('kind')}, model {stage.get('model')})"
            if stage.get("endpoint") == mine and str(stage.get("model")) == str(model):
                same.append(where)
            elif chat and is_chat(stage):
                other.append(where)
    out = []
    if same:
        out.append(f"circularity: the judge's endpoint and model ({model}) also serve {', '.join(same)}: those runs "
                   f"are graded by the model that made them, and may be favoured; {CITE}; check them with another "
                   "judge or a person")
    if other:
        out.append(f"circularity: an LLM judge grades runs with LLM stages: {', '.join(other)}; {CITE}")
    return out


def is_chat(stage: dict) -> bool:
    """A stage that calls a chat model: a query transform, or the LLM re-ranker (an HTTP
    rerank API is a cross-encoder behind a URL)."""
    return stage.get("stage") == "transform" or stage.get("kind") == "llm"


def _get(node, key: str):
    try:
        return node.get(key) if hasattr(node, "get") else getattr(node, key, None)
    except Exception:  # noqa: BLE001 - a structured node without the key
        return None
