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
:mod:`receval.rerankers._remote`. Each question's answer is cached under the run's
``cache_dir`` (:mod:`receval.clients.calls`: endpoint, model, ``top_n``, query and
documents); a replay stores the live counts and latency and is marked.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional

import numpy as np

from receval.clients import failures
from receval.clients.calls import Answer, batch_replay, estimate_tokens, usage_tokens
from receval.core import numeric
from receval.run.components import Context, component
from receval.rerankers import RerankFields, Rescored
from receval.rerankers._remote import Client, ItemFailed, RemoteScorer
from receval.core.settings import ApiFields


@dataclass
class RemoteFields(ApiFields):
    """What reaches an API: shared by the ``http`` and ``llm`` re-rankers (the endpoint:
    :class:`receval.core.settings.ApiFields`)."""

    base_url: Optional[str] = None  # the API root, e.g. http://localhost:8080 or https://api.jina.ai/v1
    model: Optional[str] = None  # sent as "model"

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


def client_of(node, path: str, cache_dir: str | None = None) -> Client:
    return Client(
        node.base_url, path, node.api_key_env, "rerank", timeout=node.timeout, retries=node.retries,
        backoff=node.backoff, max_backoff=node.max_backoff, model=str(node.model), cache_dir=cache_dir,
    )


class HttpReranker(RemoteScorer):
    """Scores a shortlist with one request per question: the rerank API shape of Cohere, Jina, TEI."""

    def rescore(self, questions: list[str], idx: np.ndarray) -> Rescored:
        out = np.full(idx.shape, np.nan)
        requests, tokens = np.zeros(len(questions)), np.zeros(len(questions))
        estimated = False
        answers = []
        began = time.perf_counter()
        asked = int((idx >= 0).any(axis=1).sum())
        for row, question in enumerate(questions):
            cols = np.flatnonzero(idx[row] >= 0)
            if not cols.size:
                continue
            documents = [self.texts[c] for c in idx[row, cols].tolist()]
            try:
                answer = self.client.answer(
                    {"top_n": len(documents)}, {"query": question, "documents": documents},
                    lambda: self.ask(question, documents), lambda reply: scores_list(reply, len(documents)),
                )
            except ItemFailed as failed:  # the one failure rule's stricter form: a hole would not compare
                failures.stop(
                    failures.Counts(
                        step=f"{self.client.url}: rerank=http, rerank.model={self.model!r}",
                        sent=self.client.requests, replayed=sum(a.replayed for a in answers), asked=asked,
                        usable=len(answers), failed=1, last_reason=failed.reason, item="ranking",
                    ),
                    fix="raise rerank.retries or rerank.timeout, or check rerank.base_url (a rerank API: POST "
                        "{model, query, documents, top_n}) and rerank.model",
                )
            answers.append(answer)
            out[row, cols] = np.asarray([np.nan if s is None else s for s in answer.reply], dtype=np.float64)
            requests[row] = 1
            estimated = estimated or answer.tokens_estimated
            tokens[row] = answer.input_tokens
        self.client.calls.note("rerank=http")
        replay = batch_replay(answers, time.perf_counter() - began, 1)
        return Rescored(out, {"requests": requests, "input_tokens": tokens}, estimated, replay)

    def ask(self, question: str, documents: list[str]) -> Answer:
        """One request: the documents' scores (None where left out) and the input tokens."""
        data = self.client.post_json(
            {"model": self.model, "query": question, "documents": documents, "top_n": len(documents)}
        )
        scores = self.scores_of(data, len(documents))
        used = usage_tokens(data, "input", self.client)
        estimated = used is None
        if estimated:
            used = float(estimate_tokens([question]).sum() * len(documents) + estimate_tokens(documents).sum())
        return Answer([None if np.isnan(s) else float(s) for s in scores], float(used), 0.0, estimated)

    def scores_of(self, data: dict, n: int) -> np.ndarray:
        """The answer's scores by document position (NaN for any left out); malformed (an
        index out of range or given twice, a score that is not a finite number): an error."""
        results = data.get("results")
        if not isinstance(results, list):
            why = f"the answer has no 'results' list: {self.client.clip(str(data), 120)!r}"
            raise ItemFailed(
                f"{self.client.url}: {why}; is rerank.base_url a rerank API (POST {{model, query, documents, "
                "top_n}})?", why,
            )
        scores = np.full(n, np.nan)
        for item in results:
            index = item.get("index") if isinstance(item, dict) else None
            score = item.get("relevance_score", item.get("score")) if isinstance(item, dict) else None
            ok = isinstance(index, int) and not isinstance(index, bool) and 0 <= index < n
            ok = ok and numeric.real(score) is not None
            if not ok:
                why = f"a result is not {{index: 0..{n - 1}, relevance_score: number}}: {self.client.clip(str(item))!r}"
                raise ItemFailed(f"{self.client.url}: {why}", why)
            if not np.isnan(scores[index]):
                why = f"the answer scores document {index} twice: {self.client.clip(str(item))!r}"
                raise ItemFailed(f"{self.client.url}: {why}; a rerank API gives each index once", why)
            scores[index] = float(score)
        return scores


def scores_list(reply, n: int) -> bool:
    """A cached answer is ``n`` scores, each a finite number or None (left out)."""
    return isinstance(reply, list) and len(reply) == n and all(
        s is None or numeric.real(s) is not None for s in reply
    )


@component("rerank", "http", HttpRerankConfig)
def build_http_rerank(node, context: Context) -> HttpReranker:
    return HttpReranker(client_of(node, str(node.path), context.cache_dir), str(node.model))
