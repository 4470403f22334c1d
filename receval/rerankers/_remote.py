"""The remote re-rankers' (``http``, ``llm``) view of the shared client
:class:`receval.clients.http.Client` (httpx + tenacity under the rules of :mod:`receval.core.secrets`:
key from the variable named by ``api_key_env``, retries with backoff on
408/409/425/429/5xx and dropped connections, server text redacted then clipped).

What is added here: one endpoint per client, answers through the cached-call layer
(:class:`receval.clients.calls.Calls`: keyed by the normalised endpoint, the model, the
request's other fields and the prompt; ``cache_dir`` from the run), and every failure that is left after
the retries (retries used up, another status, an answer that is not a JSON object)
becomes a :class:`~receval.core.errors.RecevalError` naming what to check, since a
re-ranked run with a hole in it would not be comparable: the run stops (exit 2).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from receval.clients import http
from receval.clients.calls import Answer, Calls
from receval.core.errors import RecevalError
from receval.rerankers import Scorer


class ItemFailed(RecevalError):
    """One request's answer is not usable (retries used up, a 4xx for this input, an answer
    of the wrong shape); others may be. ``reason`` is the short why, for the one failure
    rule's count line (:func:`receval.clients.failures.stop`). A wrong key, URL or model, or
    a server out of reach, is a plain :class:`RecevalError`: nothing will work."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


class RemoteScorer(Scorer):
    """What the remote re-rankers share: their client and the chunk texts they send
    (what each call used comes back in its :class:`~receval.rerankers.Rescored`)."""

    def __init__(self, client, model: str):
        self.client, self.model = client, model
        self.texts: list[str] = []

    @property
    def api_calls(self) -> int:
        return self.client.requests

    def fit(self, texts: list[str], tie_rank: np.ndarray) -> None:
        self.texts = list(texts)


class Client:
    """POSTs of JSON to ``{base_url}{path}``; ``option`` (``rerank``) names the config keys in messages."""

    def __init__(
        self, base_url: str | None, path: str, api_key_env: str | None, option: str = "rerank",
        timeout: float = 60.0, retries: int = 4, backoff: float = 1.0, max_backoff: float = 30.0,
        sleep: Callable[[float], None] = time.sleep, model: str = "", cache_dir: str | None = None,
    ):
        self.shared = http.Client(
            base_url, api_key_env, timeout=timeout, retries=retries, backoff=backoff, max_backoff=max_backoff,
            option=option, sleep=sleep,
        )
        self.option, self.path, self.url = option, path, self.shared.url(path)
        self.calls = Calls(self.url, model, cache_dir, self.shared.secret_envs)

    def __repr__(self) -> str:
        return f"Client(url={self.url!r}, api_key_env={self.shared.api_key_env!r})"

    @property
    def requests(self) -> int:
        """Every request sent, retries included."""
        return self.shared.requests

    def clip(self, text: str | bytes, limit: int = 200) -> str:
        return self.shared.clip(text, limit)

    def answer(self, fields: dict, prompt, ask: Callable[[], Answer], check: Callable[[object], bool]) -> Answer:
        """The cached answer to ``prompt`` sent with ``fields`` that ``check`` accepts, else
        ``ask()``'s (:meth:`Calls.answer`)."""
        return self.calls.answer(fields, prompt, ask, check=check)

    def post_json(self, payload: dict) -> dict:
        """The JSON object the endpoint answers ``payload`` with, after retries."""
        try:
            data = self.shared.post_json(self.path, payload).data
        except http.GaveUp as error:
            if error.last.unreachable:
                raise RecevalError(
                    f"cannot reach {self.url} ({error.last.problem}) after {error.attempts} attempts; is the "
                    f"server running and {self.option}.base_url right?"
                ) from None
            raise ItemFailed(
                f"{self.url}: gave up {error}; raise {self.option}.retries or {self.option}.timeout, "
                f"or check the server", f"gave up {error}"
            ) from None
        except http.StatusError as error:
            if error.status in (401, 403):
                key = self.shared.api_key_env
                where = f"the variable {key}" if key else f"{self.option}.api_key_env (none set)"
                raise RecevalError(f"{self.url} refused the request ({error.problem}); check the API key in {where}") from None
            message = f"{self.url} answered {error.problem}; check {self.option}.base_url and {self.option}.model"
            if error.status == 404:
                raise RecevalError(message) from None
            raise ItemFailed(message, error.problem) from None
        except http.BadReply as error:
            why = f"answered with something that is not a JSON object: {error}"
            raise ItemFailed(f"{self.url} {why}", why) from None
        if not isinstance(data, dict):
            why = f"answered with something that is not a JSON object: {self.clip(str(data))!r}"
            raise ItemFailed(f"{self.url} {why}", why)
        return data
