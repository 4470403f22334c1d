"""HyDE, hypothetical document embeddings (Gao et al. 2022, "Precise Zero-Shot Dense
Retrieval without Relevance Labels"): an LLM writes a passage that answers the
question, and the first stage searches with that passage (``search_with=passage``) or
with the passage after the question (``search_with=both``, the default: a lexical stage
then still sees the question's own words). Works with every first stage, since it only
changes the text searched with.

One chat request per question (``transform.prompt``, ``{question}`` filled in; the
reply is ``{"passage": "..."}``), through the one chat client and the answer cache of
:mod:`receval.transforms._llm`: temperature and seed are sent and are part of the
cache key, so a replay is the same run. The prompt is a config key, so it is saved
with the run and changing it changes the run's identity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar
from enum import StrEnum

from receval.run.components import Context, TransformConfig, component
from receval.transforms import TRANSFORM, Spent
from receval.transforms._llm import Asker, LlmFields, Rewritten

PROMPT = (
    "Write a short passage, as it could appear in a document of the collection searched, "
    "that answers the question below. Reply with a JSON object only: {{\"passage\": \"...\"}}.\n\n"
    "Question: {question}"
)
SCHEMA = {
    "title": "passage", "type": "object", "additionalProperties": False,
    "properties": {"passage": {"type": "string"}}, "required": ["passage"],
}


class SearchWith(StrEnum):
    passage = "passage"  # the written passage alone
    both = "both"  # the question, then the passage


@dataclass
class HydeConfig(LlmFields, TransformConfig):
    kind: str = "hyde"
    search_with: SearchWith = SearchWith.both
    prompt: str = PROMPT  # the user message; {question} is the question ({{ }}: a literal brace)
    PLACEHOLDERS: ClassVar[tuple[str, ...]] = ("question",)  # what build_messages fills in

    def problems(self) -> list[str]:
        return self.llm_problems()

    @staticmethod
    def describe(node) -> str:
        return f"hyde:{node.model}" + ("" if str(node.search_with) == "both" else "(passage)")


def valid_passage(reply: dict) -> str | None:
    passage = reply.get("passage")
    if not isinstance(passage, str) or not passage.strip():
        return 'no "passage" text in the reply'
    return None


class Hyde:
    """The HyDE transform: the prompt per question, and what is searched with its answer."""

    def __init__(self, node, cache_dir: str | None):
        self.prompt, self.search_with = str(node.prompt), str(node.search_with)
        self.asker = Asker(node, SCHEMA, valid_passage, cache_dir)

    @property
    def api_calls(self) -> int:
        return self.asker.api_calls

    def messages(self, question: str) -> list[dict]:
        return [{"role": "user", "content": self.prompt.format(question=question)}]

    def texts(self, question: str, reply: dict) -> list[str]:
        passage = " ".join(str(reply["passage"]).split())
        return [passage if self.search_with == "passage" else f"{question} {passage}"]

    def wrap(self, first, fusion: dict) -> "Hypothetical":
        return Hypothetical(first, self)

    def facts(self) -> dict:
        return {"kind": "hyde", "search_with": self.search_with, **self.asker.facts()}


class Hypothetical(Rewritten):
    """The first stage searched with each question's written passage."""

    def searched(self, questions: list[str], spent: Spent) -> list[str]:
        return [texts[0] for texts in spent.own(TRANSFORM, lambda: self.rewrite(questions, spent))]

    def _score(self, questions: list[str], spent: Spent):
        texts = self.searched(questions, spent)
        return spent.inner(self.first, lambda: self.first.scored(texts))

    def _rank(self, questions: list[str], depth: int, spent: Spent):
        texts = self.searched(questions, spent)
        return spent.inner(self.first, lambda: self.first.rank(texts, depth))


@component("transform", "hyde", HydeConfig)
def build_hyde(node, context: Context) -> Hyde:
    return Hyde(node, context.cache_dir)
