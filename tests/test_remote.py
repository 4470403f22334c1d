"""The shared HTTP client (receval.clients.http) and redaction (receval.core.secrets.clip): retries,
counting, and that no server text carries the key into a message, wherever it is cut."""

from __future__ import annotations

import json
import pickle
from http.server import BaseHTTPRequestHandler

import pytest

from receval.clients import http as remote
from receval.core import secrets
from receval.encoders import HttpEncoder
from receval.core.errors import RecevalError
from receval.clients.chat import ChatClient, ReplyError
from conftest import loopback

KEY = "sk-test-Zq8v3LkR0secret"
ENV = "RECEVAL_TEST_API_KEY"


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        server = self.server
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        server.seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        status, reason, payload = server.answers[min(len(server.seen), len(server.answers)) - 1]
        self.send_response(status, reason)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def server():
    with loopback(Handler) as httpd:
        httpd.seen, httpd.answers = [], [(200, None, b"{}")]
        httpd.base_url = f"{httpd.root}/v1"
        yield httpd


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(ENV, KEY)
    return ENV


def leaks(text: str) -> bool:
    """Any 4+ character start of the key in ``text``."""
    return any(KEY[:n] in text for n in range(4, len(KEY) + 1))


# ----------------------------------------------------------------------- redact, then cut


def test_clip_redacts_before_cutting_a_key_that_straddles_the_cut(key):
    text = "x" * 115 + KEY + " tail"
    assert leaks(secrets.redact(text[:120], key))  # cut first: 'sk-te' survives redaction
    clipped = secrets.clip(text, 120, key)
    assert not leaks(clipped) and len(clipped) <= 120 and clipped.startswith("x" * 115)
    assert secrets.clip("a\n  b\tc", 10, key) == "a b c"  # one line


def test_embeddings_status_text_is_redacted(server, key):
    server.answers = [(500, f"Internal error for {KEY}", b"oops")]
    encoder = HttpEncoder(server.base_url, "m", key, retries=1, backoff=0, max_backoff=0)
    with pytest.raises(RecevalError) as caught:
        encoder.encode(["one"])
    message = str(caught.value)
    assert "HTTP 500 Internal error for ***" in message and "after 2 attempts" in message
    assert not leaks(message) and len(server.seen) == 2 == encoder.api_calls


def test_embeddings_error_body_straddling_the_old_cut_is_redacted(server, key):
    server.answers = [(400, "Bad Request", ("x" * 290 + KEY).encode())]
    with pytest.raises(RecevalError) as caught:
        HttpEncoder(server.base_url, "m", key, retries=0).encode(["one"])
    assert "HTTP 400" in str(caught.value) and not leaks(str(caught.value))


def test_chat_non_json_answer_straddling_the_old_cut_is_redacted(server, key):
    server.answers = [(200, None, ("y" * 110 + KEY).encode())]
    client = ChatClient(server.base_url, "m", key, max_retries=0)
    with pytest.raises(ReplyError) as caught:
        client.complete_json([{"role": "user", "content": "hi"}], {}, lambda reply: None)
    assert "not JSON" in caught.value.reason and not leaks(caught.value.reason)


# ----------------------------------------------------------------------- the client


def test_retries_429_and_5xx_then_returns_json_and_counts_requests(server, key):
    server.answers = [(429, None, b""), (503, None, b""), (200, None, b'{"ok": [1, 2]}')]
    waits = []
    client = remote.Client(server.base_url, key, retries=3, backoff=0.5, max_backoff=0.75, sleep=waits.append)
    reply = client.post_json("/rerank", {"q": "é"})
    assert reply.data == {"ok": [1, 2]} and reply.elapsed >= 0
    assert waits == [0.5, 0.75]  # 0.5 * 2**0, then 0.5 * 2**1 capped
    assert client.requests == 3 and client.retries == 2
    assert [r["path"] for r in server.seen] == ["/v1/rerank"] * 3
    assert json.loads(server.seen[0]["body"]) == {"q": "é"} and server.seen[0]["auth"] == f"Bearer {KEY}"


def test_a_4xx_is_not_retried_and_retries_are_bounded(server, key):
    server.answers = [(404, None, b"no such model")]
    client = remote.Client(server.base_url, key, retries=3, sleep=lambda s: None)
    with pytest.raises(remote.StatusError) as caught:
        client.post_json("/x", {})
    assert caught.value.status == 404 and caught.value.detail == "no such model" and client.requests == 1
    server.answers = [(502, None, b"")]
    with pytest.raises(remote.GaveUp, match="after 4 attempts; last: HTTP 502"):
        client.post_json("/x", {})
    assert client.requests == 1 + 4


def test_the_client_pickles_without_the_key_and_still_works(server, key):
    client = remote.Client(server.base_url, key)
    client.post_json("/x", {})
    blob = pickle.dumps(client)
    assert KEY.encode() not in blob
    assert pickle.loads(blob).post_json("/x", {}).data == {}
