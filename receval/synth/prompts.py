"""What synth sends: the reply schema, the prompt templates per style, and the check
of a reply. ``prompt_hash`` changes exactly when the wording sent to the model does."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from receval.synth.dedup import words

if TYPE_CHECKING:
    from receval.synth.units import Unit


QA_SCHEMA = {
    "title": "question_answer",
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": "the question a user would ask"},
        "answer": {"type": "string", "description": "a short answer taken from the passage(s)"},
        "quotes": {
            "type": "array",
            "items": {"type": "string"},
            "description": "the words of the passage that answer the question, copied exactly "
            "(one short quote per passage used)",
        },
    },
    "required": ["question", "answer", "quotes"],
    "additionalProperties": False,
}

# ------------------------------------------------------------------------ prompts

SYSTEM = (
    "You write test questions for evaluating a search engine over a collection of pages. "
    "Each question must be one that a real user could type, that the given text answers, "
    "and that makes sense on its own to someone who has not seen the text (never say "
    '"the passage", "the text" or "according to"). '
    'Reply with one JSON object with exactly three keys, and nothing else: "question", '
    '"answer" (a short answer taken from the text) and "quotes" (a list of the shortest '
    "passages of the text that answer the question, each copied word for word from the text, "
    "one sentence or less: they are checked against the text)."
)

INSTRUCTIONS = {
    "direct": (
        "Write one question that this passage answers. Make it specific to this passage: "
        "it should not be answerable from general knowledge."
    ),
    "paraphrase": (
        "Write one question that this passage answers, worded the way a user who has never "
        "seen the passage would ask it. Do not reuse the passage's distinctive words or "
        "phrases: use synonyms and everyday language, so the question cannot be matched to "
        "the passage by shared words alone."
    ),
    "multi": (
        "Write one question whose answer needs information from both passages: neither "
        "passage alone should be enough to answer it. Ask it naturally, as one question. "
        "Give one quote from each passage."
    ),
}

PASSAGE = "<passage>\n{heading}{text}\n</passage>"
HEADING = "Heading: "  # the line a passage's heading is shown on (quotes of it pass: receval.synth.quotes)
EARLIER = "Questions already written about this text (ask something different):\n{questions}"


def prompt_hash(style: str) -> str:
    """First 12 hex of sha256 over every template the style sends."""
    blob = json.dumps([SYSTEM, INSTRUCTIONS[style], PASSAGE, EARLIER, QA_SCHEMA], sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]


def _cut(text: str, max_words: int) -> str:
    words = text.split()
    return text if len(words) <= max_words else " ".join(words[:max_words]) + " ..."


def build_messages(style: str, units: list["Unit"], earlier: list[str], max_words: int = 800) -> list[dict]:
    """The chat messages for one question about ``units`` (two for ``multi``)."""
    passages = "\n\n".join(
        PASSAGE.format(heading=f"{HEADING}{u.heading}\n" if u.heading else "", text=_cut(u.text, max_words))
        for u in units
    )
    parts = [passages, INSTRUCTIONS[style]]
    if earlier:
        parts.append(EARLIER.format(questions="\n".join(f"- {q}" for q in earlier)))
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


def validate_reply(reply: dict) -> str | None:
    """None when ``question`` and ``answer`` are non-empty strings, the question has a
    word, and ``quotes`` lists non-empty strings; else the problem. (Whether the quotes
    are in the passage is checked against the unit, :func:`receval.synth.quotes.locate_quotes`.)"""
    for key in ("question", "answer"):
        value = reply.get(key)
        if not isinstance(value, str) or not value.strip():
            return f"{key!r} is missing or not a non-empty string"
    if not has_words(reply["question"]):
        return f"{EMPTY}: {reply['question'][:40]!r}"
    quotes = reply.get("quotes")
    if not isinstance(quotes, list) or not quotes or not all(isinstance(q, str) and q.split() for q in quotes):
        return "'quotes' is missing or not a list of non-empty strings copied from the passage"
    return None


EMPTY = "the question has no words"


def has_words(question: str) -> bool:
    """A question with no word ("?", "...", see :func:`receval.synth.dedup.words`) is empty."""
    return bool(words(question))
