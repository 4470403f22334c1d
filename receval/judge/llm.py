"""``judge=llm``: an OpenAI-compatible chat model grades each pair 0-3.

The scale is UMBRELA's (Upadhyay et al. 2024, after Thomas et al.'s Bing prompt), the
one the TREC 2024 RAG track judged its pools with: 3 the passage is about the question
and holds its exact answer; 2 it holds some answer, unclear or amid other matter; 1 it
is related but does not answer; 0 it has nothing to do with it. The text of
:data:`SYSTEM` is receval's own. The reply is ``{"grade": n}`` (structured output when
the server has it, :mod:`receval.clients.chat`).

``judge.samples`` answers per pair (sample s is sent with seed ``judge.seed + s``),
majority vote; a tie goes to the lower grade (a judge unsure between two grades is
not trusted with the higher). Every answer goes through the cached-call layer
(:mod:`receval.clients.calls`), keyed by the endpoint, the model, the temperature, the
seed sent (``judge.seed + s``), the reply's schema and the messages, so a rerun with the
same settings against the same server sends no request, and another server is asked.
``requests``, ``input_tokens``, ``output_tokens`` and ``cost_usd`` (``judge.per_1m_input_tokens``
...) count this run's requests only, as a re-ranker's do; ``replayed`` counts the answers
read from the cache and ``live_cost_usd`` / ``live_ms`` what every answer cost when it
was asked live (tokens under the one usage rule, :func:`receval.clients.calls.usage_count`).
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Optional

from receval.clients.calls import Answer
from receval.clients.chat import ChatClient, ReplyError
from receval.run.components import Context, JudgeConfig, component
from receval.core.settings import ApiFields, retries_of
from receval.schema import RETRIES, SEED, THREADS, WORDS, range_

SYSTEM = (
    "You grade how well a passage answers a search question, on a scale of 0 to 3.\n"
    "3: the passage is about the question and contains its exact answer.\n"
    "2: the passage contains some answer to the question, but it is unclear, partial, or buried "
    "in other material.\n"
    "1: the passage is related to the question's topic but does not answer it.\n"
    "0: the passage has nothing to do with the question.\n"
    "Think of what the person asking most likely wants, judge how well the passage serves that, "
    'then reply with a JSON object only: {"grade": <0, 1, 2 or 3>}.'
)
SCHEMA = {
    "title": "grade", "type": "object", "additionalProperties": False,
    "properties": {"grade": {"type": "integer", "enum": [0, 1, 2, 3]}}, "required": ["grade"],
}


@dataclass
class LlmJudgeConfig(JudgeConfig, ApiFields):
    """The llm judge: the endpoint (:class:`receval.core.settings.ApiFields`), the model and
    how it grades."""

    kind: str = "llm"
    base_url: Optional[str] = None  # required: API root before /chat/completions, e.g. http://localhost:11434/v1
    model: Optional[str] = None  # required
    api_key_env: Optional[str] = "OPENAI_API_KEY"  # NAME of the variable holding the key
    temperature: float = field(default=0.0, metadata=range_(0, 2, hint="chat APIs take 0 to 2"))
    seed: int = field(default=0, metadata=range_(*SEED))  # sample s is sent with seed + s
    samples: int = field(default=1, metadata=range_(1, 99))  # answers per pair, majority vote
    passage_words: int = field(default=300, metadata=range_(*WORDS))  # words of each unit put in a prompt
    concurrency: int = field(default=4, metadata=range_(*THREADS))  # requests in flight
    # deprecated: the old name of retries (read as it, with a notice)
    max_retries: Optional[int] = field(default=None, metadata=range_(*RETRIES, null="retries holds it"))
    per_1k_requests: float = field(default=0.0, metadata=range_(0, 1e6, hint="US dollars"))
    per_1m_input_tokens: float = field(default=0.0, metadata=range_(0, 1e6, hint="US dollars"))
    per_1m_output_tokens: float = field(default=0.0, metadata=range_(0, 1e6, hint="US dollars"))
    cache_dir: Optional[str] = None  # the answer cache's root; null: RECEVAL_CACHE_DIR or .cache/receval

    def problems(self) -> list[str]:
        problems = []
        if not self.base_url:
            problems.append("base_url is required: the API root, e.g. judge.base_url=http://localhost:11434/v1")
        if not self.model:
            problems.append("model is required: the model name the API expects, e.g. judge.model=llama3.1")
        return problems


def _validate(reply: dict) -> str | None:
    grade = reply.get("grade")
    if isinstance(grade, str) and grade.strip() in ("0", "1", "2", "3"):
        reply["grade"] = grade = int(grade.strip())
    if isinstance(grade, bool) or grade not in (0, 1, 2, 3):
        return f'no grade 0-3 as {{"grade": n}}: {reply!r}'[:200]
    return None


def vote(grades: list[int]) -> int:
    """The most common grade; a tie goes to the lower grade."""
    counts = Counter(grades)
    top = max(counts.values())
    return min(g for g, n in counts.items() if n == top)


class LlmJudge:
    def __init__(self, node, client: ChatClient | None = None):
        self.node = node
        root = node.cache_dir or os.environ.get("RECEVAL_CACHE_DIR", ".cache/receval")
        self.client = client or ChatClient(
            node.base_url, str(node.model), node.api_key_env, timeout=node.timeout, max_retries=retries_of(node, "judge"),
            backoff=node.backoff, max_backoff=node.max_backoff, option="judge", cache_dir=root,
        )
        self.model, self.temperature, self.seed = str(node.model), float(node.temperature), int(node.seed)
        self.name = f"llm:{self.model}"
        self.usage = {"requests": 0.0, "input_tokens": 0.0, "output_tokens": 0.0, "cached_answers": 0.0,
                      "failed_pairs": 0.0, "tokens_estimated": False, "live_input_tokens": 0.0,
                      "live_output_tokens": 0.0, "live_ms": 0.0, "replay_wall_ms": 0.0, "reused_answers": 0.0}
        self.prompt_sha256 = hashlib.sha256(SYSTEM.encode()).hexdigest()
        self.last_reason: str | None = None

    def messages(self, question: str, passage: str) -> list[dict]:
        passage = " ".join(passage.split()[: int(self.node.passage_words)])
        return [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Question: {question}\n\nPassage: {passage}"},
        ]

    def answer(self, messages: list[dict], sample: int, schema: dict = SCHEMA, validate=None) -> Answer | None:
        """One sample's answer (sent with seed ``judge.seed + sample``): from the cache, else
        asked (and cached); None when it failed. ``schema``, ``validate``: the reply's
        (a grade by default; a nugget's support: :mod:`receval.judge.support`)."""
        try:
            return self.client.answer(messages, schema, validate or _validate, self.temperature, self.seed + sample)
        except ReplyError as error:
            self.last_reason = error.reason  # named when the judge fails (receval.clients.failures)
            return None

    def ask(self, prompts: list[list[dict]], schema: dict = SCHEMA, validate=None) -> list[list[dict]]:
        """Each prompt asked ``judge.samples`` times (sample s with seed ``judge.seed + s``),
        ``judge.concurrency`` in flight, through the cached-call layer; the replies each got
        (fewer than ``samples`` when one failed), every answer's usage counted."""
        samples = int(self.node.samples)
        tasks = [(i, s, prompt) for i, prompt in enumerate(prompts) for s in range(samples)]
        with ThreadPoolExecutor(max_workers=int(self.node.concurrency)) as pool:
            answers = list(pool.map(lambda t: self.answer(t[2], t[1], schema, validate), tasks))
        self.client.calls.note(f"receval judge {self.name}")
        replies: list[list[dict]] = [[] for _ in prompts]
        for (i, _, _), found in zip(tasks, answers):
            if found is None:
                continue
            replies[i].append(found.reply)
            self.usage["live_input_tokens"] += found.input_tokens
            self.usage["live_output_tokens"] += found.output_tokens
            self.usage["live_ms"] += found.live_ms
            self.usage["tokens_estimated"] = self.usage["tokens_estimated"] or found.tokens_estimated
            if found.replayed:
                self.usage["cached_answers"] += 1
                self.usage["replay_wall_ms"] += found.replay_ms
            elif found.reused:  # this job asked it before (the same prompt twice): live, paid once
                self.usage["reused_answers"] += 1
            else:
                self.usage["requests"] += 1
                self.usage["input_tokens"] += found.input_tokens
                self.usage["output_tokens"] += found.output_tokens
        self.usage["replayed"] = self.usage["cached_answers"]
        self.usage["requests_sent"] = float(self.client.requests)  # retries and fallbacks included
        self.usage["cost_usd"] = self.money(self.usage["requests"], self.usage["input_tokens"], self.usage["output_tokens"])
        self.usage["live_cost_usd"] = self.money(
            self.usage["requests"] + self.usage["cached_answers"] + self.usage["reused_answers"],
            self.usage["live_input_tokens"],
            self.usage["live_output_tokens"],
        )
        return replies

    def provenance(self) -> dict:
        return {"model": self.model, "temperature": self.temperature, "seed": self.seed,
                "samples": int(self.node.samples), "prompt_sha256": self.prompt_sha256}

    def judge(self, records: list[dict], references: dict[str, list[str]]) -> list[tuple[int | None, dict]]:
        samples = int(self.node.samples)
        replies = self.ask([self.messages(r.get("question") or "", r.get("text") or "") for r in records])
        out = []
        for answers in replies:
            grades = [int(reply["grade"]) for reply in answers]
            if len(grades) < samples:  # a sample failed: no label; a rerun asks again
                self.usage["failed_pairs"] += 1
                out.append((None, {}))
            else:
                out.append((vote(grades), {**self.provenance(), "votes": grades}))
        return out

    def money(self, requests: float, input_tokens: float, output_tokens: float) -> float:
        """US dollars at the judge's prices."""
        return (requests / 1e3 * self.node.per_1k_requests + input_tokens / 1e6 * self.node.per_1m_input_tokens
                + output_tokens / 1e6 * self.node.per_1m_output_tokens)


@component("judge", "llm", LlmJudgeConfig)
def build_llm_judge(node, context: Context) -> LlmJudge:
    return LlmJudge(node)
