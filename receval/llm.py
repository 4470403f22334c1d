"""A small client for OpenAI-compatible chat completions, over ``urllib`` only.

``POST {base_url}/chat/completions`` with ``{"model", "messages", "temperature",
"seed", "response_format"}``; the reply's ``choices[0].message.content`` must hold a
JSON object, which a caller-supplied ``validate`` function checks.

Structured output: the first request asks for ``response_format: {"type":
"json_schema", ...}``. A server that rejects it (HTTP 400/422 whose body mentions
``response_format``, ``json_schema`` or ``schema``) is asked again at once with
``{"type": "json_object"}`` (plain JSON mode), and then with no ``response_format``
at all; the mode that works is remembered for every later request (thread-safe).

Failures, per request:

- retried with exponential backoff (``backoff * 2**(attempt-1)`` seconds, at most
  ``max_backoff``; a longer ``Retry-After`` in seconds is honoured up to
  ``max_backoff``), at most ``max_retries`` times: HTTP 408, 409, 429 and 5xx,
  timeouts, dropped connections, and replies whose content is not a valid JSON
  object (malformed JSON, a missing key);
- :class:`ReplyError` (this item failed; others may work): retries used up, or
  another 4xx (e.g. a passage longer than the model's context);
- :class:`ServerError` (a :class:`~receval.errors.RecevalError`: nothing will work,
  stop): HTTP 401/403 (key), 404 (URL or model), or a server that cannot be reached
  at all once the retries are used up.

The API key is read from the environment variable *named* ``api_key_env`` at each
request and sent only as ``Authorization: Bearer <key>``; it is never stored on the
client, and any text that could echo it (a server's error body) is redacted before
it reaches a message.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable

from receval import api
from receval.errors import RecevalError

RETRY_STATUS = {408, 409, 429}
MODES = ("json_schema", "json_object", "none")
_FORMAT_REJECTED = re.compile(r"response_format|json_schema|json_object|schema|structured", re.I)


class ReplyError(Exception):
    """One request failed for good; ``reason`` says why (key-free)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


class ServerError(RecevalError):
    """The endpoint cannot serve any request: stop the whole job."""


class _Retry:
    """An attempt that failed in a way worth retrying."""

    def __init__(self, problem: str, retry_after: str | None = None, unreachable: bool = False):
        self.problem, self.retry_after, self.unreachable = problem, retry_after, unreachable


class _FellBack:
    """The server rejected the response_format; ask again at once in the next mode."""


def endpoint(base_url: str | None, what: str = "synth.base_url") -> str:
    """``{base_url}/chat/completions`` after checking the URL; a ConfigError otherwise."""
    return api.api_url(base_url, "/chat/completions", what, "synth.api_key_env")


def check_key_env(api_key_env: str | None, url: str, what: str = "synth.api_key_env") -> None:
    """The variable name must look like one; it must be set unless the server is local."""
    api.check_key_env(api_key_env, url, what)


class ChatClient:
    """Chat completions returning a validated JSON object per call; safe across threads."""

    def __init__(
        self,
        base_url: str | None,
        model: str,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.url = endpoint(base_url)
        check_key_env(api_key_env, self.url)
        self.model = str(model)
        self.api_key_env = api_key_env or None
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.sleep = sleep
        self._mode = 0  # index into MODES; only ever increases
        self._lock = threading.Lock()
        self.requests = 0  # every request sent, retries and fallbacks included
        self.retries = 0

    def __repr__(self) -> str:
        return f"ChatClient(url={self.url!r}, model={self.model!r}, api_key_env={self.api_key_env!r})"

    @property
    def mode(self) -> str:
        """The structured-output mode in use: json_schema, json_object or none."""
        return MODES[self._mode]

    # ------------------------------------------------------------------ helpers

    def redact(self, text: str) -> str:
        return api.redact(text, self.api_key_env)

    def _body(self, messages: list[dict], schema: dict, temperature: float, seed: int | None, mode: int) -> bytes:
        body: dict = {"model": self.model, "messages": messages, "temperature": float(temperature)}
        if seed is not None:
            body["seed"] = int(seed)
        if MODES[mode] == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema.get("title", "reply"), "strict": True, "schema": schema},
            }
        elif MODES[mode] == "json_object":
            body["response_format"] = {"type": "json_object"}
        return json.dumps(body, ensure_ascii=False).encode("utf-8")

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        return api.backoff_delay(attempt, retry_after, self.backoff, self.max_backoff)

    def _detail(self, error: urllib.error.HTTPError) -> str:
        return api.error_body(error, 400, self.api_key_env)

    def _fall_back(self, tried: int) -> bool:
        """The server rejected mode ``tried``: move past it (once, for every thread)."""
        with self._lock:
            if self._mode == tried and tried + 1 < len(MODES):
                self._mode = tried + 1
            return self._mode > tried

    # ------------------------------------------------------------------ the call

    def complete_json(
        self,
        messages: list[dict],
        schema: dict,
        validate: Callable[[dict], str | None],
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> dict:
        """The reply's content as a JSON object that ``validate`` accepts (it returns a problem or None)."""
        problem, attempt, wait = "", 0, 0.0
        while True:
            if wait:
                self.sleep(wait)
            wait = 0.0
            attempt += 1
            mode = self._mode
            outcome = self._attempt(messages, schema, temperature, seed, mode)
            if isinstance(outcome, dict):
                problem = validate(outcome)
                if not problem:
                    return outcome
                outcome = _Retry(f"reply rejected: {problem}")
            if isinstance(outcome, _FellBack):
                attempt -= 1  # a rejected response_format is not a failed attempt
                continue
            problem = outcome.problem
            if attempt > self.max_retries:
                if outcome.unreachable:
                    raise ServerError(
                        f"cannot reach {self.url} ({problem}) after {attempt} attempts; "
                        "is the server running and synth.base_url right?"
                    )
                raise ReplyError(f"gave up after {attempt} attempts; last: {problem}")
            self.retries += 1
            wait = self._delay(attempt, outcome.retry_after)

    def _attempt(self, messages, schema, temperature, seed, mode: int):
        """One request: the parsed object, a _Retry, or a _FellBack; raises for final failures."""
        request = urllib.request.Request(
            self.url, data=self._body(messages, schema, temperature, seed, mode),
            headers=api.headers(self.api_key_env), method="POST",
        )
        with self._lock:
            self.requests += 1
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            status = error.code
            detail = self._detail(error)
            retry_after = error.headers.get("Retry-After") if error.headers else None
            error.close()
            problem = f"HTTP {status}" + (f": {detail[:300]}" if detail else "")
            if status in (400, 422) and MODES[mode] != "none" and _FORMAT_REJECTED.search(detail):
                if self._fall_back(mode):
                    return _FellBack()
            if status in RETRY_STATUS or status >= 500:
                return _Retry(problem, retry_after)
            if status in (401, 403):
                where = f"the variable {self.api_key_env}" if self.api_key_env else "synth.api_key_env (none set)"
                raise ServerError(f"{self.url} refused the request ({problem}); check the API key in {where}")
            if status == 404:
                raise ServerError(
                    f"{self.url} answered {problem}; check synth.base_url (the API root before "
                    f"/chat/completions) and synth.model={self.model!r}"
                )
            raise ReplyError(problem)
        except TimeoutError:  # socket.timeout is TimeoutError
            return _Retry(f"no answer within synth.timeout={self.timeout:g}s")
        except urllib.error.URLError as error:
            reason = error.reason
            if isinstance(reason, TimeoutError):
                return _Retry(f"no answer within synth.timeout={self.timeout:g}s")
            transient = isinstance(reason, (ConnectionResetError, ConnectionAbortedError))
            return _Retry(self.redact(f"{type(reason).__name__}: {reason}"), unreachable=not transient)
        except (http.client.HTTPException, OSError) as error:
            return _Retry(self.redact(f"{type(error).__name__}: {error}"))
        parsed, problem = self._content(raw)
        return parsed if parsed is not None else _Retry(problem)

    def _content(self, raw: bytes) -> tuple[dict | None, str]:
        """The JSON object in ``choices[0].message.content``, or (None, why not)."""
        try:
            payload = json.loads(raw)
        except ValueError:
            return None, f"the server's answer is not JSON: {self.redact(raw[:120].decode('utf-8', 'replace'))!r}"
        try:
            content = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            return None, "the answer has no choices[0].message.content (is this a chat-completions API?)"
        if not isinstance(content, str) or not content.strip():
            return None, "the reply's content is empty"
        parsed = parse_json_object(content)
        if parsed is None:
            return None, f"the reply's content is not a JSON object: {self.redact(content[:120])!r}"
        return parsed, ""


_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```\s*$", re.S)


def parse_json_object(content: str) -> dict | None:
    """A JSON object from a model's reply: bare, inside a ``` fence, or amid prose."""
    text = content.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    candidates = [text]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end and (start, end) != (0, len(text) - 1):
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None
