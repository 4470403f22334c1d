"""The smaller breaks of issue 48's hostile trial, each pinned as the class it stands for:

- words written with combining marks (Thai, Devanagari, Arabic, a decomposed accent)
  are words, not cut at every mark, wherever receval finds words;
- a value nested 100,000 deep (an agent's query, a server's reply, a pool line) is one
  clear error, never a RecursionError;
- a label never reads ``<= None``: a chunker without a bound says what null means;
- an export that cannot write a score names the run and the question, and writes nothing;
- a pool line's question and text are strings, or the line is refused before any request.
"""

from __future__ import annotations

import json
import unicodedata
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from conftest import loopback
from omegaconf import OmegaConf

from receval.analysis.show import snippet
from receval.chunking.paragraphs import ParagraphsConfig
from receval.chunking.recursive import RecursiveConfig
from receval.chunking.sentences import SentencesConfig
from receval.clients import http
from receval.clients.calls import estimate_tokens
from receval.core.errors import RecevalError
from receval.core.marks import words
from receval.core.secrets import brief, clip
from receval.datasets.folder import slugify
from receval.judge.job import read_pool
from receval.results.external import export
from receval.results.record import Run
from receval.retrievers.ranked import Ids
from receval.retrievers.text import Tokenizer
from receval.retrievers.trajectory import rank_answers
from receval.synth.dedup import words as question_words

# a word of each script written with combining marks, and its marks' count
MARKED = {
    "Thai": ("กันยายน", 1),  # a vowel sign above
    "Thai tones": ("เชียงใหม่", 2),
    "Devanagari": ("हिन्दी", 3),  # vowel signs and a virama
    "Arabic": ("كَتَبَ", 3),  # harakat
    "Hebrew": ("שָׁלוֹם", 3),  # points
    "decomposed accent": (unicodedata.normalize("NFD", "café"), 1),
    "Brahmi (astral)": ("\U00011013\U00011038", 1),
}


@pytest.mark.parametrize("script", MARKED)
def test_a_word_written_with_combining_marks_is_one_word_everywhere(script):
    word, marks = MARKED[script]
    assert sum(unicodedata.category(c).startswith("M") for c in word) == marks
    text = f"{word} and {word}."
    assert words(text) == [word, "and", word]
    assert Tokenizer().many([text]) == [[word.lower(), "and", word.lower()]]
    assert question_words(text) == {unicodedata.normalize("NFKC", word).casefold(), "and"}
    assert estimate_tokens([text]).tolist() == [4.0]  # three words and the full stop
    assert slugify(f"{word} and {word}") == unicodedata.normalize("NFC", f"{word}-and-{word}").lower()
    assert word in snippet(" ".join(["filler"] * 40 + [word] + ["filler"] * 40), word, 5)


def test_a_message_cut_is_never_between_a_letter_and_its_marks():
    shown = clip("x" * 6 + "กันยายน", 10)
    assert shown == "x" * 6 + "ก..."  # not "xxxxxxกั": the vowel sign stays with its letter or goes with it
    assert not unicodedata.combining(shown[-4])


class Chunk:
    def __init__(self, section_id, ordinal):
        self.section_id, self.ordinal, self.id = section_id, ordinal, f"{section_id}@{ordinal}"


def deep(levels: int = 100_000):
    out = inner = []
    for _ in range(levels):
        inner.append([])
        inner = inner[0]
    return out


def test_an_agent_s_query_nested_100000_deep_is_one_clear_error():
    ids, nested = Ids([Chunk("a", 0), Chunk("b", 0)]), deep()
    with pytest.raises(RecevalError) as caught:
        rank_answers([{"calls": [{"query": nested, "hits": []}]}], ids, np.arange(2), 2, "agent search", ["q"])
    shown = "[" * 7 + "..." + "]" * 7  # six levels shown, the rest elided
    assert brief(nested) == shown and len(clip(nested, 40)) <= 40
    assert f"call 1's query is {shown}, not a string" in str(caught.value)
    with pytest.raises(RecevalError) as caught:
        rank_answers([nested], ids, np.arange(2), 2, "agent search", ["q"])
    assert f"answered question 'q' with {shown}" in str(caught.value)


class Deep(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b"[" * 100_000 + b"]" * 100_000
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_server_reply_nested_100000_deep_is_a_bad_reply():
    with loopback(Deep) as httpd:
        client = http.Client(f"{httpd.root}/v1", retries=0)
        with pytest.raises(http.BadReply, match="malformed JSON"):
            client.post_json("/search", {"query": "q"})


@pytest.mark.parametrize("schema", [ParagraphsConfig, RecursiveConfig, SentencesConfig])
def test_a_chunker_without_a_bound_says_what_null_means(schema):
    kind = schema.kind
    unbounded = schema.describe(OmegaConf.structured(schema(max_words=None)))
    assert "None" not in unbounded and unbounded.startswith(f"{kind}, ")
    assert unbounded.split(", ")[1] in ("one chunk per section", "whole sections")
    assert schema.describe(OmegaConf.structured(schema(max_words=80))).startswith(f"{kind} <= 80 words")


@pytest.mark.parametrize("score", [float("nan"), float("inf")])
def test_an_export_with_a_score_it_cannot_write_names_the_run_and_the_question(tmp_path, score):
    table = pa.table({"question_id": ["q1", "q2"], "retrieved": [["a", "b"], ["c"]], "scores": [[2.0, 1.0], [score]],
                      "relevant": [["a"], ["c"]], "grades": [[1], [1]]})
    run = Run(tmp_path / "runs" / "7", table, {"config_hash": "ab" * 32})
    with pytest.raises(RecevalError) as caught:
        export(run, tmp_path / "run.txt", tmp_path / "qrels.txt")
    (problem,) = caught.value.problems
    assert problem.startswith(f"{tmp_path / 'runs' / '7'}: question 'q2': score {score!r} is not a finite")
    assert not (tmp_path / "run.txt").exists() and not (tmp_path / "qrels.txt").exists()


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ({"question_id": "q", "id": "a", "question": "what?", "text": 42}, "text is 42"),
        ({"question_id": "q", "id": "a", "question": ["what?", "why?"], "text": "t"}, "question is ['what?', 'why?']"),
        ({"question_id": "q", "id": "a", "question": {"x": 1}, "text": "t", "role": "reference"}, "question is {'x': 1}"),
        ({"question_id": "q", "id": "a", "question": "what?", "text": True}, "text is True"),
    ],
)
def test_a_pool_line_whose_question_or_text_is_not_text_is_refused(tmp_path, line, field):
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"question_id": "q0", "id": "b", "question": "ok?", "text": "fine"}) + "\n"
                    + json.dumps(line) + "\n")
    with pytest.raises(RecevalError) as caught:
        read_pool(pool)
    assert str(caught.value) == (f"{pool}:2: {field}, not text; a pool line's question and text are strings, "
                                 "as receval pool writes")


def test_a_pool_line_nested_100000_deep_is_not_a_pool_line(tmp_path):
    pool = tmp_path / "pool.jsonl"
    pool.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(RecevalError, match=rf"{pool}:1: not a pool line"):
        read_pool(pool)
    assert Path(pool).exists()
