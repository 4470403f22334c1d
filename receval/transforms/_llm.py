"""What the LLM transforms (``hyde``, ``multi_query``) share: their config fields, the
one chat client (:class:`receval.clients.chat.ChatClient`: key from the environment,
retries, structured output) asking through the cached-call layer
(:mod:`receval.clients.calls`).

Every answer is cached under ``<cache_dir>/calls/v2/`` by the endpoint (normalised), the
model, the temperature, the seed, the reply's schema and the messages: another server
with the same model name is asked, a changed template is a new entry. An entry holds the
accepted reply and what it cost when it was asked live (input and output tokens, the
latency), so a replay sends no request and stores the same per-question counts and
money, and reports the live latency as the ``transform`` stage's time
(:func:`receval.clients.calls.batch_replay`); the replay's own wall time is kept apart
(``run.json``'s ``replayed`` and the stage's ``replay_wall_ms``). ``run.json``'s
``stages.transform.search_api_calls`` counts only the requests this run sent (0 on a
replay) and ``transform.from_cache`` the answers it found an earlier run had asked
(``transform.reused``: this run's own, asked once and read again: live, not replayed). ``cache_dir=null`` keeps
answers for the run only.
"""

from __future__ import annotations

import string
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Optional

import numpy as np

from receval.clients import failures
from receval.clients.calls import Answer, Replay, batch_replay
from receval.clients.chat import ChatClient, ReplyError
from receval.core.settings import ApiFields
from receval.schema import SEED, THREADS, range_
from receval.transforms import TRANSFORM, Spent, Transformed



@dataclass
class LlmFields(ApiFields):
    """The fields of every LLM transform: the endpoint (:class:`receval.core.settings.ApiFields`),
    the model and how it is asked."""

    base_url: Optional[str] = None  # the API root before /chat/completions, e.g. http://localhost:11434/v1
    model: Optional[str] = None
    api_key_env: Optional[str] = "OPENAI_API_KEY"  # NAME of the variable holding the key (unset is fine on loopback)
    temperature: float = field(default=0.0, metadata=range_(0, 2, hint="chat APIs take 0 to 2"))
    seed: int = field(default=0, metadata=range_(*SEED))  # sent with every request; part of the cache key
    concurrency: int = field(default=4, metadata=range_(*THREADS))  # requests in flight within a batch

    def llm_problems(self) -> list[str]:
        problems = []
        if not self.base_url:
            problems.append("base_url is required: the chat API root, e.g. transform.base_url=http://localhost:11434/v1")
        if not self.model:
            problems.append("model is required: the model name the API expects, e.g. transform.model=qwen2.5:7b")
        # every LLM transform's schema has a prompt, and names what it fills in (PLACEHOLDERS)
        return problems + prompt_problems(self.prompt, getattr(self, "PLACEHOLDERS", ("question",)))


def prompt_problems(prompt: str, allowed: tuple[str, ...]) -> list[str]:
    """The one rule of a prompt that ``str.format`` fills (keys relative to the node): it
    holds ``{question}``, and no placeholder but ``allowed`` ones, each plain (``{foo}``,
    ``{}``, ``{question.x}`` or ``{n!r}`` would fail or leak at the first request, after
    the index was built); a literal brace is written ``{{`` / ``}}``."""
    names = ", ".join("{" + name + "}" for name in allowed)
    fix = f"the placeholders are {names}; write a literal brace as {{{{ or }}}}"
    try:
        parsed = list(string.Formatter().parse(prompt))
    except ValueError as error:
        return [f"prompt cannot be filled in ({error}): {fix}"]
    problems = []
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if name not in allowed or spec or conversion:
            written = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            problems.append(f"prompt holds {written[:40]}, which is no placeholder a request fills: {fix}")
    if "question" not in [name for _, name, _, _ in parsed]:
        problems.append("prompt must hold {question}, where the question goes")
    return problems


class Asker:
    """Asks the chat model each prompt once: from the cache when it holds the answer."""

    def __init__(self, node, schema: dict, validate: Callable[[dict], str | None], cache_dir: str | None):
        self.client = ChatClient(
            node.base_url, str(node.model), node.api_key_env, timeout=float(node.timeout),
            max_retries=int(node.retries), backoff=float(node.backoff), max_backoff=float(node.max_backoff),
            option="transform", cache_dir=cache_dir,
        )
        self.model, self.temperature, self.seed = str(node.model), float(node.temperature), int(node.seed)
        self.kind = str(node.kind)  # hyde, multi_query: the step the failure rule names
        self.concurrency = int(node.concurrency)
        self.schema, self.validate = schema, validate
        self.memory: dict[str, Answer] = {}
        self.recent: set[str] = set()  # keys asked since the last forget()
        self.again: set[str] = set()  # keys to ask again, not read (warm-up's, after forget())
        self.asked = self.from_cache = self.reused = 0
        self.replay = Replay()  # the run's replayed and reused answers (since the last forget())
        self.counting = True  # False in timing repeats: what they read is not counted again
        self.tokens_estimated = False
        self._lock = threading.Lock()

    @property
    def api_calls(self) -> int:
        return self.client.requests

    def ask(self, prompts: list[list[dict]]) -> tuple[list[Answer], Replay]:
        """One answer per prompt (a list of chat messages), ``concurrency`` requests in
        flight, and what the replayed ones among them stand for (:class:`Replay`). A prompt
        left without an answer stops the run under the one failure rule's stricter form
        (:func:`receval.clients.failures.stop`): the prompts not yet asked are not sent."""
        began = time.perf_counter()
        answers, reasons = failures.ask_until_failure(prompts, self.one, ReplyError, self.concurrency)
        failures.stop(
            failures.Counts(
                step=f"{self.client.url}: transform={self.kind}, transform.model={self.model!r}",
                sent=self.client.requests, replayed=sum(a.replayed for a in answers), asked=len(prompts),
                usable=len(answers), failed=len(reasons), last_reason=reasons[-1] if reasons else None,
            ),
            fix="raise transform.retries or transform.timeout, or check the server and that the model "
                "answers the JSON the prompt asks for",
        )
        self.client.calls.note(f"transform={self.kind}")
        replay = batch_replay(answers, time.perf_counter() - began, self.concurrency)
        with self._lock:
            self.replay = self.replay + replay if self.counting else self.replay
        return answers, replay

    def one(self, messages: list[dict]) -> Answer:
        key = self.client.calls.key(self.fields(), messages)
        with self._lock:
            again = key in self.again
            self.again.discard(key)
            remembered = self.memory.get(key)
        if remembered is not None and not again:  # asked before by this run (live) or read from an earlier run's
            with self._lock:
                self.from_cache += remembered.replayed * self.counting
                self.reused += (not remembered.replayed) * self.counting
            return replace(remembered, replayed=remembered.replayed, reused=not remembered.replayed, replay_ms=0.0)
        answer = self.client.answer(messages, self.schema, self.validate, self.temperature, self.seed, fresh=again)
        with self._lock:
            if answer.replayed:
                self.from_cache += 1
            elif answer.reused:
                self.reused += 1
            else:
                self.asked += 1
                self.recent.add(key)
            self.tokens_estimated = self.tokens_estimated or answer.tokens_estimated
            self.memory[key] = answer
        return answer

    def fields(self) -> dict:
        """The request fields that change an answer (:meth:`ChatClient.answer`'s)."""
        return {"temperature": self.temperature, "seed": self.seed, "response_format": self.schema}

    def forget(self) -> None:
        """After the warm-up (:func:`receval.retrievers.warm_up`): what it asked is asked
        again by the timed search (and its entry rewritten), as every stage redoes its
        whole work then; what it found in the cache is found again."""
        with self._lock:
            for key in self.recent:
                self.memory.pop(key, None)
            self.again |= self.recent
            self.recent = set()
            self.asked = self.from_cache = self.reused = 0
            self.replay = Replay()

    def usage(self, answers: list[list[Answer]]) -> dict[str, np.ndarray]:
        """Per question (a list of its answers): ``requests``, ``input_tokens``, ``output_tokens``."""
        return {
            "requests": np.asarray([len(group) for group in answers], dtype=np.float64),
            "input_tokens": np.asarray([sum(a.input_tokens for a in group) for group in answers], dtype=np.float64),
            "output_tokens": np.asarray([sum(a.output_tokens for a in group) for group in answers], dtype=np.float64),
        }

    def facts(self) -> dict:
        return {"model": self.model, "endpoint": self.client.calls.endpoint, "temperature": self.temperature,
                "seed": self.seed, "asked": self.asked, "from_cache": self.from_cache, "reused": self.reused,
                "tokens_estimated": self.tokens_estimated}


class Rewritten(Transformed):
    """A first stage searched with texts an LLM wrote for each question (:meth:`texts`)."""

    @property
    def asker(self) -> Asker:
        return self.transform.asker

    def rewrite(self, questions: list[str], spent: Spent) -> list[list[str]]:
        """Each question's texts to search with; its requests and tokens into ``spent``."""
        answers, replay = self.asker.ask([self.transform.messages(q) for q in questions])
        spent.replayed(TRANSFORM, replay)
        texts = [self.transform.texts(q, a.reply) for q, a in zip(questions, answers)]
        usage = self.asker.usage([[a] for a in answers])
        spent.counts.update({f"{name}.{TRANSFORM}": values for name, values in usage.items()})
        if any(a.tokens_estimated for a in answers):
            spent.estimated = spent.estimated | {TRANSFORM}
        return texts

    def forget(self) -> None:
        self.asker.forget()

    def repeat(self) -> None:
        """A timing repeat reads this run's own answers (never asks again) and counts none of them."""
        self.asker.counting = False
