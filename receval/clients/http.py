"""The one HTTP client for remote APIs (chat completions, embeddings, re-rank, search).

Built on httpx (connection reuse, timeouts) and tenacity (the retry policy); both
are imported when the first request is sent. The rules of :mod:`receval.core.secrets`
apply: the base URL is checked (:func:`api_url`: an ``http(s)://`` API root holding no
user, password, query or fragment; a key belongs in an environment variable, not a
URL), the key is read from the environment variable named by ``api_key_env`` at each
request, as is each header's value that ``header_envs`` names (never stored, so a client
pickles without them), every piece of server text in
a message goes through :func:`receval.core.secrets.clip` (redacting the value of every
variable in :attr:`Client.secret_envs`), and httpx and httpcore never log
(:func:`quiet_http_logs`): their lines carry the server's reason phrase unredacted.

One request (:meth:`Client.send`) ends in one of three ways:

- a :class:`Reply` (HTTP 2xx);
- :class:`Retryable`: HTTP 408, 409, 425, 429 and every 5xx, a timeout, a refused or
  dropped connection, or whatever a caller's attempt function raises as retryable
  (a reply a model got wrong);
- :class:`StatusError`: any other status (401/403 key, 404 URL or model, 4xx input).

:meth:`Client.call` runs an attempt function under the retry policy: at most
``retries`` retries, waiting ``backoff * 2**(n-1)`` seconds or a longer
``Retry-After``, at most ``max_backoff``; when they are used up it raises
:class:`GaveUp` holding the last problem. :meth:`Client.post_json` is ``send`` under
``call`` plus JSON decoding. ``requests`` counts every request sent, ``retries``
every wait; both are safe across threads.

:func:`held`: while it is open no request leaves this process (:class:`Held`, naming
why): a timing repeat (``timing.repeats``) re-times the local stages and never asks a
remote one again.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from receval.core.errors import ConfigError, RecevalError
from receval.core.formatting import shown
from receval.core.secrets import ENV_NAME, api_key, clip, is_local, split_url, url_secret

RETRY_STATUS = frozenset({408, 409, 425, 429})  # plus every 5xx
SNIPPET = 300  # characters of server text in a message
INSTALL_HINT = "pip install 'httpx>=0.27' 'tenacity>=8.2'"
T = TypeVar("T")



def api_url(base_url: str | None, suffix: str, option: str, key_option: str) -> str:
    """``{base_url}{suffix}`` after checking the URL; a ConfigError naming ``option``."""
    if not base_url or not str(base_url).strip():
        before = f" before {suffix}" if suffix else ""
        raise ConfigError(
            f"{option} is required: the API root{before} "
            f"(e.g. {option}=http://localhost:11434/v1 for Ollama)"
        )
    parts = split_url(base_url)
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{option}={shown(base_url, 'secret')}: use an http:// or https:// URL, e.g. http://localhost:11434/v1")
    if parts.username or parts.password or parts.query or parts.fragment or url_secret(base_url):
        raise ConfigError(
            f"{option} must hold no user, password, query or fragment, nor a key-like part; give the API key "
            f"through an environment variable and name it in {key_option}"
        )
    path = parts.path.rstrip("/")
    if suffix and path.endswith(suffix):
        path = path[: -len(suffix)]
    return urllib.parse.urlunsplit(parts._replace(path=path + suffix))


def check_key_env(api_key_env: str | None, url: str, option: str, unset_ok_on_loopback: bool = True) -> None:
    """The variable name must look like one (never echoing it: it may be the key
    itself), and be set, unless the server is on this machine and that is allowed."""
    if api_key_env in (None, ""):
        return
    if not ENV_NAME.fullmatch(str(api_key_env)):
        raise ConfigError(
            f"{option} must be the NAME of an environment variable holding the key "
            "(e.g. OPENAI_API_KEY), not the key itself"
        )
    if os.environ.get(api_key_env):
        return
    if unset_ok_on_loopback and is_local(urllib.parse.urlsplit(url).hostname):
        return
    raise ConfigError(
        f"the environment variable {api_key_env} (named by {option}) is not set; "
        f"export {api_key_env}=<your key> (or set {option}=null for an API that needs none)"
    )


def headers(api_key_env: str | None, header_envs: Mapping[str, str] | None = None) -> dict[str, str]:
    """JSON request headers, with ``Authorization: Bearer <key>`` when a key is set;
    ``header_envs`` (header name -> NAME of the variable holding its value) first, their
    values read now (a search service's ``headers: {Authorization: ES_AUTH}``)."""
    out = {name: os.environ.get(env, "") for name, env in (header_envs or {}).items()}
    out.update({"Content-Type": "application/json", "Accept": "application/json"})
    key = api_key(api_key_env)
    if key:
        out["Authorization"] = f"Bearer {key}"
    return out


def quiet_http_logs() -> None:
    """httpx logs every request at INFO with the server's reason phrase and httpcore
    its raw headers at DEBUG, neither redacted; Hydra's job logging would put them on
    stderr and in the run's log file. Their loggers are switched off (idempotent)."""
    for name in ("httpx", "httpcore"):
        logger = logging.getLogger(name)
        logger.setLevel(logging.CRITICAL + 1)
        logger.propagate = False
        if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
            logger.addHandler(logging.NullHandler())


def backoff_delay(attempt: int, retry_after: str | None, base: float, cap: float) -> float:
    """Seconds to wait before retry ``attempt`` (1 = the first retry)."""
    delay = base * 2 ** (attempt - 1)
    if retry_after:
        try:
            delay = max(delay, float(retry_after))
        except ValueError:
            pass  # an HTTP date: keep the backoff
    return max(0.0, min(delay, cap))



_HELD: list[str] = []  # why requests are held, innermost last (every thread sees it)


class Held(RecevalError):
    """A request asked for while :func:`held` is open: the message says why none may leave."""


@contextmanager
def held(why: str) -> Iterator[None]:
    """No request is sent while open: :meth:`Client.send` raises :class:`Held` ``<url>: <why>``."""
    _HELD.append(why)
    try:
        yield
    finally:
        _HELD.pop()


class Retryable(Exception):
    """An attempt failed in a way worth retrying; ``problem`` is key-free."""

    def __init__(self, problem: str, retry_after: str | None = None, unreachable: bool = False):
        super().__init__(problem)
        self.problem, self.retry_after, self.unreachable = problem, retry_after, unreachable


class StatusError(Exception):
    """The server answered a status not worth retrying; ``detail`` is its clipped body."""

    def __init__(self, status: int, problem: str, detail: str):
        super().__init__(problem)
        self.status, self.problem, self.detail = status, problem, detail


class GaveUp(Exception):
    """Every attempt failed; ``last`` is the last :class:`Retryable`."""

    def __init__(self, last: Retryable, attempts: int):
        super().__init__(f"after {attempts} attempts; last: {last.problem}")
        self.last, self.attempts = last, attempts


class BadReply(Exception):
    """A 2xx answer that is not JSON; ``problem`` quotes its clipped start."""


@dataclass(frozen=True)
class Reply:
    raw: bytes
    status: int
    elapsed: float  # seconds for this request
    data: object = None  # the decoded JSON (post_json only)


def _libraries():
    try:
        import httpx
        import tenacity
    except ImportError as error:
        raise ConfigError(f"calling a remote API needs {error.name}, which is not installed: {INSTALL_HINT}") from None
    quiet_http_logs()
    return httpx, tenacity


class Client:
    """Requests to one API root; ``option`` names its config group in messages (``synth``);
    ``header_envs``: headers sent with every request, each value read from the
    environment variable it names at each request (never stored)."""

    def __init__(
        self,
        base_url: str | None,
        api_key_env: str | None = None,
        timeout: float = 60.0,
        retries: int = 4,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        option: str = "api",
        key_on_loopback: bool = False,
        sleep: Callable[[float], None] = time.sleep,
        header_envs: Mapping[str, str] | None = None,
    ):
        self.option = option
        self.root = api_url(base_url, "", f"{option}.base_url", f"{option}.api_key_env")
        check_key_env(api_key_env, self.root, f"{option}.api_key_env", unset_ok_on_loopback=not key_on_loopback)
        self.api_key_env = api_key_env or None
        self.header_envs = dict(header_envs or {})
        self.timeout = float(timeout)
        self.max_retries = int(retries)
        self.backoff, self.max_backoff = float(backoff), float(max_backoff)
        self.sleep = sleep
        self.requests = 0
        self.retries = 0
        self._lock = threading.Lock()
        self._http = None

    def __repr__(self) -> str:
        return f"Client(root={self.root!r}, api_key_env={self.api_key_env!r})"

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_lock"] = state["_http"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def url(self, path: str) -> str:
        """The endpoint ``path`` under the root (a root already ending in it is kept)."""
        return api_url(self.root, path, f"{self.option}.base_url", f"{self.option}.api_key_env")

    @property
    def secret_envs(self) -> tuple[str, ...]:
        """The variables whose values this client sends (redacted from every message): the
        key's and the headers' (a server may echo a header's value)."""
        return ((self.api_key_env,) if self.api_key_env else ()) + tuple(self.header_envs.values())

    def credentials(self) -> tuple[str, ...]:
        """The values this client sends (of :attr:`secret_envs`), read now: what an answer
        that echoes its request is cleaned of (:func:`receval.core.secrets.hide_keys`)."""
        return tuple(value for env in self.secret_envs if (value := api_key(env)))

    def clip(self, text, limit: int = SNIPPET) -> str:
        return clip(text, limit, *self.secret_envs)

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    # ------------------------------------------------------------------ one request

    def send(self, path: str, payload: dict) -> Reply:
        """One POST of ``payload`` as JSON; raises :class:`Retryable` or :class:`StatusError`
        (:class:`Held` while :func:`held` is open: nothing is sent)."""
        if _HELD:
            raise Held(f"{shown(self.url(path), 'secret')}: {_HELD[-1]}")
        httpx, _ = _libraries()
        with self._lock:
            if self._http is None:
                self._http = httpx.Client(timeout=self.timeout, follow_redirects=False)
            self.requests += 1
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        started = time.perf_counter()
        try:
            response = self._http.post(self.url(path), content=body, headers=headers(self.api_key_env, self.header_envs))
        except httpx.TimeoutException:
            raise Retryable(f"no answer within {self.option}.timeout={self.timeout:g}s") from None
        except httpx.ConnectError as error:
            raise Retryable(self.clip(f"cannot connect: {error}"), unreachable=True) from None
        except httpx.TransportError as error:  # dropped connection, protocol error
            raise Retryable(self.clip(f"{type(error).__name__}: {error}")) from None
        elapsed = time.perf_counter() - started
        status = response.status_code
        if 200 <= status < 300:
            return Reply(response.content, status, elapsed)
        detail = self.clip(response.content)
        problem = self.clip(f"HTTP {status} {response.reason_phrase}" + (f": {detail}" if detail else ""))
        if status in RETRY_STATUS or status >= 500:
            raise Retryable(problem, response.headers.get("Retry-After"))
        raise StatusError(status, problem, detail)

    # ------------------------------------------------------------------ the policy

    def call(self, attempt: Callable[[], T]) -> T:
        """``attempt()`` retried on :class:`Retryable`; :class:`GaveUp` once retries run out."""
        _, tenacity = _libraries()

        def wait(state) -> float:
            last = state.outcome.exception()
            return backoff_delay(state.attempt_number, getattr(last, "retry_after", None), self.backoff, self.max_backoff)

        def count(state) -> None:
            with self._lock:
                self.retries += 1

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.max_retries + 1),
            wait=wait,
            retry=tenacity.retry_if_exception_type(Retryable),
            before_sleep=count,
            sleep=self.sleep,
            reraise=True,
        )
        tries = 0

        def counted() -> T:
            nonlocal tries
            tries += 1
            return attempt()

        try:
            return retrying(counted)
        except Retryable as last:
            raise GaveUp(last, tries) from None

    def post_json(self, path: str, payload: dict) -> Reply:
        """POST under the retry policy; the reply's JSON in ``data`` (:class:`BadReply` if none)."""
        reply = self.call(lambda: self.send(path, payload))
        try:
            data = json.loads(reply.raw)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than Python's stack allows
            raise BadReply(f"malformed JSON: {self.clip(reply.raw, 200)!r}") from None
        return Reply(reply.raw, reply.status, reply.elapsed, data)
