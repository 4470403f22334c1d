"""Re-ranking through a rerank API: Cohere, Jina, Voyage and self-hosted servers
(text-embeddings-inference, infinity, vLLM) share one shape.

One request per question: ``POST {base_url}{path}`` with ``{"model", "query",
"documents": [chunk texts of the shortlist], "top_n"}``, answered by ``{"results":
[{"index": i, "relevance_score": s}, ...]}``. A shortlisted chunk the answer leaves
out gets no score and goes after the scored ones. Tokens come from the answer's
``usage`` (``total_tokens`` or ``prompt_tokens``) or Cohere's
``meta.billed_units.input_tokens``, checked by :func:`usage_tokens` (a whole number
>= 0, else the run stops: it would become money); without one they are estimated and
the run says so. Client rules (key from an environment variable, retries, redaction):
:mod:`receval.rerankers._remote`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from receval.core import numeric
from receval.components import Context, component
from receval.measures.cost import estimate_tokens
from receval.core.errors import RecevalError
from receval.rerankers import RerankFields, Rescored
from receval.rerankers._remote import Client, RemoteScorer
from receval.schema import RETRIES, SECONDS, WAIT, range_


@dataclass
class RemoteFields:
    """What reaches an API: shared by the ``http`` and ``llm`` re-rankers."""

    base_url: Optional[str] = None  # the API root, e.g. http://localhost:8080 or https://api.jina.ai/v1
    model: Optional[str] = None  # sent as "model"
    api_key_env: Optional[str] = None  # NAME of the environment variable holding the key; null: none
    timeout: float = field(default=60.0, metadata=range_(*SECONDS))  # seconds per request
    # per request: 408/409/425/429/5xx, timeouts, dropped connections
    retries: int = field(default=4, metadata=range_(*RETRIES))
    backoff: float = field(default=1.0, metadata=range_(*WAIT))  # first retry delay in seconds, doubled each time
    max_backoff: float = field(default=30.0, metadata=range_(*WAIT))  # cap on one delay (Retry-After included)

    def remote_problems(self) -> list[str]:
        problems = []
        if not self.base_url:
            problems.append("base_url is required: the API root, e.g. rerank.base_url=http://localhost:8080")
        if not self.model:
            problems.append("model is required: the model name the API expects")
        return problems


@dataclass
class HttpRerankConfig(RemoteFields, RerankFields):
    kind: str = "http"
    path: str = "/rerank"  # appended to base_url (Jina, Cohere: /v1/rerank under the root)

    def problems(self) -> list[str]:
        return RerankFields.problems(self) + self.remote_problems()

    @staticmethod
    def describe(node) -> str:
        return f"{node.model}@{node.first_size}"


def client_of(node, path: str) -> Client:
    return Client(
        node.base_url, path, node.api_key_env, "rerank", timeout=node.timeout, retries=node.retries,
        backoff=node.backoff, max_backoff=node.max_backoff,
    )


def usage_tokens(data: dict, key: str, client) -> int | None:
    """Tokens an answer reports (``usage.{total,prompt,input}_tokens``, or for ``key="output"``
    ``usage.{completion,output}_tokens``; Cohere's ``meta.billed_units.<key>_tokens``), None
    when it reports none (null counts as none). A count must be a whole number from 0 to
    2**53: NaN, infinity, a negative or fractional number, a string or a boolean is a
    RecevalError naming the server and the field (it would become money)."""
    usage = data.get("usage")
    names = ("total_tokens", "prompt_tokens", "input_tokens") if key == "input" else ("completion_tokens", "output_tokens")
    found = []
    if isinstance(usage, dict):
        found = [(f"usage.{name}", usage[name]) for name in names if usage.get(name) is not None]
    meta = data.get("meta")
    billed = meta.get("billed_units") if isinstance(meta, dict) else None
    if not found and isinstance(billed, dict) and billed.get(f"{key}_tokens") is not None:
        found = [(f"meta.billed_units.{key}_tokens", billed[f"{key}_tokens"])]
    if not found:
        return None
    field, value = found[0]
    return reported_count(value, f"{client.url}: the answer's {field}", f"{client.option}.base_url", client.clip)


def reported_count(value, what: str, option: str, clip) -> int:
    """``value`` as a count a server reported (:func:`receval.core.numeric.count`), else a
    RecevalError ``<what> is <value, clipped>`` naming ``option``."""
    number = numeric.count(value)
    if number is None:
        raise RecevalError(
            f"{what} is {clip(repr(value), 80)}, not a count (a whole number from 0 to 2**53); "
            f"its usage cannot be priced: check the server behind {option}"
        )
    return number


class HttpReranker(RemoteScorer):
    """Scores a shortlist with one request per question: the rerank API shape of Cohere, Jina, TEI."""

    def rescore(self, questions: list[str], idx: np.ndarray) -> Rescored:
        out = np.full(idx.shape, np.nan)
        requests, tokens = np.zeros(len(questions)), np.zeros(len(questions))
        estimated = False
        for row, question in enumerate(questions):
            cols = np.flatnonzero(idx[row] >= 0)
            if not cols.size:
                continue
            documents = [self.texts[c] for c in idx[row, cols].tolist()]
            data = self.client.post_json(
                {"model": self.model, "query": question, "documents": documents, "top_n": len(documents)}
            )
            out[row, cols] = self.scores_of(data, len(documents))
            requests[row] = 1
            used = usage_tokens(data, "input", self.client)
            if used is None:
                estimated = True
                used = float(estimate_tokens([question]).sum() * len(documents) + estimate_tokens(documents).sum())
            tokens[row] = used
        return Rescored(out, {"requests": requests, "input_tokens": tokens}, estimated)

    def scores_of(self, data: dict, n: int) -> np.ndarray:
        """The answer's scores by document position (NaN for any left out); malformed (an
        index out of range or given twice, a score that is not a finite number): an error."""
        results = data.get("results")
        if not isinstance(results, list):
            raise RecevalError(
                f"{self.client.url}: the answer has no 'results' list: {self.client.clip(str(data))!r}; "
                "is rerank.base_url a rerank API (POST {model, query, documents, top_n})?"
            )
        scores = np.full(n, np.nan)
        for item in results:
            index = item.get("index") if isinstance(item, dict) else None
            score = item.get("relevance_score", item.get("score")) if isinstance(item, dict) else None
            ok = isinstance(index, int) and not isinstance(index, bool) and 0 <= index < n
            ok = ok and numeric.real(score) is not None
            if not ok:
                raise RecevalError(
                    f"{self.client.url}: a result is not {{index: 0..{n - 1}, relevance_score: number}}: "
                    f"{self.client.clip(str(item))!r}"
                )
            if not np.isnan(scores[index]):
                raise RecevalError(
                    f"{self.client.url}: the answer scores document {index} twice: "
                    f"{self.client.clip(str(item))!r}; a rerank API gives each index once"
                )
            scores[index] = float(score)
        return scores


@component("rerank", "http", HttpRerankConfig)
def build_http_rerank(node, context: Context) -> HttpReranker:
    return HttpReranker(client_of(node, str(node.path)), str(node.model))
