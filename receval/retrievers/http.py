"""A running search service: ``retriever=http retriever.url=http://localhost:8000/search``.

Per question, one ``POST`` of ``{"query": "<question>", "k": <depth>}``; the reply is
``{"results": [{"id": "...", "score": 1.5}, ...]}``, or the question's search calls
``{"calls": [{"query", "hits", "latency_ms"?}, ...], "final"?: [...]}``
(:mod:`receval.retrievers.trajectory`; each call counts as one request). The request field names
(dotted: ``query.match.text`` nests), fixed extra ``body`` fields, the path to the
list in the reply (``hits.hits``) and each item's ``id_key`` / ``score_key`` are
options, so an Elasticsearch/OpenSearch ``_search`` endpoint is one config
(``retriever=http_elasticsearch``). Ids are chunk or section ids of this run
(:mod:`receval.retrievers.ranked`).

Requests go through :class:`receval.clients.http.Client` (URL rules, timeouts, bounded
retries on 429/5xx with backoff, server text redacted). Header values come only
from environment variables: ``headers: {Authorization: ES_AUTH}`` sends the value
of ``$ES_AUTH``; the variable's name is saved with the run, never its value.
``concurrency`` requests are in flight at once within a batch of ``search_batch``
questions; each question's latency is its own request's wall time (retries
included). ``api_calls`` counts requests sent (retries included).
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
from omegaconf import OmegaConf

from receval.clients import http
from receval.run.components import Context, RetrieverConfig, component
from receval.core.errors import ConfigError, RecevalError
from receval.retrievers.base import StageOutput
from receval.retrievers.ranked import RankOnly
from receval.retrievers.trajectory import is_trajectory, rank_answers
from receval.schema import RETRIES, SECONDS, SHORTLIST, THREADS, WAIT, range_
from receval.core.formatting import shown
from receval.core.secrets import brief, credential_values, split_url
from receval.core.settings import EndpointFields
from receval.core.trust import is_env_name


@dataclass
class HttpConfig(RetrieverConfig, EndpointFields):
    kind: str = "http"
    url: Optional[str] = None  # the search endpoint (required)
    query_field: str = "query"  # request field holding the question (dotted nests: query.match.text)
    k_field: Optional[str] = "k"  # request field holding how many results (null: not sent)
    body: Any = None  # fixed fields added to every request (a mapping)
    results_path: str = "results"  # dotted path to the list of results in the reply
    id_key: str = "id"  # each result's id (dotted)
    score_key: str = "score"  # each result's score (dotted)
    headers: Any = None  # a mapping: header name -> NAME of the env variable holding its value
    # the endpoint's call settings (receval.core.settings.EndpointFields), a search's defaults
    timeout: float = field(default=30.0, metadata=range_(*SECONDS))  # seconds per request
    retries: int = field(default=3, metadata=range_(*RETRIES))  # on 429/5xx, timeouts, dropped connections
    # first wait (doubles each retry; a longer Retry-After wins)
    backoff: float = field(default=0.5, metadata=range_(*WAIT))
    concurrency: int = field(default=1, metadata=range_(*THREADS))  # requests in flight within a search batch
    pool: int = field(default=100, metadata=range_(*SHORTLIST))  # results asked per question when fused or re-ranked

    def problems(self) -> list[str]:
        problems = []
        for name, value in (("body", self.body), ("headers", self.headers)):
            if value is not None and not isinstance(value, dict):
                problems.append(f"{name}={value!r}: give a mapping, e.g. '{name}={{key: value}}'")
        for header, env in (self.headers if isinstance(self.headers, dict) else {}).items():
            if not is_env_name(env):
                problems.append(
                    f"headers.{header} must be the NAME of an environment variable holding the value "
                    "(e.g. ES_AUTH), not the value itself"
                )
        return problems

    @staticmethod
    def describe(node) -> str:
        return "http"


def nested(path: str, value) -> dict:
    """``a.b.c`` -> ``{"a": {"b": {"c": value}}}``."""
    for part in reversed(path.split(".")):
        value = {part: value}
    return value


def merged(base: dict, extra: dict) -> dict:
    out = dict(base)
    for key, value in extra.items():
        out[key] = merged(out[key], value) if isinstance(out.get(key), dict) and isinstance(value, dict) else value
    return out


def at(data, path: str):
    """The value at dotted ``path`` (list positions as numbers); KeyError if absent."""
    for part in path.split(".") if path else []:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            raise KeyError(part)
    return data


class SearchClient(http.Client):
    """The shared client (:class:`receval.clients.http.Client`, its transport and retry
    policy) over a search endpoint: its URL checked as one, and headers whose values come
    from environment variables, all set (:attr:`receval.clients.http.Client.header_envs`)."""

    def __init__(self, url: str, headers: dict[str, str], **options):
        parts = split_url(url) if url else None
        if parts is None or parts.scheme not in ("http", "https"):
            given = f"={shown(url, 'secret')}" if url else " is required"
            raise ConfigError(
                f"retriever.url{given}: give your search endpoint, e.g. retriever.url=http://localhost:8000/search"
            )
        http.api_url(url, "", "retriever.url", "retriever.headers")  # no user, password, query, fragment
        super().__init__(url, None, option="retriever", header_envs=headers, **options)
        missing = [env for env in headers.values() if not os.environ.get(env)]
        if missing:
            raise ConfigError(
                f"retriever.headers names {', '.join(missing)}, not set in the environment: export it "
                "(the value is read from there and never saved)"
            )


class HttpRetriever(RankOnly):
    asks_per_question = True  # a search service: one request per question, never cached

    def __init__(self, node, context: Context):
        super().__init__("http", context, int(node.pool))
        self.node = node
        self.body = OmegaConf.to_container(node.body, resolve=True) if node.body is not None else {}
        self.client = SearchClient(
            node.url, OmegaConf.to_container(node.headers, resolve=True) if node.headers is not None else {},
            timeout=float(node.timeout), retries=int(node.retries), backoff=float(node.backoff),
            max_backoff=max(float(node.max_backoff), float(node.backoff)),
        )
        self.concurrency = int(node.concurrency)

    @property
    def api_calls(self) -> int:
        return self.client.requests

    def request(self, question: str, k: int) -> dict:
        payload = merged(self.body, nested(self.node.query_field, question))
        if self.node.k_field:
            payload = merged(payload, nested(self.node.k_field, int(k)))
        return payload

    def ask(self, question: str, k: int) -> tuple[list[tuple[str, float]], float]:
        """One question's (id, score) pairs and its request's wall seconds."""
        began = time.perf_counter()
        url = f"retriever.url={self.client.root}"
        try:
            reply = self.client.post_json("", self.request(question, k))
        except http.GaveUp as error:
            raise RecevalError(
                f"{url}: no usable answer after {error.attempts} attempts; last: {error.last.problem}"
            ) from None
        except http.StatusError as error:
            raise RecevalError(f"{url}: {error.problem}") from None
        except http.BadReply as error:
            raise RecevalError(f"{url}: the reply is not JSON: {error}") from None
        return self.parse(reply.data, url), time.perf_counter() - began

    def parse(self, data, url: str) -> list[tuple[str, float]] | dict:
        """The reply's (id, score) pairs; a reply ``{"calls": [...], "final"?: [...]}`` is a
        trajectory, passed on whole (:mod:`receval.retrievers.trajectory`)."""
        node = self.node
        if is_trajectory(data):
            return data
        try:
            items = at(data, node.results_path)
        except KeyError:
            shape = self.client.clip(list(data)[:8], 120) if isinstance(data, dict) else type(data).__name__
            raise RecevalError(
                f"{url}: malformed reply: no {node.results_path!r} in it (it has {shape}); "
                "set retriever.results_path to the path of the result list"
            ) from None
        if not isinstance(items, list):
            raise RecevalError(
                f"{url}: malformed reply: {node.results_path!r} holds {type(items).__name__}, not a list"
            )
        pairs = []
        for item in items:
            try:
                pairs.append((str(at(item, node.id_key)), at(item, node.score_key)))
            except KeyError:
                raise RecevalError(
                    f"{url}: malformed reply: a result without {node.id_key!r} and {node.score_key!r}: "
                    f"{self.client.clip(brief(item), 120)} (set retriever.id_key / retriever.score_key)"
                ) from None
        return pairs

    def asked(self, questions: list[str], k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, list | None]:
        """Each question's top ``k`` (idx, scores), its request's wall seconds and its
        search calls (None: plain answers only)."""
        if self.concurrency > 1 and len(questions) > 1:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(questions))) as pool:
                done = list(pool.map(lambda q: self.ask(q, k), questions))
        else:
            done = [self.ask(q, k) for q in questions]
        idx, scores, calls = rank_answers(
            [pairs for pairs, _ in done], self.ids, self.tie_rank, k, f"retriever.url={shown(self.client.root, 'secret')}",
            questions, lambda text: self.client.clip(text, 80), self.client.credentials() + credential_values(self.body),
        )
        return idx, scores, np.array([seconds for _, seconds in done], dtype=np.float64), calls

    def answer(self, questions: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        return self.asked(questions, k)[:2]

    def answer_calls(self, questions: list[str], k: int) -> tuple[np.ndarray, np.ndarray, list | None]:
        idx, scores, _, calls = self.asked(questions, k)
        return idx, scores, calls

    def rank(self, questions: list[str], depth: int) -> StageOutput:
        """Top lists with each question's own request time (requests may run concurrently)."""
        began = time.perf_counter()
        idx, scores, seconds, calls = self.asked(questions, depth)
        return self.output(idx, scores, {self.name: time.perf_counter() - began}, calls, seconds)


@component("retriever", "http", HttpConfig)
def build_http(node, context: Context) -> HttpRetriever:
    return HttpRetriever(node, context)
