"""Re-ranking by an LLM judge: an OpenAI-compatible chat endpoint grades each
(question, passage) pair 0-3, pointwise.

One request per pair: ``POST {base_url}/chat/completions`` with ``temperature`` 0
and ``seed``, asking for ``{"grade": 0|1|2|3}``. The shortlist is re-ordered by
grade; equal grades keep the first stage's order (grades are coarse, so the chunk-id
tie rule would throw the first stage's judgement away). Tokens come from the
answer's ``usage`` (``prompt_tokens``, ``completion_tokens``; whole numbers >= 0, else
an error: :func:`receval.clients.calls.usage_tokens`), else are estimated and the
run says so. A reply without a valid grade, or a request that fails after its retries,
leaves a pair ungraded: a run with holes in it would not be comparable, so the run
stops under the one failure rule's stricter form (:func:`receval.clients.failures.stop`:
its words and counts, the last reason; pairs not yet asked are not sent). Client
rules: :mod:`receval.rerankers._remote`. Each pair's answer is cached under the run's
``cache_dir`` (:mod:`receval.clients.calls`: endpoint, model, seed, messages); a replay
stores the live counts and latency and is marked.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from receval.clients import failures
from receval.clients.calls import Answer, batch_replay, estimate_tokens, usage_tokens
from receval.run.components import Context, component
from receval.clients.chat import parse_json_object
from receval.rerankers import RerankFields, Rescored, pairs_of, placed
from receval.rerankers._remote import ItemFailed, RemoteScorer
from receval.rerankers.http import RemoteFields, client_of
from receval.schema import SEED, THREADS, WORDS, range_

SYSTEM = (
    "You judge whether a passage answers a question. Grade 3: it answers it fully; "
    "2: it answers part of it; 1: it is on the topic but does not answer it; 0: it is unrelated. "
    'Reply with a JSON object only: {"grade": <0, 1, 2 or 3>}.'
)


@dataclass
class LlmRerankConfig(RemoteFields, RerankFields):
    kind: str = "llm"
    api_key_env: Optional[str] = "OPENAI_API_KEY"
    seed: int = field(default=0, metadata=range_(*SEED))  # sent with every request (temperature is always 0)
    passage_words: int = field(default=300, metadata=range_(*WORDS))  # words of each chunk put in a prompt
    concurrency: int = field(default=4, metadata=range_(*THREADS))  # requests in flight

    def problems(self) -> list[str]:
        return RerankFields.problems(self) + self.remote_problems()

    @staticmethod
    def describe(node) -> str:
        return f"llm:{node.model}@{node.first_size}"


class LlmReranker(RemoteScorer):
    ties_keep_order = True

    def __init__(self, client, model: str, seed: int, passage_words: int, concurrency: int):
        super().__init__(client, model)
        self.seed, self.passage_words, self.concurrency = seed, passage_words, concurrency

    def fit(self, texts: list[str], tie_rank: np.ndarray) -> None:
        self.texts = [" ".join(text.split()[: self.passage_words]) for text in texts]

    def messages(self, question: str, passage: str) -> list[dict]:
        return [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Question: {question}\n\nPassage: {passage}"},
        ]

    def grade(self, pair: tuple[str, str]) -> Answer:
        """One pair's grade (the answer's reply), input and output tokens, through the cache."""
        messages = self.messages(*pair)
        return self.client.answer(
            {"temperature": 0.0, "seed": self.seed}, messages, lambda: self.ask(messages),
            lambda reply: not isinstance(reply, bool) and reply in (0, 1, 2, 3),
        )

    def ask(self, messages: list[dict]) -> Answer:
        """One request: the grade and its tokens (the answer's usage, else estimated)."""
        data = self.client.post_json(
            {"model": self.model, "messages": messages, "temperature": 0.0, "seed": self.seed}
        )
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            content = None
        reply = parse_json_object(content) if isinstance(content, str) else None
        grade = reply.get("grade") if reply else None
        if isinstance(grade, str) and grade.strip() in ("0", "1", "2", "3"):
            grade = int(grade.strip())
        if isinstance(grade, bool) or grade not in (0, 1, 2, 3):
            why = (f'did not answer a grade 0-3 as {{"grade": n}}: '
                   f"{self.client.clip(str(content if content is not None else data), 120)!r}")
            raise ItemFailed(f"{self.client.url}: rerank.model={self.model!r} {why}", why)
        prompt, completion = usage_tokens(data, "input", self.client), usage_tokens(data, "output", self.client)
        estimated = prompt is None or completion is None
        if prompt is None:
            prompt = float(estimate_tokens([m["content"] for m in messages]).sum())
        if completion is None:
            completion = float(estimate_tokens([content]).sum())
        return Answer(int(grade), float(prompt), float(completion), estimated)

    def rescore(self, questions: list[str], idx: np.ndarray) -> Rescored:
        rows, cols, pairs = pairs_of(questions, idx, self.texts)
        began = time.perf_counter()
        answers, reasons = failures.ask_until_failure(pairs, self.grade, ItemFailed, self.concurrency)
        failures.stop(  # the one failure rule's stricter form: a pair left ungraded would not compare
            failures.Counts(
                step=f"{self.client.url}: rerank=llm, rerank.model={self.model!r}", sent=self.client.requests,
                replayed=sum(a.replayed for a in answers), asked=len(pairs), usable=len(answers),
                failed=len(reasons), last_reason=reasons[-1] if reasons else None, item="grade",
            ),
            fix="raise rerank.retries or rerank.timeout, or check the server and that the model answers "
                '{"grade": n}',
        )
        self.client.calls.note("rerank=llm")
        replay = batch_replay(answers, time.perf_counter() - began, self.concurrency)
        graded = np.asarray(
            [(a.reply, a.input_tokens, a.output_tokens, a.tokens_estimated) for a in answers], dtype=np.float64
        ).reshape(len(pairs), 4)
        count = len(questions)
        usage = {
            "requests": np.bincount(rows, minlength=count).astype(np.float64),
            "input_tokens": np.bincount(rows, weights=graded[:, 1], minlength=count),
            "output_tokens": np.bincount(rows, weights=graded[:, 2], minlength=count),
        }
        return Rescored(placed(idx, rows, cols, graded[:, 0]), usage, bool(graded[:, 3].any()), replay)


@component("rerank", "llm", LlmRerankConfig)
def build_llm_rerank(node, context: Context) -> LlmReranker:
    return LlmReranker(
        client_of(node, "/chat/completions", context.cache_dir), str(node.model), int(node.seed), int(node.passage_words),
        int(node.concurrency),
    )
