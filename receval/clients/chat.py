"""Chat completions that return a validated JSON object, on :mod:`receval.clients.http`.

``POST {base_url}/chat/completions`` with ``{"model", "messages", "temperature",
"seed", "response_format"}``; the reply's ``choices[0].message.content`` must hold a
JSON object, which a caller-supplied ``validate`` function checks.

Structured output: the first request asks for ``response_format: {"type":
"json_schema", ...}``. A server that rejects it (HTTP 400/422 whose body mentions
``response_format``, ``json_schema`` or ``schema``) is asked again at once with
``{"type": "json_object"}`` (plain JSON mode), and then with no ``response_format``
at all; the mode that works is remembered for every later request (thread-safe).

Failures, per request:

- retried under the policy of :mod:`receval.clients.http` (``max_retries`` times, backoff
  with ``Retry-After`` up to ``max_backoff``): HTTP 408, 409, 425, 429 and 5xx,
  timeouts, dropped connections, and replies whose content is not a valid JSON
  object (malformed JSON, a missing key);
- :class:`ReplyError` (this item failed; others may work): retries used up, or
  another 4xx (e.g. a passage longer than the model's context);
- :class:`ServerError` (a :class:`~receval.core.errors.RecevalError`: nothing will work,
  stop): HTTP 401/403 (key), 404 (URL or model), or a server that cannot be reached
  at all once the retries are used up.

The key rules (environment only, redacted messages) are those of :mod:`receval.core.secrets`.

:meth:`ChatClient.answer` asks through the cached-call layer (:mod:`receval.clients.calls`):
the answer is keyed by this client's endpoint, the model, the temperature, the seed,
the reply's schema and the messages, and carries its provenance and usage.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable

from receval.clients import http
from receval.clients.calls import Answer, Calls, chat_tokens
from receval.core.errors import RecevalError

PATH = "/chat/completions"
MODES = ("json_schema", "json_object", "none")
_FORMAT_REJECTED = re.compile(r"response_format|json_schema|json_object|schema|structured", re.I)


class ReplyError(Exception):
    """One request failed for good; ``reason`` says why (key-free)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


class ServerError(RecevalError):
    """The endpoint cannot serve any request: stop the whole job."""


def endpoint(base_url: str | None, what: str = "synth.base_url") -> str:
    """``{base_url}/chat/completions`` after checking the URL; a ConfigError otherwise."""
    return http.api_url(base_url, PATH, what, what.rsplit(".", 1)[0] + ".api_key_env")


def check_key_env(api_key_env: str | None, url: str, what: str = "synth.api_key_env") -> None:
    """The variable name must look like one; it must be set unless the server is local."""
    http.check_key_env(api_key_env, url, what)


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
        option: str = "synth",
        cache_dir: str | None = None,
    ):
        self.option = option  # the config group messages name (synth, judge, transform)
        self.url = endpoint(base_url, f"{option}.base_url")
        self.client = http.Client(
            base_url, api_key_env, timeout=timeout, retries=max_retries, backoff=backoff,
            max_backoff=max_backoff, option=option, sleep=sleep,
        )
        self.model = str(model)
        self.api_key_env = api_key_env or None
        self._mode = 0  # index into MODES; only ever increases
        self._lock = threading.Lock()
        self.calls = Calls(self.url, self.model, cache_dir, self.client.secret_envs)

    def __repr__(self) -> str:
        return f"ChatClient(url={self.url!r}, model={self.model!r}, api_key_env={self.api_key_env!r})"

    @property
    def mode(self) -> str:
        """The structured-output mode in use: json_schema, json_object or none."""
        return MODES[self._mode]

    @property
    def requests(self) -> int:
        """Every request sent, retries and fallbacks included."""
        return self.client.requests

    @property
    def retries(self) -> int:
        return self.client.retries

    def _payload(self, messages: list[dict], schema: dict, temperature: float, seed: int | None, mode: int) -> dict:
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
        return body

    def _fall_back(self, tried: int) -> bool:
        """The server rejected mode ``tried``: move past it (once, for every thread)."""
        with self._lock:
            if self._mode == tried and tried + 1 < len(MODES):
                self._mode = tried + 1
            return self._mode > tried

    def complete_json(
        self,
        messages: list[dict],
        schema: dict,
        validate: Callable[[dict], str | None],
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> dict:
        """The reply's content as a JSON object that ``validate`` accepts (it returns a problem or None)."""
        return self.complete(messages, schema, validate, temperature, seed)[0]

    def complete(
        self,
        messages: list[dict],
        schema: dict,
        validate: Callable[[dict], str | None],
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> tuple[dict, dict]:
        """:meth:`complete_json` and the answer's ``usage`` object ({} when it has none), for
        callers that count tokens (``receval judge``)."""

        def attempt() -> tuple[dict, dict]:
            reply = self._send(messages, schema, temperature, seed)
            parsed, problem = self._content(reply.raw)
            if parsed is not None:
                problem = validate(parsed)
                if not problem:
                    return parsed, _usage(reply.raw)
                problem = self.client.clip(f"reply rejected: {problem}")  # it may quote an echoed key
            raise http.Retryable(problem)

        try:
            return self.client.call(attempt)
        except http.GaveUp as gave_up:
            if gave_up.last.unreachable:
                raise ServerError(
                    f"cannot reach {self.url} ({gave_up.last.problem}) after {gave_up.attempts} attempts; "
                    f"is the server running and {self.option}.base_url right?"
                ) from None
            raise ReplyError(f"gave up {gave_up}") from None

    def answer(
        self,
        messages: list[dict],
        schema: dict,
        validate: Callable[[dict], str | None],
        temperature: float = 0.0,
        seed: int | None = None,
        fresh: bool = False,
        attempt: int = 0,
    ) -> Answer:
        """:meth:`complete` through the cached-call layer: the cached answer unless ``fresh``,
        else asked; its tokens under the one usage rule (:func:`receval.clients.calls.chat_tokens`).
        ``attempt`` > 0 marks a re-ask of the same item (synth asks again a reply that repeated
        a kept question): it is part of the key, so the cache never answers a re-ask with the
        reply it repeats, and a rerun replays each attempt in turn."""
        fields = {"temperature": float(temperature), "seed": None if seed is None else int(seed),
                  "response_format": schema}
        if attempt:
            fields["attempt"] = int(attempt)

        def ask() -> Answer:
            reply, usage = self.complete(messages, schema, validate, temperature, seed)
            tokens = chat_tokens(
                usage, [str(m.get("content", "")) for m in messages], json.dumps(reply, ensure_ascii=False),
                self.url, f"{self.option}.base_url", self.client.clip,
            )
            return Answer(reply, *tokens)

        def check(reply) -> bool:
            return isinstance(reply, dict) and not validate(reply)

        return self.calls.answer(fields, messages, ask, fresh=fresh, check=check)

    def _send(self, messages, schema, temperature, seed) -> http.Reply:
        """One request, asked again at once in the next mode when the server rejects the format."""
        while True:
            mode = self._mode
            try:
                return self.client.send(PATH, self._payload(messages, schema, temperature, seed, mode))
            except http.StatusError as error:
                status, problem = error.status, error.problem
                if status in (400, 422) and MODES[mode] != "none" and _FORMAT_REJECTED.search(error.detail):
                    if self._fall_back(mode):
                        continue
                if status in (401, 403):
                    where = f"the variable {self.api_key_env}" if self.api_key_env else f"{self.option}.api_key_env (none set)"
                    raise ServerError(f"{self.url} refused the request ({problem}); check the API key in {where}") from None
                if status == 404:
                    raise ServerError(
                        f"{self.url} answered {problem}; check {self.option}.base_url (the API root before "
                        f"/chat/completions) and {self.option}.model={self.model!r}"
                    ) from None
                raise ReplyError(problem) from None

    def _content(self, raw: bytes) -> tuple[dict | None, str]:
        """The JSON object in ``choices[0].message.content``, or (None, why not)."""
        try:
            payload = json.loads(raw)
        except (ValueError, RecursionError):
            return None, f"the server's answer is not JSON: {self.client.clip(raw, 120)!r}"
        try:
            content = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            return None, "the answer has no choices[0].message.content (is this a chat-completions API?)"
        if not isinstance(content, str) or not content.strip():
            return None, "the reply's content is empty"
        parsed = parse_json_object(content)
        if parsed is None:
            return None, f"the reply's content is not a JSON object: {self.client.clip(content, 120)!r}"
        return parsed, ""


def _usage(raw: bytes) -> dict:
    try:
        usage = json.loads(raw).get("usage")
    except (ValueError, AttributeError, RecursionError):
        return {}
    return usage if isinstance(usage, dict) else {}


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
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None
