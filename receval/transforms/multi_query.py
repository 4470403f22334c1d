"""Multi-query: an LLM writes ``n`` rewrites of the question; the first stage searches
with each (and with the question itself, ``include_question``), and the lists are fused
per chunk with the run's fusion method (:func:`receval.transforms.run_fusion`: a fused
first stage's ``retriever.fusion``, else reciprocal rank fusion, k = 60), by
:func:`receval.retrievers.fusion.fuse`. Weighted fusion weighs every list equally (its
per-member weights are for the retriever's members). Works with every first stage.

One chat request per question (``transform.prompt``, ``{question}`` and ``{n}`` filled
in; the reply is ``{"queries": [...]}``, of which the first ``n`` non-empty ones are
used; fewer is an error the client retries), cached as :mod:`receval.transforms._llm`
says. Fusion time is the stage ``fusion`` (added to a fused first stage's own).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from receval.run.components import Context, TransformConfig, component
from receval.retrievers.fusion import fuse
from receval.transforms import TRANSFORM, Spent
from receval.transforms._llm import Asker, LlmFields, Rewritten
from receval.schema import range_

PROMPT = (
    "Write {n} different search queries that would find documents answering the question below, "
    "each in other words than the question. Reply with a JSON object only: "
    "{{\"queries\": [\"...\", ...]}}.\n\nQuestion: {question}"
)
SCHEMA = {
    "title": "queries", "type": "object", "additionalProperties": False,
    "properties": {"queries": {"type": "array", "items": {"type": "string"}}}, "required": ["queries"],
}


@dataclass
class MultiQueryConfig(LlmFields, TransformConfig):
    kind: str = "multi_query"
    n: int = field(default=3, metadata=range_(1, 100))  # rewrites per question
    include_question: bool = True  # the question's own list is fused too
    prompt: str = PROMPT  # the user message; {question}, {n} ({{ }}: a literal brace)
    PLACEHOLDERS: ClassVar[tuple[str, ...]] = ("question", "n")  # what build_messages fills in

    def problems(self) -> list[str]:
        return self.llm_problems()

    @staticmethod
    def describe(node) -> str:
        return f"multi_query:{node.model}x{node.n}"


class MultiQuery:
    """The multi-query transform: the prompt per question and the texts its answer gives."""

    def __init__(self, node, cache_dir: str | None):
        self.prompt, self.n, self.include_question = str(node.prompt), int(node.n), bool(node.include_question)
        n = self.n

        def valid(reply: dict) -> str | None:
            queries = reply.get("queries")
            if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
                return '"queries" is not a list of texts'
            if sum(bool(q.strip()) for q in queries) < n:
                return f'"queries" holds fewer than {n} non-empty texts'
            return None

        self.asker = Asker(node, SCHEMA, valid, cache_dir)

    @property
    def api_calls(self) -> int:
        return self.asker.api_calls

    def messages(self, question: str) -> list[dict]:
        return [{"role": "user", "content": self.prompt.format(question=question, n=self.n)}]

    def texts(self, question: str, reply: dict) -> list[str]:
        rewrites = [" ".join(q.split()) for q in reply["queries"] if q.strip()][: self.n]
        return ([question] if self.include_question else []) + rewrites

    def wrap(self, first, fusion: dict) -> "Rewrites":
        return Rewrites(first, self, fusion)

    def facts(self) -> dict:
        return {"kind": "multi_query", "n": self.n, "include_question": self.include_question, **self.asker.facts()}


class Rewrites(Rewritten):
    """Each question's lists (question and rewrites) searched in one batch, then fused."""

    stages = (TRANSFORM, "fusion")
    floor = None  # a chunk no list holds is -inf
    one_search_per_question = False  # several lists per question: a trajectory's calls are not kept

    def __init__(self, first, transform, fusion: dict):
        super().__init__(first, transform)
        self.floor = None
        self.fusion = {k: v for k, v in fusion.items() if k != "weights"}  # equal weights: lists, not members

    def _score(self, questions: list[str], spent: Spent) -> np.ndarray:
        lists = spent.own(TRANSFORM, lambda: self.rewrite(questions, spent))
        flat = [text for texts in lists for text in texts]
        block = spent.inner(self.first, lambda: self.first.scored(flat))
        return spent.own("fusion", lambda: self._fused(lists, block))

    def _fused(self, lists: list[list[str]], block: np.ndarray) -> np.ndarray:
        """Member j's (B, D) block: each question's j-th list (-inf for a question with fewer)."""
        width = max((len(texts) for texts in lists), default=0)
        starts = np.cumsum([0] + [len(texts) for texts in lists])
        members = []
        for j in range(width):
            member = np.full((len(lists), block.shape[1]), -np.inf)
            has = np.flatnonzero([len(texts) > j for texts in lists])
            member[has] = block[starts[has] + j]
            members.append(member)
        return fuse(members, [self.first.floor] * width, self.tie_rank, **self.fusion)


@component("transform", "multi_query", MultiQueryConfig)
def build_multi_query(node, context: Context) -> MultiQuery:
    return MultiQuery(node, context.cache_dir)
