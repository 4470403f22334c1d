"""The answer cache is data from elsewhere (issue 48): an entry is bounded (checked before
it is read), checked in shape and range, and tied to its key by a digest of its content
(:mod:`receval.clients.entries`). An edited, oversized, forged, misplaced, damaged or
unverifiable entry is never replayed silently: it is asked again, and the step says how
many and why. Each hostile case is a class, parametrized over how the entry was changed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from chatserver import ChatServer, chat_reply

from receval.run import components
from receval.clients import entries
from receval.clients.calls import FOLDER, Answer, Calls
from receval.run.components import Context
from receval.core import notices
from receval.judge.llm import LlmJudge, LlmJudgeConfig
from receval.retrievers.base import search
from receval.retrievers.bm25 import BM25
from receval.retrievers.text import Tokenizer

TEXTS = ["apples grow on trees", "bananas are yellow", "cherries are red", "dates are sweet"]
RECORDS = [{"question": q, "text": t} for q, t in zip(["which fruit", "what colour", "how sweet"], TEXTS)]
STEP = "receval judge llm:m"


@pytest.fixture
def server():
    """A loopback chat server grading every pair 2, writing the passage 'apples trees'."""
    chat = ChatServer()

    def respond(body, attempt):
        return chat_reply(json.dumps({"grade": 2, "passage": "apples trees"}))

    chat.respond = respond
    chat.thread.start()
    yield chat
    chat.httpd.shutdown()
    chat.httpd.server_close()


def judge(server, cache) -> LlmJudge:
    return LlmJudge(LlmJudgeConfig(base_url=server.url, model="m", cache_dir=str(cache), backoff=0.001, concurrency=1))


def grades(server, cache) -> list[int]:
    return [grade for grade, _ in judge(server, cache).judge(RECORDS, {})]


PROMPTS = ["which fruit", "what colour", "how sweet"]
LAYER_STEP = "rerank=llm"


def graded(reply) -> bool:
    """The step's own check of a reply (the LLM re-ranker's: a grade from 0 to 3)."""
    return isinstance(reply, dict) and not isinstance(reply.get("grade"), bool) and reply.get("grade") in (0, 1, 2, 3)


def replies(cache, asked: list) -> list:
    """Each prompt's reply through a fresh layer over ``cache``; ``asked`` counts what was asked."""
    calls = Calls("http://127.0.0.1:9/v1/chat/completions", "m", cache)

    def ask() -> Answer:
        asked.append(1)
        return Answer({"grade": 2}, 40.0, 12.0, False)

    out = [calls.answer({"seed": 0}, prompt, ask, check=graded).reply for prompt in PROMPTS]
    calls.note(LAYER_STEP)
    return out


def stored(cache: Path) -> list[Path]:
    return sorted(cache.joinpath(*FOLDER).rglob("*.json"))


def resealed(data: dict) -> dict:
    """An entry forged with care: its digest recomputed after the edit."""
    data = {k: v for k, v in data.items() if k != "digest"}
    return {**data, "digest": entries.digest(data)}


def said(capsys) -> list[str]:
    notices.say()
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("receval: warning:")]


# how an entry was changed -> the reason it is refused
EDITS = {
    "grade changed, in range": (lambda d: {**d, "reply": {"grade": 0}}, "edited"),
    "token count changed": (lambda d: {**d, "input_tokens": 1}, "edited"),
    "another endpoint named": (lambda d: {**d, "endpoint": "http://elsewhere/v1/chat/completions"}, "edited"),
    "grade out of range, resealed": (lambda d: resealed({**d, "reply": {"grade": 7}}), "misshapen"),
    "negative count, resealed": (lambda d: resealed({**d, "output_tokens": -1e12}), "misshapen"),
    "a field dropped, resealed": (lambda d: resealed({k: v for k, v in d.items() if k != "live_ms"}), "misshapen"),
    "estimated as text, resealed": (lambda d: resealed({**d, "tokens_estimated": "no"}), "misshapen"),
    "written before digests": (lambda d: {k: v for k, v in d.items() if k != "digest"}, "unverified"),
    "not an object": (lambda d: [d], "damaged"),
}


def refused(reason: str, count: int = 1, step: str = LAYER_STEP) -> list[str]:
    answers, were = ("answer", "was") if count == 1 else ("answers", "were")
    return [f"receval: warning: {step}: {count} cached {answers} {entries.REFUSED[reason]} {were} not replayed "
            "but asked again"]


@pytest.mark.parametrize("how", EDITS)
def test_an_edited_entry_is_asked_again_and_the_step_says_why(tmp_path, capsys, how):
    asked: list = []
    assert replies(tmp_path, asked) == [{"grade": 2}] * 3 and len(asked) == 3
    said(capsys)
    first = stored(tmp_path)[0]
    edit, reason = EDITS[how]
    first.write_text(json.dumps(edit(json.loads(first.read_text()))))
    assert replies(tmp_path, asked) == [{"grade": 2}] * 3  # the server's grade, never the edited one
    assert len(asked) == 4  # the edited entry asked again, the others replayed
    assert said(capsys) == refused(reason)
    assert "digest" in json.loads(first.read_text())  # rewritten whole, with its digest
    assert replies(tmp_path, asked) == [{"grade": 2}] * 3 and len(asked) == 4 and said(capsys) == []


def test_an_edited_grade_is_not_replayed_as_the_server_s_answer(server, tmp_path, capsys):
    """The issue's case, through the LLM judge and its server: a grade edited in range."""
    assert grades(server, tmp_path) == [2, 2, 2] and len(server.requests) == 3
    said(capsys)
    first = stored(tmp_path)[0]
    first.write_text(json.dumps({**json.loads(first.read_text()), "reply": {"grade": 0}}))
    assert grades(server, tmp_path) == [2, 2, 2] and len(server.requests) == 4
    assert said(capsys) == refused("edited", step=STEP)


def test_an_entry_filed_under_another_key_is_another_request_s_answer(tmp_path, capsys):
    """Copied to another prompt's file with its key rewritten and resealed: its prompt hash
    does not make that key."""
    asked: list = []
    replies(tmp_path, asked)
    said(capsys)
    one, other = stored(tmp_path)[:2]
    other.write_text(json.dumps(resealed({**json.loads(one.read_text()), "key": other.stem})))
    replies(tmp_path, asked)
    assert len(asked) == 4 and said(capsys) == refused("edited")


@pytest.mark.parametrize("size", [entries.ENTRY_BYTES + 1, 200 << 20])
def test_an_oversized_entry_is_refused_before_a_byte_is_read(tmp_path, capsys, monkeypatch, size):
    asked: list = []
    replies(tmp_path, asked)
    said(capsys)
    big = stored(tmp_path)[0]
    with open(big, "r+b") as handle:
        handle.truncate(size)  # sparse: what an edit to 200 MB looks like to stat, without the disk
    opened = []
    monkeypatch.setattr(entries, "open", lambda path, *a: opened.append(Path(path)) or open(path, *a), raising=False)
    assert replies(tmp_path, asked) == [{"grade": 2}] * 3 and len(asked) == 4
    assert big not in opened and len(opened) == 2  # the two others read, the big one measured only
    assert said(capsys) == refused("oversized")
    assert big.stat().st_size < entries.ENTRY_BYTES  # rewritten by the answer asked again


@pytest.mark.parametrize("kind", ["symlink", "deep JSON", "not UTF-8"])
def test_a_damaged_entry_is_asked_again(tmp_path, capsys, kind):
    asked: list = []
    replies(tmp_path, asked)
    said(capsys)
    entry = stored(tmp_path)[0]
    outside = tmp_path / "outside.json"
    outside.write_text(entry.read_text())
    entry.unlink()
    if kind == "symlink":  # a link out of the cache, to an entry receval did write
        entry.symlink_to(outside)
    else:
        entry.write_bytes(b"[" * 100_000 + b"]" * 100_000 if kind == "deep JSON" else b"\xff\xfe{")
    assert replies(tmp_path, asked) == [{"grade": 2}] * 3 and len(asked) == 4
    assert said(capsys) == refused("damaged")


def test_an_edited_transform_answer_is_not_searched_with(server, tmp_path, capsys):
    """The answer text of a query transform (hyde's passage), edited: the search uses the
    server's passage again, and the run's warning says so."""

    def searched():
        stage = components.build(
            "transform", {"kind": "hyde", "base_url": server.url, "model": "m", "concurrency": 1, "backoff": 0.001},
            Context(cache_dir=str(tmp_path)),
        ).wrap(BM25(Tokenizer()), {"method": "rrf", "k": 60.0, "size": 100})
        stage.fit(TEXTS, np.arange(len(TEXTS)))
        return search(stage, ["which fruit", "what colour"], 4, np.arange(4), 1, None).chunk_idx.tolist()

    live = searched()
    said(capsys)
    for entry in stored(tmp_path):
        data = json.loads(entry.read_text())
        entry.write_text(json.dumps({**data, "reply": {"passage": "dates sweet"}}))
    assert searched() == live and len(server.requests) == 4
    assert said(capsys) == refused("edited", 2, "transform=hyde")


def test_an_answer_over_the_bound_is_not_cached(tmp_path, capsys):
    calls = Calls("http://127.0.0.1:9/v1/chat/completions", "m", tmp_path)
    big = Answer({"passage": "x" * entries.ENTRY_BYTES})
    assert calls.answer({}, "q", lambda: big).reply == big.reply
    assert stored(tmp_path) == [] and not calls.answer({}, "q", lambda: big).replayed
    calls.note("transform=hyde")
    assert said(capsys) == ["receval: warning: transform=hyde: 2 answers over the cache's entry bound of 1 MiB "
                            "were not cached"]


def test_an_entry_is_tied_to_its_key_by_a_digest_of_its_content(tmp_path):
    calls = Calls("http://127.0.0.1:9/v1/chat/completions", "m", tmp_path)
    calls.answer({"seed": 1}, "q", lambda: Answer({"grade": 2}, 40.0, 12.0, False))
    (path,) = stored(tmp_path)
    data = json.loads(path.read_text())
    assert data["key"] == path.stem and data["prompt"] == entries.digest("q")
    assert data["digest"] == entries.digest({k: v for k, v in data.items() if k != "digest"})
    assert os.stat(path).st_size <= entries.ENTRY_BYTES
