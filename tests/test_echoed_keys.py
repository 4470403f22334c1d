"""A server that echoes its request leaves no key on disk (issue 48).

An answer is cleaned of the request's own credential values (the key, a header's value,
a body's token) and of every key-like word the prompt did not hold before it is cached,
returned or stored (:func:`receval.core.secrets.hide_keys`, applied by the cached-call
layer and by the retrievers to their search calls' queries), and the step says how many
values it hid, never which. Each case is a class: the own credential whatever it looks
like, a foreign key-like word, a key as a mapping's key, an answer nested deep."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import loopback, run_cli

from receval.clients.calls import Answer, Calls
from receval.clients.chat import ChatClient, ReplyError
from receval.core import notices
from receval.core.secrets import HIDDEN, credential_values, hide_keys, key_tokens

CHAT_KEY = "open-sesame-credential"  # the request's own key: not key-like, found because it is the request's
SEARCH_AUTH = "Basic dXNlcjpwYXNz"  # a header's value: short words, found because it is the request's
FOREIGN = "ghp_" + "Zq8v3LkR0abcdefGHIJKLmnopqrstuvwx12"  # a key the server adds: found because it looks like one
PASSAGE_ID = "Zq8v3LkR0abcdefGHIJKLmnop"  # key-like, but the prompt held it: data, kept


def test_hide_keys_replaces_own_credentials_and_key_like_words_everywhere_and_counts_them():
    answer = {"text": f"echo: Bearer {CHAT_KEY}; also {FOREIGN}", FOREIGN: [f"x{CHAT_KEY}x", 3, None, 1.5],
              "nested": [[{"id": PASSAGE_ID}]], "model": "claude-3-5-sonnet-20241022", "sha": "ab12" * 10}
    cleaned, count = hide_keys(answer, [CHAT_KEY, "ab"], key_tokens([{"content": f"passage {PASSAGE_ID}"}]))
    assert count == 4  # two own credentials, the foreign key twice (a value and a mapping's key); "ab" is too short
    assert cleaned == {"text": f"echo: Bearer {HIDDEN}; also {HIDDEN}", HIDDEN: [f"x{HIDDEN}x", 3, None, 1.5],
                       "nested": [[{"id": PASSAGE_ID}]], "model": "claude-3-5-sonnet-20241022", "sha": "ab12" * 10}
    assert hide_keys("plain words, ASIA and xoxo included", [], frozenset()) == ("plain words, ASIA and xoxo included", 0)


def test_an_answer_nested_deeper_than_the_stack_is_walked():
    deep = inner = []
    for _ in range(20_000):
        inner.append([])
        inner = inner[0]
    inner.append(FOREIGN)
    cleaned, count = hide_keys(deep, [], frozenset())
    for _ in range(20_000):
        cleaned = cleaned[0]
    assert count == 1 and cleaned == [HIDDEN]


def test_credential_values_are_the_settings_the_one_rule_calls_secrets():
    settings = {"token": "abc", "index": "docs", "nested": {"api_key": "k1"}, "x": [FOREIGN, 3], "size": 10}
    assert set(credential_values(settings)) == {"abc", "k1", FOREIGN}
    assert credential_values({"index": "docs", "size": 10}) == ()


def files_holding(root: Path, *texts: str) -> list[str]:
    """Every file under ``root`` whose bytes hold one of ``texts``, and every string a
    Parquet file holds once decoded (compression could hide it from the byte search)."""
    found = []
    for path in (p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if path.suffix == ".parquet":
            data += json.dumps(pq.read_table(path).to_pylist(), default=str).encode()
        found += [f"{path}: {text}" for text in texts if text.encode() in data]
    return found


def test_the_cached_call_layer_caches_and_returns_no_credential(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CHAT_KEY", CHAT_KEY)
    calls = Calls("http://127.0.0.1:9/v1/chat/completions", "m", tmp_path, ("CHAT_KEY",))
    prompt = [{"role": "user", "content": f"Passage {PASSAGE_ID}"}]
    ask = lambda: Answer({"passage": f"Authorization: Bearer {CHAT_KEY}; {FOREIGN}; {PASSAGE_ID}"})  # noqa: E731
    live = calls.answer({}, prompt, ask)
    replayed = calls.answer({}, prompt, ask)  # read again: this object's own answer (reused), from the cache
    assert live.reply == replayed.reply == {"passage": f"Authorization: Bearer {HIDDEN}; {HIDDEN}; {PASSAGE_ID}"}
    assert replayed.reused and files_holding(tmp_path, CHAT_KEY, FOREIGN) == []
    other_run = Calls("http://127.0.0.1:9/v1/chat/completions", "m", tmp_path, ("CHAT_KEY",)).answer({}, prompt, ask)
    assert other_run.replayed and other_run.reply == live.reply  # another run reads the cleaned entry
    calls.note("transform=hyde")
    calls.note("transform=hyde")  # nothing new since
    notices.say()
    notices.say()  # said once
    err = capsys.readouterr().err
    assert err.count("receval: warning:") == 1
    assert "transform=hyde: 2 key-like values" in err and CHAT_KEY not in err and FOREIGN not in err


class EchoChat(BaseHTTPRequestHandler):
    """A chat-completions server that answers with its request's Authorization header."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        content = json.dumps({"grade": f"you sent {self.headers.get('Authorization')}"})
        payload = json.dumps({"choices": [{"message": {"content": content}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def test_a_rejected_echo_is_no_key_in_the_reason_a_summary_stores(tmp_path, monkeypatch):
    monkeypatch.setenv("CHAT_KEY", CHAT_KEY)
    with loopback(EchoChat) as httpd:
        client = ChatClient(f"{httpd.root}/v1", "m", "CHAT_KEY", max_retries=0, option="judge", cache_dir=str(tmp_path))
        with pytest.raises(ReplyError) as caught:
            client.answer([{"role": "user", "content": "q"}], {}, lambda reply: f"no grade: {reply!r}")
    assert "reply rejected" in caught.value.reason and CHAT_KEY not in caught.value.reason


class EchoBoth(BaseHTTPRequestHandler):
    """A chat server (``/v1/chat/completions``: hyde's passage) and a search service
    (``/search``: one search call per question) that both echo the Authorization header,
    and add a key of their own."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        said = f"Authorization: {self.headers.get('Authorization')} and {FOREIGN}"
        if self.path.endswith("/chat/completions"):
            content = json.dumps({"passage": f"A passage. {said}"})
            payload = {"choices": [{"message": {"content": content}}]}
        else:
            payload = {"calls": [{"query": said, "hits": []}]}
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.mark.slow
def test_a_server_echoing_the_authorization_header_leaves_the_key_in_no_file(tmp_path):
    """The whole command: hyde's answers (cached) and the HTTP retriever's search calls
    (stored in results.parquet) hold neither credential, nor the key the server added, in
    any file under the cache or the run folder (.hydra/ and the log included)."""
    with loopback(EchoBoth) as httpd:
        done = run_cli(
            "retriever=http", f"retriever.url={httpd.root}/search",
            "retriever.headers={Authorization: SEARCH_AUTH}", "transform=hyde", f"transform.base_url={httpd.root}/v1",
            "transform.model=m", "transform.api_key_env=CHAT_KEY", f"cache_dir={tmp_path}/cache",
            f"hydra.run.dir={tmp_path}/run", cwd=tmp_path, env={"CHAT_KEY": CHAT_KEY, "SEARCH_AUTH": SEARCH_AUTH},
        )
    assert done.returncode == 0, done.stderr
    assert files_holding(tmp_path, CHAT_KEY, SEARCH_AUTH, "dXNlcjpwYXNz", FOREIGN) == []
    assert list((tmp_path / "cache" / "calls").rglob("*.json")) and (tmp_path / "run" / ".hydra").is_dir()
    for secret in (CHAT_KEY, SEARCH_AUTH, FOREIGN):
        assert secret not in done.stdout + done.stderr
    warned = [line for line in done.stderr.splitlines() if line.startswith("receval: warning:")]
    assert len(warned) == 2  # one line per stage, for 49 questions and the warm-up's: the key and the added one each
    assert "transform=hyde: 100 key-like values" in warned[0] and "search calls: 100 key-like values" in warned[1]
    rows = pq.read_table(tmp_path / "run" / "results.parquet").to_pylist()
    assert {call["query"] for row in rows for call in row["calls"]} == {f"Authorization: {HIDDEN} and {HIDDEN}"}


def test_server_text_in_a_message_hides_key_like_words_too(monkeypatch):
    from receval.core.secrets import clip

    monkeypatch.setenv("CHAT_KEY", CHAT_KEY)
    shown = clip(f"HTTP 500: bad token {FOREIGN} for {CHAT_KEY}", 200, "CHAT_KEY")
    assert shown == f"HTTP 500: bad token {HIDDEN} for ***"


def test_a_summary_keeps_resolved_settings_without_what_the_rule_calls_secret():
    from receval.core.secrets import without_keys

    resolved = {"kind": "llm", "base_url": "http://h/v1/sk-Zq8v3LkR0abcdefGHIJ/chat", "model": "qwen2.5:7b",
                "api_key_env": "OPENAI_API_KEY", "body": {"token": "from-env-value", FOREIGN: 1}, "seed": 3}
    assert without_keys(resolved) == {"kind": "llm", "base_url": "<hidden>", "model": "qwen2.5:7b",
                                      "api_key_env": "OPENAI_API_KEY", "body": {"token": "<hidden>", "hidden": 1},
                                      "seed": 3}
