"""Keys never reach disk, logs or messages (issue 23 section 1, bullets 4 and 5).

- A key in a URL (``user:KEY@``, ``?api_key=``, ``token=``, a path segment...) is refused
  before Hydra writes anything, from the command line or from a config file.
- A value passed as ``${oc.env:NAME}`` is stored as that text in run.json and
  ``.hydra/``, never as what it resolves to.
- httpx and httpcore never log (a server's reason phrase can echo a key), and every
  piece of server text in a message is redacted, then cut (:func:`receval.core.secrets.clip`).
"""

from __future__ import annotations

import json
import logging
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from conftest import loopback, run_cli, run_of
from omegaconf import OmegaConf

from receval.clients import http as remote
from receval.core import secrets
from receval.core.errors import ConfigError, RecevalError
from receval.cli.preflight import check_secrets
from receval.run.argv import argv_problems
from receval.core.trust import config_problems

KEY = "sk-test-Zq8v3LkR0secret"
HEADER_SECRET = "hdr-Zq8v3LkR0-SECRET"
BODY_SECRET = "body-Zq8v3LkR0-SECRET"


# ----------------------------------------------------------------- a key in a URL, before anything is written


@pytest.mark.parametrize(
    "override",
    [
        f"retriever.url=http://h:9/search?api_key={KEY}",
        f"retriever.base_url=https://h/v1?key={KEY}",
        "retriever.url=http://h:9/search?token=abc123",
        "retriever.url=http://h:9/search?size=10&sig=abc123",
        "retriever.url=http://h:9/search#access_token=abc123",
        f"rerank.base_url=http://h/v1?x={KEY}",  # a key-like value under any name
        f"retriever.base_url= http://user:{KEY}@h/v1",  # the client strips the space: so does the check
        f"retriever.base_url='http://user:{KEY}@h/v1'",
        f"retriever.base_url=http://a/v1,http://b/v1?api_key={KEY}",  # one value of a sweep
        f"hydra.launcher.ray.init.address=ray://u:{KEY}@head:10001",
    ],
)
def test_a_key_in_a_url_on_the_command_line_is_refused_without_echoing_it(override):
    (problem,) = argv_problems([override])
    key = override.split("=", 1)[0]
    assert problem.startswith(f"{key}: a URL with ") and "nothing was written" in problem
    assert KEY not in problem and "abc123" not in problem


def test_urls_without_a_key_pass():
    assert argv_problems([
        "retriever.url=http://h:9/search", "retriever.url=http://h:9/search?size=10",
        "retriever.base_url=http://localhost:11434/v1", "dataset.path=/data/x?y", "retriever=bm25,tfidf",
    ]) == []


@pytest.mark.parametrize(
    "config, where",
    [
        ({"retriever": {"kind": "http", "url": f"http://h/s?api_key={KEY}"}}, "retriever.url"),
        ({"rerank": {"base_url": f"\thttp://u:{KEY}@h/v1"}}, "rerank.base_url"),
        ({"retriever": {"api_key_env": KEY}}, "retriever.api_key_env"),
        ({"retriever": {"headers": {"Authorization": f"Bearer {KEY}"}}}, "retriever.headers"),
        ({"retriever": {"members": [{"base_url": f"http://h/v1?token={KEY}"}]}}, "retriever.members[0].base_url"),
    ],
)
def test_a_secret_written_in_a_config_file_is_refused_before_hydra_saves_it(config, where):
    with pytest.raises(ConfigError) as caught:
        check_secrets(OmegaConf.create(config))
    (problem,) = caught.value.problems
    assert problem.startswith(where) and KEY not in problem and "nothing was written" in problem


def test_an_interpolation_is_how_a_secret_should_come_and_passes():
    assert config_problems({"retriever": {"url": "${oc.env:SEARCH_URL}", "api_key_env": "ES_KEY",
                                          "headers": {"Authorization": "ES_AUTH"}}}) == []


@pytest.mark.slow
@pytest.mark.parametrize("url", [f"http://127.0.0.1:9/search?api_key={KEY}", f"http://127.0.0.1:9/{KEY}/search"])
def test_a_config_file_with_a_key_in_a_url_writes_nothing(tmp_path, url):
    extra = tmp_path / "extra" / "experiment"
    extra.mkdir(parents=True)
    (extra / "leaky.yaml").write_text(f"# @package _global_\nretriever:\n  url: {url}\n")
    done = run_cli("--config-dir", str(tmp_path / "extra"), "retriever=http", "+experiment=leaky",
                   f"hydra.run.dir={tmp_path}/run", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("receval: error:") == 1 and "retriever.url: a URL with a key" in done.stderr
    assert KEY not in done.stdout + done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["extra"]  # no run folder, no .hydra/


# ----------------------------------------------------------------- ${oc.env:NAME} stays that text


def test_run_json_stores_interpolations_as_written(tmp_path_factory):
    run_dir = run_of(tmp_path_factory, "retriever=bm25", "dataset.name=${oc.env:RECEVAL_CACHE_DIR}")
    saved = json.loads((run_dir / "run.json").read_text())["config"]
    assert saved["dataset"]["name"] == "${oc.env:RECEVAL_CACHE_DIR}"
    assert saved["cache_dir"] == "${oc.env:RECEVAL_CACHE_DIR,.cache/receval}"


class Echo(BaseHTTPRequestHandler):
    """A search endpoint whose reason phrase echoes the Authorization header, as a careless
    server's error page might; answers no results."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.seen.append((json.loads(body), self.headers.get("Authorization")))
        payload = self.server.payload
        self.send_response(self.server.status, f"OK {self.headers.get('Authorization')}")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def echo():
    with loopback(Echo) as httpd:
        httpd.seen, httpd.status, httpd.payload = [], 200, b'{"results": []}'
        yield httpd


def files_holding(root: Path, text: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


@pytest.mark.slow
def test_secrets_sent_by_a_run_reach_no_file_and_no_log(echo, tmp_path):
    done = run_cli(
        "retriever=http", f"retriever.url={echo.root}/search", "retriever.headers={Authorization: HDR_VAR}",
        "retriever.body={token: ${oc.env:BODY_VAR}}", f"hydra.run.dir={tmp_path}/run",
        cwd=tmp_path, env={"HDR_VAR": HEADER_SECRET, "BODY_VAR": BODY_SECRET},
    )
    assert done.returncode == 0, done.stderr
    assert echo.seen and all(body["token"] == BODY_SECRET and auth == HEADER_SECRET for body, auth in echo.seen)
    for secret in (HEADER_SECRET, BODY_SECRET):
        assert secret not in done.stdout + done.stderr
        assert files_holding(tmp_path, secret) == []  # run.json, .hydra/, receval.log
    saved = json.loads((tmp_path / "run" / "run.json").read_text())["config"]["retriever"]
    assert saved["body"] == {"token": "${oc.env:BODY_VAR}"} and saved["headers"] == {"Authorization": "HDR_VAR"}
    assert (tmp_path / "run" / "receval.log").exists()


# ----------------------------------------------------------------- server text


def test_httpx_and_httpcore_never_log_what_a_server_says(echo, monkeypatch):
    monkeypatch.setenv("HDR_VAR", HEADER_SECRET)
    echo.status = 401
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    root = logging.getLogger()
    handler, level = Keep(level=logging.DEBUG), root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)  # as Hydra's job logging with hydra.verbose=true
    try:
        from receval.retrievers.http import SearchClient

        client = SearchClient(f"{echo.root}/search", {"Authorization": "HDR_VAR"}, retries=0)
        with pytest.raises(remote.StatusError) as caught:
            client.send("", {"query": "q"})
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    assert echo.seen  # the request went out and its reply came back
    assert [r.name for r in records if r.name.split(".")[0] in ("httpx", "httpcore")] == []
    assert caught.value.problem.startswith("HTTP 401 OK ***") and HEADER_SECRET not in str(caught.value)


@pytest.mark.parametrize(
    "payload, says",
    [
        ({f"hits-{HEADER_SECRET}": 1}, "malformed reply: no 'results' in it (it has ['hits-***'])"),
        ({"results": [{"id": f"id-{HEADER_SECRET}", "score": 1.0}]}, "answered id 'id-***', which is neither"),
        ({"results": [{"id": "x" * 5_000_000, "score": 1.0}]}, "answered id 'xxxx"),
        ({"results": [{"id": "renewals#ways-to-renew", "score": f"n-{HEADER_SECRET}"}]}, "the score 'n-***'"),
    ],
)
@pytest.mark.slow
def test_server_text_in_a_message_is_redacted_then_cut(echo, tmp_path_factory, monkeypatch, payload, says):
    monkeypatch.setenv("HDR_VAR", HEADER_SECRET)
    echo.payload = json.dumps(payload).encode()
    with pytest.raises(RecevalError) as caught:
        run_of(tmp_path_factory, "retriever=http", f"retriever.url={echo.root}/search",
               "retriever.headers={Authorization: HDR_VAR}")
    message = str(caught.value)
    assert says in message and HEADER_SECRET not in message and len(message) < 1000, message[:300]


def test_clip_redacts_every_variable_named_before_cutting(monkeypatch):
    monkeypatch.setenv("A_VAR", "alpha-secret-1")
    monkeypatch.setenv("B_VAR", "beta-secret-22")
    text = "x" * 95 + "alpha-secret-1 and beta-secret-22"
    assert secrets.clip(text, 100, "A_VAR", "B_VAR") == "x" * 95 + "**..."
    assert secrets.clip({"k": "beta-secret-22"}, 50, "B_VAR") == "{'k': '***'}"
    assert secrets.clip(b"line\none alpha-secret-1", 50, None, "A_VAR") == "line one ***"
