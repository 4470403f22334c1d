"""A local chat-completions server for synth's tests, and for the README's figures.

``ChatServer`` speaks the OpenAI chat-completions protocol on 127.0.0.1 and an
ephemeral port. By default it answers every request with a good reply built from
the prompt's passages, deterministically: the question is "What about <the first 8
words of each passage>?", the answer and the one quote per passage are each
passage's first sentence (its text up to the first full stop), so a test can check
that each question is labelled with where it came from. A test swaps in
``server.respond`` to send malformed content, 429/500/400 answers or slow replies;
``server.requests`` records what arrived (headers and bodies).

Run alone, it serves until interrupted (``--same`` answers every request with one
fixed question, as a broken server did; ``--echo`` answers a query transform's prompt,
``transform=hyde`` or ``multi_query``, with the question itself, 40 + 12 tokens of usage)::

    python tests/chatserver.py --port 8089
"""

from __future__ import annotations

import argparse
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PASSAGE = re.compile(r"<passage>\n(?:Heading: (.*?)\n)?(.*?)\n</passage>", re.S)


def passages_of(body: dict) -> list[str]:
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return [text for _, text in PASSAGE.findall(user)]


def first_sentence(text: str) -> str:
    """The passage's text up to its first full stop (the first non-empty piece)."""
    return next((piece.strip() for piece in text.split(".") if piece.strip()), text.strip())


def good_content(body: dict) -> str:
    """A deterministic question made of each passage's first 8 words, quoting each one's first sentence."""
    texts = passages_of(body)
    words = " ".join(" ".join(t.split()[:8]) for t in texts)
    _, _, earlier = body["messages"][-1]["content"].partition("Questions already written")
    n_earlier = sum(line.startswith("- ") for line in earlier.splitlines())
    suffix = f" (variant {n_earlier})" if n_earlier else ""
    return json.dumps({
        "question": f"What about {words}?{suffix}",
        "answer": first_sentence(texts[0]),
        "quotes": [first_sentence(t) for t in texts],
    })


def chat_reply(content: str) -> tuple[int, dict, bytes]:
    payload = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
    }
    return 200, {}, json.dumps(payload).encode()


def error(status: int, message: str, headers: dict | None = None) -> tuple[int, dict, bytes]:
    return status, headers or {}, json.dumps({"error": {"message": message}}).encode()


class ChatServer:
    def __init__(self, port: int = 0) -> None:
        self.requests: list[dict] = []  # {"path", "headers", "body"}
        self.attempts: dict[str, int] = {}  # user message -> requests seen for it
        self.respond = None  # (body, attempt) -> (status, headers, bytes) | None for a good reply
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw)
                user = body["messages"][-1]["content"]
                with server.lock:
                    server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    server.attempts[user] = attempt = server.attempts.get(user, 0) + 1
                answer = server.respond(body, attempt) if server.respond else None
                status, headers, data = answer or chat_reply(good_content(body))
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (timeout test)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda *args: None
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def formats(self) -> list[str | None]:
        return [(r["body"].get("response_format") or {}).get("type") for r in self.requests]


def same_question(body: dict, attempt: int) -> tuple[int, dict, bytes]:
    """A broken server: one question for every passage (its quote is still the passage's)."""
    texts = passages_of(body)
    content = {"question": "What is this about?", "answer": "it", "quotes": [first_sentence(t) for t in texts]}
    return chat_reply(json.dumps(content))


def echo(body: dict, attempt: int) -> tuple[int, dict, bytes]:
    """A query transform's answer made of its question: ``{"passage": q, "queries": [q] * n}``."""
    user = body["messages"][-1]["content"]
    question = user.rpartition("Question:")[2].strip()
    wanted = re.search(r"Write (\d+) different", user)
    content = {"passage": question, "queries": [question] * (int(wanted.group(1)) if wanted else 1)}
    status, headers, raw = chat_reply(json.dumps(content))
    payload = json.loads(raw)
    payload["usage"] = {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52}
    return status, headers, json.dumps(payload).encode()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--same", action="store_true", help="answer every request with one question")
    parser.add_argument("--echo", action="store_true", help="answer query transforms with the question")
    args = parser.parse_args()
    chat = ChatServer(args.port)
    if args.same:
        chat.respond = same_question
    if args.echo:
        chat.respond = echo
    print(f"serving chat completions at {chat.url} (Ctrl-C stops)", flush=True)
    try:
        chat.httpd.serve_forever(0.1)
    except KeyboardInterrupt:
        pass

