"""Does a retrieved passage support a nugget? ``judge=llm`` on a pool's ``support`` lines.

``receval pool RUNS --nuggets`` writes one line per (question, nugget, retrieved unit):
the question, the unit's text and the nugget (:mod:`receval.analysis.nugget_pool`).
``receval judge`` asks the chat model, for each, the AutoNuggetizer's question (Pradeep et
al. 2024, the TREC 2024 RAG track's nugget assignment; the text of :data:`SYSTEM` is
receval's own): does the passage support the fact fully (``support``), partly
(``partial_support``) or not (``not_support``)? The reply is ``{"support": label}``.
Samples, seeds, the cache and the money are the grading judge's
(:class:`receval.judge.llm.LlmJudge`: every answer through the cached-call layer, keyed by
the endpoint, the model, the temperature, the seed, the reply's schema and the messages);
the samples' majority decides, a tie going to the weaker label. The labels JSONL gets
``{"question_id", "id", "nugget", "support", "judge", ...provenance}`` lines, which
``report --labels`` applies (:mod:`receval.results.support`).
"""

from __future__ import annotations

import hashlib
from collections import Counter

LABELS = ("not_support", "partial_support", "support")  # weakest first: ties go down
SYSTEM = (
    "You decide whether a passage supports a fact (a nugget) that an answer to a question should contain.\n"
    "support: the passage states the fact, fully.\n"
    "partial_support: the passage states part of the fact, or implies it without stating it.\n"
    "not_support: the passage does not state the fact.\n"
    'Judge only what the passage says, then reply with a JSON object only: {"support": "<label>"}.'
)
SCHEMA = {
    "title": "support", "type": "object", "additionalProperties": False,
    "properties": {"support": {"type": "string", "enum": list(LABELS)}}, "required": ["support"],
}
PROMPT_SHA256 = hashlib.sha256(SYSTEM.encode()).hexdigest()


def validate(reply: dict) -> str | None:
    label = reply.get("support")
    if isinstance(label, str) and label.strip().lower() in LABELS:
        reply["support"] = label.strip().lower()
        return None
    return f'no support label as {{"support": "support|partial_support|not_support"}}: {reply!r}'[:200]


def vote(labels: list[str]) -> str:
    """The most common label; a tie goes to the weaker one."""
    counts = Counter(labels)
    top = max(counts.values())
    return min((label for label, n in counts.items() if n == top), key=LABELS.index)


def messages(question: str, nugget: str, passage: str, words: int) -> list[dict]:
    passage = " ".join(passage.split()[:words])
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Question: {question}\n\nFact: {nugget}\n\nPassage: {passage}"},
    ]


def judge_support(judge, records: list[dict]) -> list[tuple[str | None, dict]]:
    """Each support line's label and provenance (None: a sample failed; a rerun asks
    again), asked through ``judge`` (an :class:`receval.judge.llm.LlmJudge`)."""
    words = int(judge.node.passage_words)
    prompts = [messages(r.get("question") or "", r.get("nugget_text") or "", r.get("text") or "", words)
               for r in records]
    samples = int(judge.node.samples)
    out = []
    for replies in judge.ask(prompts, SCHEMA, validate):
        labels = [reply["support"] for reply in replies]
        if len(labels) < samples:
            judge.usage["failed_pairs"] += 1
            out.append((None, {}))
        else:
            out.append((vote(labels), {**judge.provenance(), "prompt_sha256": PROMPT_SHA256, "votes": labels}))
    return out
