"""The one door out: every answer of a model or service, keyed by who answered what.

Every remote step (the LLM transforms, the LLM judge, the remote re-rankers) asks
through :class:`Calls`. Requests themselves go through :mod:`receval.clients.http`
(the one retry rule); what is added here is identity, usage and provenance.

**Identity** (:func:`call_key`): the sha256 of the endpoint after :func:`normal_endpoint`
(scheme and host lower-cased, the scheme's default port dropped, the path without a
trailing slash, no query), the model, every request field that changes the answer
(temperature, seed, the response format, ...: whatever the caller sends besides the
prompt) and the prompt's sha256. Never the model name alone, never the API key. Two
servers serving the same model name are two keys: the second is asked.

**Usage** (:func:`usage_count`, the one rule): a token count a server reports must be a
whole number from 0 to 2**53 (:func:`receval.core.numeric.count`); anything else (NaN,
infinity, ``-1e12``, a fraction, a string, a boolean) stops the step with a message
naming the server and the field, since it would become money. A count the server does
not report (absent or null) is estimated by :func:`estimate_tokens` and said to be.

**Provenance** (:class:`Answer`): an answer is ``live`` (asked by this run: now, or
earlier and read again, ``reused``) or ``replayed`` (read from the cache an earlier run
wrote); it carries the latency (``live_ms``) and the tokens it had when it was asked
live, and the reading's own wall time apart (``replay_ms``). "Replayed" means an earlier
run's answer, never this run's own: the run's warm-up, an earlier question asking the
same, or a timing repeat (``timing.repeats``) read an answer this run asked, which is
live. Either way a step reports the answer's live cost, never the reading's wall time
(:class:`Replay`).

**Embeddings** keep their per-text packs (:mod:`receval.encoders.cache`: one file per
text would be millions of files), keyed by :func:`call_keys`, this key function, and
holding each text's live latency (:mod:`receval.encoders.http`).

**The cache**: one JSON file per answer under ``<cache_dir>/calls/v2/<2 hex>/<key>.json``,
written whole (:func:`receval.core.io.atomic_write`). An entry names its endpoint, model
and fields; one that disagrees with the key it was read for, or cannot be read, is asked
again. The folders of earlier caches (``<cache_dir>/llm/``, the judge's ``judge/``) keyed
answers without the server, so they are never read.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from receval.core import numeric
from receval.core.errors import RecevalError
from receval.core.io import WriteError, atomic_write

FOLDER = ("calls", "v2")  # under a cache_dir; v2: keys hold the endpoint
DEFAULT_PORTS = {"http": 80, "https": 443}
_TOKEN = re.compile(r"\w+|[^\w\s]")


# ---------------------------------------------------------------------- identity


def normal_endpoint(url: str) -> str:
    """``url`` as one spelling of its endpoint: scheme and host lower-cased, the scheme's
    default port dropped, no user, query or fragment, the path without trailing slashes."""
    parts = urllib.parse.urlsplit(str(url).strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    netloc = f"[{host}]" if ":" in host else host
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None and port != DEFAULT_PORTS.get(scheme):
        netloc += f":{port}"
    return urllib.parse.urlunsplit((scheme, netloc, parts.path.rstrip("/"), "", ""))


def digest(value) -> str:
    """sha256 of ``value`` as canonical JSON (sorted keys)."""
    blob = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def call_key(endpoint: str, model: str, fields: dict, prompt) -> str:
    """The key of one answer: normalised endpoint, model, answer-changing fields, prompt hash."""
    return digest({"endpoint": normal_endpoint(endpoint), "model": str(model), "fields": fields,
                   "prompt": digest(prompt)})


def call_keys(endpoint: str, model: str, fields: dict, prompts: list) -> list[bytes]:
    """:func:`call_key` of each prompt as 32 bytes: the per-text keys of the embedding cache's
    packs (:mod:`receval.encoders.http`), which hold vectors per text, not per request."""
    return [bytes.fromhex(call_key(endpoint, model, fields, prompt)) for prompt in prompts]


# ---------------------------------------------------------------------- usage


def estimate_tokens(texts: list[str]) -> np.ndarray:
    """Tokens per text, estimated as words and punctuation marks (no model tokenizer)."""
    return np.fromiter((len(_TOKEN.findall(text)) for text in texts), np.float64, len(texts))


def usage_count(value, what: str, option: str, clip: Callable[..., str]) -> int:
    """The one usage rule: ``value`` as a count a server reported (a whole number from 0
    to 2**53), else a RecevalError ``<what> is <value, clipped>`` naming ``option``."""
    number = numeric.count(value)
    if number is None:
        raise RecevalError(
            f"{what} is {clip(repr(value), 80)}, not a count (a whole number from 0 to 2**53); "
            f"its usage cannot be priced: check the server behind {option}"
        )
    return number


def usage_tokens(data: dict, key: str, client) -> int | None:
    """Tokens an answer reports (``usage.{total,prompt,input}_tokens``, or for ``key="output"``
    ``usage.{completion,output}_tokens``; Cohere's ``meta.billed_units.<key>_tokens``) under
    :func:`usage_count`, None when it reports none (null counts as none). ``client`` gives
    ``url``, ``option`` and ``clip`` for the message."""
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
    return usage_count(value, f"{client.url}: the answer's {field}", f"{client.option}.base_url", client.clip)


def chat_tokens(usage: dict, prompt_texts: list[str], reply_text: str, where: str, option: str,
                clip: Callable[..., str]) -> tuple[float, float, bool]:
    """Input and output tokens of a chat answer (``usage.prompt_tokens``,
    ``usage.completion_tokens`` under :func:`usage_count`; a missing one estimated) and
    whether any was estimated."""
    usage = usage if isinstance(usage, dict) else {}
    out, estimated = [], False
    for name, texts in (("prompt_tokens", prompt_texts), ("completion_tokens", [reply_text])):
        value = usage.get(name)
        if value is None:
            estimated = True
            out.append(float(estimate_tokens(texts).sum()))
        else:
            out.append(float(usage_count(value, f"{where}: the answer's usage.{name}", option, clip)))
    return out[0], out[1], estimated


# ---------------------------------------------------------------------- provenance


@dataclass(frozen=True)
class Answer:
    """One answer and what it cost when it was asked live."""

    reply: object  # the accepted answer (JSON)
    input_tokens: float = 0.0
    output_tokens: float = 0.0
    tokens_estimated: bool = False
    live_ms: float = 0.0  # the request's latency when it was asked live
    replayed: bool = False  # read from the cache an earlier run wrote: not asked by this run
    replay_ms: float = 0.0  # the reading's own wall time (0 when asked now)
    reused: bool = False  # asked live by this run before (warm-up, an earlier question, a repeat), read again


@dataclass(frozen=True)
class Replay:
    """What a batch's answers not asked now stand for in a stage's time: ``answers``
    replayed from an earlier run's cache, ``live_s`` the seconds they took live (the
    stage reports these), ``own_s`` the replay's own wall time (kept apart, never
    reported as the stage's); ``reused`` answers this run asked before and read again
    (live, not replayed), with their ``reused_live_s`` and ``reused_own_s`` alike."""

    answers: int = 0
    live_s: float = 0.0
    own_s: float = 0.0
    reused: int = 0
    reused_live_s: float = 0.0
    reused_own_s: float = 0.0

    def __add__(self, other: "Replay") -> "Replay":
        return Replay(*(a + b for a, b in zip(self.fields(), other.fields())))

    def fields(self) -> tuple:
        return (self.answers, self.live_s, self.own_s, self.reused, self.reused_live_s, self.reused_own_s)

    def __bool__(self) -> bool:
        """True when any answer of the batch was not asked now (replayed or reused)."""
        return bool(self.answers or self.reused)

    @property
    def shift(self) -> float:
        """Seconds to add to the stage's measured wall time: the live time in place of the reading's."""
        return self.live_s - self.own_s + self.reused_live_s - self.reused_own_s


def batch_replay(answers: list[Answer], wall: float, concurrency: int) -> Replay:
    """The answers of one batch not asked now (replayed or reused), the batch asked
    ``concurrency`` at a time in ``wall`` seconds: they stand for their live latencies,
    ``concurrency`` at a time, and their share of the wall time is the reading's own."""
    at_once = max(1, min(int(concurrency), len(answers) or 1))

    def part(found: list[Answer]) -> tuple[int, float, float]:
        if not found:
            return 0, 0.0, 0.0
        return len(found), sum(a.live_ms for a in found) / 1000.0 / at_once, wall * len(found) / len(answers)

    return Replay(*part([a for a in answers if a.replayed]), *part([a for a in answers if a.reused]))


def merged(*maps: dict[str, Replay]) -> dict[str, Replay]:
    """Stage -> :class:`Replay`, summed over ``maps``."""
    out: dict[str, Replay] = {}
    for found in maps:
        for stage, replay in (found or {}).items():
            out[stage] = out.get(stage, Replay()) + replay
    return out


def live_calls(stage_facts) -> int:
    """The requests a stage's answers took live, from its ``run.json`` facts: those this
    run sent (``search_api_calls``) plus the answers it replayed (``replayed_answers``,
    each asked once when live) and the ones it read again of its own (``reused_answers``:
    the warm-up's, asked before the timed search); what report and select count, so a
    replay is not free."""
    facts = stage_facts if isinstance(stage_facts, dict) else {}
    names = ("search_api_calls", "replayed_answers", "reused_answers")
    return sum(numeric.count(facts.get(name) or 0) or 0 for name in names)


# ---------------------------------------------------------------------- the layer


class Calls:
    """Answers of one endpoint and model, from the cache when it holds them, else asked.

    An answer this object asked is this run's own: read again (from the cache, or from
    memory when ``cache_dir=None``), it is ``reused``, never ``replayed``, and no request
    is sent for it. ``live``, ``replayed`` and ``reused`` count answers (thread-safe)."""

    def __init__(self, endpoint: str, model: str, cache_dir: str | Path | None):
        self.endpoint, self.model = normal_endpoint(endpoint), str(model)
        self.folder = Path(cache_dir).expanduser().joinpath(*FOLDER) if cache_dir else None
        self.live = self.replayed = self.reused = 0
        self.own: dict[str, Answer | None] = {}  # keys this run asked: the answer itself when no folder keeps it
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_lock"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def key(self, fields: dict, prompt) -> str:
        return call_key(self.endpoint, self.model, fields, prompt)

    def answer(self, fields: dict, prompt, ask: Callable[[], Answer], fresh: bool = False,
               check: Callable[[object], bool] | None = None) -> Answer:
        """The cached answer to ``prompt`` with ``fields`` (unless ``fresh``; one whose reply
        ``check`` refuses is asked again), else ``ask()``'s, timed and cached. ``ask``
        returns an :class:`Answer` without its latency."""
        key = self.key(fields, prompt)
        if not fresh:
            began = time.perf_counter()
            with self._lock:
                mine, remembered = key in self.own, self.own.get(key)
            found = remembered if remembered is not None else self.read(key, fields)
            if found is not None and check is not None and not check(found.reply):
                found = None
            if found is not None:
                with self._lock:
                    if mine:
                        self.reused += 1
                    else:
                        self.replayed += 1
                return replace(found, replayed=not mine, reused=mine, replay_ms=1000.0 * (time.perf_counter() - began))
        began = time.perf_counter()
        answer = ask()
        answer = replace(answer, live_ms=1000.0 * (time.perf_counter() - began), replayed=False, replay_ms=0.0,
                         reused=False)
        with self._lock:
            self.live += 1
            self.own[key] = answer if self.folder is None else None
        self.write(key, fields, answer)
        return answer

    def path(self, key: str) -> Path | None:
        return self.folder / key[:2] / f"{key}.json" if self.folder is not None else None

    def read(self, key: str, fields: dict) -> Answer | None:
        """The entry of ``key``; None when absent, unreadable or not this endpoint's, model's and fields'."""
        path = self.path(key)
        if path is None or not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if (data["endpoint"], data["model"], digest(data["fields"])) != (self.endpoint, self.model, digest(fields)):
                return None  # another server's, model's or request's answer (as JSON: a tuple is a list)
            counts = [numeric.count(data[name]) for name in ("input_tokens", "output_tokens")]
            live_ms = numeric.real(data["live_ms"])
            if None in counts or live_ms is None or live_ms < 0:
                return None
            return Answer(data["reply"], float(counts[0]), float(counts[1]), bool(data["tokens_estimated"]),
                          float(live_ms))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # a damaged entry is asked again

    def write(self, key: str, fields: dict, answer: Answer) -> None:
        path = self.path(key)
        if path is None:
            return
        data = {"endpoint": self.endpoint, "model": self.model, "fields": fields, "reply": answer.reply,
                "input_tokens": answer.input_tokens, "output_tokens": answer.output_tokens,
                "tokens_estimated": answer.tokens_estimated, "live_ms": answer.live_ms}
        blob = json.dumps(data, sort_keys=True, ensure_ascii=False).encode("utf-8")
        try:
            atomic_write(path, lambda tmp: Path(tmp).write_bytes(blob))
        except (OSError, WriteError):
            pass  # a cache that cannot be written only costs the next run its requests
