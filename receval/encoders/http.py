"""An OpenAI-compatible embeddings endpoint: ``POST {base_url}/embeddings``.

Ollama serves one at ``/v1/embeddings``. Requests go through :class:`receval.clients.http.Client`
(the one retry rule; key from the environment at each request, redacted messages).

Identity: vectors are cached per text in the embedding cache's packs
(:mod:`receval.encoders.cache`; one file per text, as :class:`receval.clients.calls.Calls`
keeps answers, would be millions of files), and each text's key there is the cached-call
layer's key (:meth:`HttpEncoder.keys`, :func:`receval.clients.calls.call_keys`): the
endpoint after :func:`receval.clients.calls.normal_endpoint`, the model, the request's
other fields (none today) and the text's hash. Two spellings of one server share
vectors; two servers serving one model name never do: the second is asked.

Provenance: each text's live latency (its request's, shared by the texts of the batch)
is stored beside its vector, so a run that reads it back knows what it cost live
(:class:`receval.encoders.base.Embedded`'s ``replayed_live_s``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from receval.clients import http as remote  # noqa: the one HTTP client
from receval.clients.calls import call_keys, normal_endpoint
from receval.encoders.base import RECIPE, normalize
from receval.core.errors import ConfigError, RecevalError

PATH = "/embeddings"


class HttpEncoder:
    """Request body ``{"model": model, "input": [texts]}``; answer
    ``{"data": [{"embedding": [...], "index": i}, ...]}``.

    Retries follow :mod:`receval.clients.http` (429, 408, 5xx and network errors, at most
    ``retries`` times); other errors fail at once. ``api_calls`` counts every request
    sent, retries included. Vectors are L2-normalised here, whatever the server returns.
    """

    threads = None  # requests are sent one batch at a time

    def __init__(
        self,
        base_url: str | None,
        model: str,
        api_key_env: str | None = None,
        batch_size: int = 64,
        retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        timeout: float = 60.0,
    ):
        if batch_size < 1:
            raise ConfigError(f"retriever.batch_size={batch_size}: use an integer >= 1 (texts per request)")
        if not base_url or not str(base_url).strip():
            raise ConfigError(
                "retriever.base_url is required: the API root before /embeddings "
                "(e.g. retriever.base_url=http://localhost:11434/v1 for Ollama)"
            )
        if not model:
            raise ConfigError("retriever.model: name the API's embedding model (e.g. nomic-embed-text)")
        # a variable named for an embeddings API must be set, even on this machine
        self.client = remote.Client(
            base_url, api_key_env, timeout=timeout, retries=retries, backoff=backoff,
            max_backoff=max_backoff, option="retriever", key_on_loopback=True,
        )
        self.url = self.client.url(PATH)
        self.model = str(model)
        self.api_key_env = api_key_env
        self.batch_size = int(batch_size)
        self.label = self.model
        self.fields: dict = {}  # request fields besides model and input that change a vector (none sent today)
        self.identity = {"recipe": RECIPE, "backend": "http", "url": normal_endpoint(self.url), "model": self.model,
                         "keys": "receval.clients.calls.call_keys"}  # packs keyed the layer's way, not by text
        self.live_ms = None  # per text of the last encode: its request's latency over the texts it carried

    @property
    def api_calls(self) -> int:
        return self.client.requests

    def __repr__(self) -> str:
        return f"HttpEncoder(url={self.url!r}, model={self.model!r}, api_key_env={self.api_key_env!r})"

    def load(self) -> None:
        """Nothing to load for an API."""

    def keys(self, texts: list[str]) -> list[bytes]:
        """Each text's key in the embedding cache: the cached-call layer's key function."""
        return call_keys(self.url, self.model, self.fields, texts)

    def encode(self, texts: list[str], on_progress: Callable[[int], None] | None = None) -> np.ndarray:
        parts, live = [], []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            began = time.perf_counter()
            parts.append(self._request(batch))
            live += [1000.0 * (time.perf_counter() - began) / len(batch)] * len(batch)  # retries included
            if on_progress:
                on_progress(len(batch))
        self.live_ms = live
        if not parts:
            return np.zeros((0, 0), dtype=np.float32)
        dims = {p.shape[1] for p in parts}
        if len(dims) > 1:
            raise RecevalError(f"{self.url} returned embeddings of different sizes {sorted(dims)} for one model")
        return normalize(np.concatenate(parts))

    def _request(self, batch: list[str]) -> np.ndarray:
        failed = f"embeddings request to {self.url} failed"
        try:
            reply = self.client.post_json(PATH, {"model": self.model, "input": batch})
        except remote.GaveUp as error:
            raise RecevalError(f"{failed} {error}") from None
        except remote.StatusError as error:
            raise RecevalError(f"{failed}: {error.problem}{self._hint(error.status)}") from None
        except remote.BadReply as error:
            raise self._bad(str(error)) from None
        return self._parse(reply.data, reply.raw, len(batch))

    def _hint(self, status: int) -> str:
        if status in (401, 403):
            where = f"the variable {self.api_key_env}" if self.api_key_env else "retriever.api_key_env (none is set)"
            return f"; check the API key in {where}"
        if status == 404:
            return (
                "; check retriever.base_url (the API root before /embeddings, e.g. "
                "http://localhost:11434/v1) and retriever.model"
            )
        return ""

    def _bad(self, why: str, raw: bytes = b"") -> RecevalError:
        snippet = f": {self.client.clip(raw, 200)!r}" if raw else ""
        return RecevalError(
            f"{self.url} gave an answer that is not an embeddings response ({why}){snippet}; "
            "is retriever.base_url an OpenAI-compatible API root (e.g. http://localhost:11434/v1)?"
        )

    def _parse(self, payload, raw: bytes, expected: int) -> np.ndarray:
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise self._bad("no 'data' list", raw)
        if len(data) != expected:
            raise self._bad(f"{len(data)} embeddings for {expected} texts", raw)
        rows: list = [None] * expected
        for position, item in enumerate(data):
            if not isinstance(item, dict) or not isinstance(item.get("embedding"), list):
                raise self._bad(f"item {position} has no 'embedding' list", raw)
            index = item.get("index", position)
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < expected or rows[index] is not None:
                raise self._bad(f"item {position} has a bad or repeated 'index' {index!r}", raw)
            rows[index] = item["embedding"]
        try:
            vectors = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError):
            raise self._bad("embeddings are not equal-length lists of numbers", raw) from None
        if vectors.ndim != 2 or vectors.shape[1] == 0 or not np.isfinite(vectors).all():
            raise self._bad("embeddings are not equal-length lists of finite numbers", raw)
        return vectors
