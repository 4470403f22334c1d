"""The HTTP client of the remote re-rankers (``http``, ``llm``): httpx + tenacity,
under the rules of :mod:`receval.api`.

Written to the interface of the shared client being built in ``receval/remote.py``
(``post_json``, ``requests``), so the re-rankers can switch to it by one import.

- The URL is checked by :func:`receval.api.api_url`; the key is read from the
  environment variable named by ``api_key_env`` at each request, never stored, and
  every piece of server text in a message is redacted first.
- HTTP 408, 409, 425, 429, 5xx, timeouts and dropped connections are retried at most
  ``retries`` times, waiting ``backoff * 2**(n-1)`` seconds or a longer
  ``Retry-After``, at most ``max_backoff``.
- Anything else (retries used up, another status, a reply that is not JSON) is a
  :class:`~receval.errors.RecevalError` naming the option to check: a re-ranked run
  with a hole in it would not be comparable, so the run stops.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

from receval import api
from receval.errors import ConfigError, RecevalError

RETRY_STATUS = frozenset({408, 409, 425, 429})
INSTALL_HINT = "pip install 'httpx>=0.27' 'tenacity>=8.2'"


class _Retryable(Exception):
    def __init__(self, problem: str, retry_after: str | None = None):
        super().__init__(problem)
        self.problem, self.retry_after = problem, retry_after


class Client:
    """POSTs of JSON to one endpoint; ``option`` (``rerank``) names the config keys in messages."""

    def __init__(
        self, base_url: str | None, path: str, api_key_env: str | None, option: str = "rerank",
        timeout: float = 60.0, retries: int = 4, backoff: float = 1.0, max_backoff: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.option = option
        self.url = api.api_url(base_url, path, f"{option}.base_url", f"{option}.api_key_env")
        api.check_key_env(api_key_env, self.url, f"{option}.api_key_env")
        self.api_key_env = api_key_env or None
        self.timeout, self.retries = float(timeout), int(retries)
        self.backoff, self.max_backoff, self.sleep = float(backoff), float(max_backoff), sleep
        self.requests = 0
        self._lock = threading.Lock()
        self._http = None

    def __repr__(self) -> str:
        return f"Client(url={self.url!r}, api_key_env={self.api_key_env!r})"

    def clip(self, text: str | bytes, limit: int = 200) -> str:
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        text = " ".join(api.redact(text, self.api_key_env).split())
        return text if len(text) <= limit else text[: limit - 3] + "..."

    def _send(self, payload: dict) -> bytes:
        import httpx

        with self._lock:
            if self._http is None:
                self._http = httpx.Client(timeout=self.timeout, follow_redirects=False)
            self.requests += 1
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        try:
            response = self._http.post(self.url, content=body, headers=api.headers(self.api_key_env))
        except httpx.TimeoutException:
            raise _Retryable(f"no answer within {self.option}.timeout={self.timeout:g}s") from None
        except httpx.TransportError as error:
            raise _Retryable(self.clip(f"{type(error).__name__}: {error}")) from None
        status = response.status_code
        if 200 <= status < 300:
            return response.content
        problem = f"HTTP {status}: {self.clip(response.content)}"
        if status in RETRY_STATUS or status >= 500:
            raise _Retryable(problem, response.headers.get("Retry-After"))
        if status in (401, 403):
            where = f"the variable {self.api_key_env}" if self.api_key_env else f"{self.option}.api_key_env (none set)"
            raise RecevalError(f"{self.url} refused the request ({problem}); check the API key in {where}")
        raise RecevalError(
            f"{self.url} answered {problem}; check {self.option}.base_url and {self.option}.model"
        )

    def post_json(self, payload: dict) -> dict:
        """The JSON object the endpoint answers ``payload`` with, after retries."""
        try:
            import httpx  # noqa: F401
            import tenacity
        except ImportError as error:
            raise ConfigError(f"{self.option} calls an API and needs {error.name}: {INSTALL_HINT}") from None

        def wait(state) -> float:
            last = state.outcome.exception()
            return api.backoff_delay(state.attempt_number, getattr(last, "retry_after", None), self.backoff, self.max_backoff)

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.retries + 1), wait=wait,
            retry=tenacity.retry_if_exception_type(_Retryable), sleep=self.sleep, reraise=True,
        )
        try:
            raw = retrying(lambda: self._send(payload))
        except _Retryable as last:
            raise RecevalError(
                f"{self.url}: gave up after {self.retries + 1} attempts; last: {last.problem} "
                f"(raise {self.option}.retries or {self.option}.timeout, or check the server)"
            ) from None
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise RecevalError(f"{self.url} answered with something that is not a JSON object: {self.clip(raw)!r}")
        return data
