"""Remote re-rankers against servers on this machine: a rerank API (``http``) and an
OpenAI-compatible chat endpoint (``llm``)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from receval.run import components
from receval.run.components import Context
from receval.core.errors import RecevalError
from receval.rerankers import PAIRS
from receval.run.stages import Reranked
from receval.results.format import RESULTS, RUN_JSON
from conftest import Fixed, PostServer as Server, run_cli

TEXTS = ["alpha page", "beta page", "gamma page", "delta page"]
KEY = "sk-test-7f3a9c1e5b"


def rerank_answer(body: dict, usage: bool = True) -> bytes:
    """Scores each document by its length (longer first), as a rerank API would shape them."""
    results = [{"index": i, "relevance_score": float(len(d))} for i, d in enumerate(body["documents"])]
    out = {"results": sorted(results, key=lambda r: -r["relevance_score"])[: body["top_n"]]}
    if usage:
        out["usage"] = {"total_tokens": 10 * len(body["documents"])}
    return json.dumps(out).encode()


@pytest.fixture
def server():
    calls = {"n": 0}

    def answer(path, body):
        calls["n"] += 1
        if path.startswith("/busy") and calls["n"] == 1:
            return 429, {"Retry-After": "0"}, b'{"error": "slow down"}'
        if path.startswith("/broken"):
            return 200, {}, b'{"results": [{"index": "zero"'
        return 200, {"Content-Type": "application/json"}, rerank_answer(body, usage=not path.startswith("/plain"))

    running = Server(answer)
    yield running
    running.close()


def test_http_rerank_retries_a_429_and_orders_by_the_api(server, monkeypatch):
    monkeypatch.setenv("RR_KEY", KEY)
    node = {"kind": "http", "base_url": server.url + "/busy", "model": "m1", "api_key_env": "RR_KEY",
            "backoff": 0.0, "first_size": 3}
    reranker = components.build("rerank", node, Context())
    stage = Reranked(Fixed([4, 3, 2, 1]), reranker, first_size=3)
    stage.fit(["a", "bbb", "cc", "dddd"], np.arange(4))
    out = stage.rank(["q?"], 4)
    idx, scores = out.idx, out.scores
    assert idx[0].tolist() == [1, 2, 0, 3]  # by the API's scores (3, 2, 1 characters), then chunk 3
    assert scores[0, :3].tolist() == [3.0, 2.0, 1.0]
    assert reranker.api_calls == 2  # the 429, then the answer
    path, headers, body = server.seen[-1]
    assert path == "/busy/rerank"
    assert body == {"model": "m1", "query": "q?", "documents": ["a", "bbb", "cc"], "top_n": 3}
    assert headers["Authorization"] == f"Bearer {KEY}"
    assert out.counts == {PAIRS: [3.0], "requests.rerank": [1.0], "input_tokens.rerank": [30.0]}
    assert not out.tokens_estimated


def test_http_rerank_without_usage_estimates_tokens(server):
    node = {"kind": "http", "base_url": server.url + "/plain", "model": "m1", "first_size": 2}
    stage = Reranked(Fixed([4, 3, 2, 1]), components.build("rerank", node, Context()), first_size=2)
    stage.fit(["one two", "three", "x", "y"], np.arange(4))
    out = stage.rank(["what is it"], 4)
    # the question (3 tokens) with each of 2 documents, plus the documents (2 + 1 tokens)
    assert out.counts["input_tokens.rerank"].tolist() == [3 * 2 + 3]
    assert out.tokens_estimated == {"rerank"}


def test_http_rerank_malformed_answer_is_one_error(server):
    node = {"kind": "http", "base_url": server.url + "/broken", "model": "m1", "retries": 0, "first_size": 2}
    stage = Reranked(Fixed([2, 1]), components.build("rerank", node, Context()), first_size=2)
    stage.fit(["a", "b"], np.arange(2))
    with pytest.raises(RecevalError, match=r"/broken/rerank: rerank=http, rerank.model='m1': nothing usable came "
                                           r"back: 1 request sent, 0 of 1 rankings usable, 1 failed \(last: "
                                           r"answered with something that is not a JSON object"):
        out = stage.rank(["q"], 2)


@pytest.mark.slow
def test_http_rerank_run_prices_it_and_never_writes_the_key(server, tmp_path):
    where = tmp_path / "work"
    where.mkdir()
    common = ["rerank=http", "rerank.model=m1", "rerank.api_key_env=RR_KEY", "rerank.first_size=3", "cache_dir=null"]
    done = run_cli(
        *common, f"rerank.base_url={server.url}/good", "+cost.rerank.per_1k_requests=2",
        "+cost.rerank.per_1m_input_tokens=50", "hydra.run.dir=run", cwd=where, env={"RR_KEY": KEY},
    )
    assert done.returncode == 0, done.stderr
    rows = pq.read_table(where / "run" / RESULTS).to_pylist()
    for row in rows:
        n = row[PAIRS]
        assert row["requests.rerank"] == (1 if n else 0) and row["input_tokens.rerank"] == 10 * n
        assert row["cost_usd.rerank"] == pytest.approx(row["requests.rerank"] * 2 / 1e3 + 10 * n * 50 / 1e6)
        assert row["cost_usd"] == row["cost_usd.rerank"]
    info = json.loads((where / "run" / RUN_JSON).read_text())
    facts = info["stages"]["rerank"]  # the warm-up's answer read again by the timed search: this run's own
    assert facts["search_api_calls"] + facts["reused_answers"] == sum(r["requests.rerank"] for r in rows)
    assert facts["reused_answers"] == 1 and info["replayed"] == 0  # cache_dir=null: kept in memory, not asked again
    assert info["cost"]["tokens_estimated"] == []
    report = run_cli("run", "--format", "json", command="report", cwd=where)
    assert report.returncode == 0, report.stderr
    costs = json.loads(report.stdout)["runs"][0]["costs"]
    scored = [r for r in rows if r["rr"] is not None]  # the report leaves unanswerable questions out of costs too
    per_1000 = 1000 * sum(r["cost_usd"] for r in scored) / len(scored)
    assert costs["usd_per_1000"] == pytest.approx(per_1000)
    assert costs["usd_per_1000_by_stage"] == {"rerank": pytest.approx(per_1000)}
    assert costs["pairs_per_question"] == pytest.approx(sum(r[PAIRS] for r in scored) / len(scored))
    text = run_cli("run", command="report", cwd=where).stdout
    assert "$ / 1k q" in text and f"{per_1000:.2f}" in text and "pairs / q" in text
    bad = run_cli(*common, f"rerank.base_url={server.url}/broken", "rerank.retries=0", "hydra.run.dir=bad",
                  cwd=where, env={"RR_KEY": KEY})
    assert bad.returncode == 2
    err = bad.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("receval: error: ") and "not a JSON object" in err[0]
    assert not (where / "bad" / RESULTS).exists()
    for output in (done, bad):
        assert KEY not in output.stdout + output.stderr
    for path in where.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def chat_answer(body: dict, grades: dict[str, object], usage: bool) -> bytes:
    """A chat completion grading the passage by its first word (``grades``), as JSON content."""
    passage = body["messages"][-1]["content"].split("Passage: ", 1)[1]
    content = json.dumps({"grade": grades[passage.split()[0]]})
    out = {"choices": [{"message": {"role": "assistant", "content": content}}]}
    if usage:
        out["usage"] = {"prompt_tokens": 100, "completion_tokens": 5}
    return json.dumps(out).encode()


@pytest.fixture
def chat():
    grades = {"alpha": 1, "beta": 3, "gamma": 1, "delta": 0, "eps": "high"}

    def answer(path, body):
        return 200, {}, chat_answer(body, grades, usage=not path.startswith("/plain"))

    running = Server(answer)
    yield running
    running.close()


def test_llm_rerank_orders_by_grade_then_first_stage_order(chat):
    node = {"kind": "llm", "base_url": chat.url + "/v1", "model": "judge", "seed": 7, "first_size": 4,
            "api_key_env": None}
    reranker = components.build("rerank", node, Context())
    # the first stage ranks gamma, delta, beta, alpha; chunk ids run alpha..delta
    stage = Reranked(Fixed([1, 2, 4, 3]), reranker, first_size=4)
    stage.fit(TEXTS, np.arange(4))
    out = stage.rank(["which page?", "again"], 4)
    idx, scores = out.idx, out.scores
    # beta (3); gamma and alpha tie at 1, gamma first as the first stage had it (ids say alpha); delta (0)
    assert idx.tolist() == [[1, 2, 0, 3], [1, 2, 0, 3]]
    assert scores[0].tolist() == [3.0, 1.0, 1.0, 0.0]
    assert len(chat.seen) == 8 and reranker.api_calls == 8
    path, _, body = chat.seen[0]
    assert path == "/v1/chat/completions"
    assert (body["model"], body["temperature"], body["seed"]) == ("judge", 0.0, 7)
    assert out.counts["requests.rerank"].tolist() == [4, 4]
    assert out.counts["input_tokens.rerank"].tolist() == [400, 400]
    assert out.counts["output_tokens.rerank"].tolist() == [20, 20]
    assert out.tokens_estimated == set()


def test_llm_rerank_estimates_tokens_without_usage_and_refuses_a_non_grade(chat):
    node = {"kind": "llm", "base_url": chat.url + "/plain", "model": "judge", "first_size": 1, "api_key_env": None}
    stage = Reranked(Fixed([1, 0]), components.build("rerank", node, Context()), first_size=1)
    stage.fit(["alpha page", "eps page"], np.arange(2))
    out = stage.rank(["q"], 2)
    assert out.tokens_estimated == {"rerank"}
    assert out.counts["output_tokens.rerank"].tolist() == [7]  # {"grade": 1}: { " grade " : 1 }
    stage = Reranked(Fixed([0, 1]), components.build("rerank", node, Context()), first_size=1)
    stage.fit(["alpha page", "eps page"], np.arange(2))
    with pytest.raises(RecevalError, match=r"did not answer a grade 0-3"):
        out = stage.rank(["q"], 2)


def test_llm_rerank_against_a_server_answering_prose_stops_in_the_failure_rules_words():
    """The one failure rule's stricter form (receval.clients.failures.stop), as judge and synth
    word it: the counts say what was sent, the last reason is named, pairs after a failure
    are not sent; one pair left ungraded is enough to stop (a run with a hole would not compare)."""
    from chatserver import ChatServer, chat_reply

    server = ChatServer()
    server.thread.start()
    try:
        server.respond = lambda body, attempt: chat_reply("The passage seems quite relevant to me.")
        node = {"kind": "llm", "base_url": server.url, "model": "judge", "first_size": 2, "api_key_env": None,
                "concurrency": 1}
        stage = Reranked(Fixed([2, 1, 0]), components.build("rerank", node, Context()), first_size=2)
        stage.fit(["alpha", "beta", "gamma"], np.arange(3))
        with pytest.raises(RecevalError) as stopped:
            stage.rank(["q1", "q2"], 3)
        assert str(stopped.value) == (
            f"{server.url}/chat/completions: rerank=llm, rerank.model='judge': nothing usable came back: "
            "1 request sent, 0 of 4 grades usable, 1 failed (last: did not answer a grade 0-3 as {\"grade\": n}: "
            "'The passage seems quite relevant to me.'); raise rerank.retries or rerank.timeout, or check the "
            'server and that the model answers {"grade": n}'
        )
        assert len(server.requests) == 1

        # the first question's pairs graded, the second's first pair in prose: one hole stops the run
        def respond(body, attempt):
            if "Question: q2" in body["messages"][-1]["content"]:
                return chat_reply("The passage seems quite relevant to me.")
            return chat_reply('{"grade": 2}')

        server.respond = respond
        server.requests.clear()
        stage = Reranked(Fixed([2, 1, 0]), components.build("rerank", node, Context()), first_size=2)
        stage.fit(["alpha", "beta", "gamma"], np.arange(3))
        with pytest.raises(RecevalError, match=r"rerank.model='judge': a run with a question left unanswered would "
                                               r"not compare: 3 requests sent, 2 of 4 grades usable, 1 failed "
                                               r"\(last: did not answer a grade"):
            stage.rank(["q1", "q2"], 3)
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()


def embeddings_answer(body: dict) -> bytes:
    """Deterministic 8-dimensional vectors from each text's letters (an /embeddings stand-in)."""
    rows = []
    for i, text in enumerate(body["input"]):
        counts = [0.0] * 8
        for ch in text.lower():
            counts[ord(ch) % 8] += 1.0
        rows.append({"index": i, "embedding": counts})
    return json.dumps({"data": rows}).encode()


@pytest.mark.slow
def test_priced_remote_encoder_has_an_index_cost_and_per_question_money(make_config, tmp_path):
    from math import ceil

    from receval.chunking.words import chunk_sections
    from receval.measures.cost import estimate_tokens
    from receval.datasets import load_dataset
    from receval.run.pipeline import run

    embeddings = Server(lambda path, body: (200, {}, embeddings_answer(body)))
    try:
        cfg = make_config(
            "retriever=dense", "retriever.backend=http", f"retriever.base_url={embeddings.url}/v1",
            "retriever.model=m", "retriever.batch_size=16", "cache_dir=null",
            "+cost.dense.per_1k_requests=1", "+cost.dense.per_1m_input_tokens=100",
        )
        run(cfg, tmp_path)
    finally:
        embeddings.close()
    texts = [c.text for c in chunk_sections(load_dataset(cfg.dataset).sections, 120, 0, True)]
    info = json.loads((tmp_path / RUN_JSON).read_text())
    tokens = int(estimate_tokens(texts).sum())
    assert info["cost"]["index"]["stages"]["dense"] == {
        "requests": ceil(len(texts) / 16), "input_tokens": tokens, "tokens_estimated": True,
        "usd": pytest.approx(ceil(len(texts) / 16) / 1e3 + tokens * 100 / 1e6),
    }
    rows = pq.read_table(tmp_path / RESULTS).to_pylist()
    calls = info["stages"]["dense"]["search_api_calls"]
    assert calls == len(rows)  # one embeddings request per question (search_batch=1)
    assert all(row["cost_usd.dense"] == pytest.approx(calls / len(rows) / 1e3) for row in rows)


# ------------------------------------------------ counts a server reports are checked
BAD_COUNTS = {  # the JSON a server sends as a token count -> how the message shows it
    "NaN": "nan", "Infinity": "inf", "-1e12": "-1000000000000.0", '"12"': "'12'", "12.5": "12.5",
    "true": "True", "[12]": "[12]", "1e300": "1e+300", '"sk-test-7f3a9c1e5b"': "'***'",
}


@pytest.fixture
def counting():
    """Servers whose usage counts are the raw JSON named by the path: /rerank-<i>/rerank, /chat-<i>/chat/completions."""
    raws = list(BAD_COUNTS) + ["12.0", "null"]

    def answer(path, body):
        raw = raws[int(path.split("/")[1].split("-")[1])]
        if path.startswith("/rerank"):
            results = [{"index": i, "relevance_score": 1.0} for i in range(len(body["documents"]))]
            return 200, {}, f'{{"results": {json.dumps(results)}, "usage": {{"total_tokens": {raw}}}}}'.encode()
        content = json.dumps(json.dumps({"grade": 2}))
        usage = f'{{"prompt_tokens": 9, "completion_tokens": {raw}}}'
        return 200, {}, f'{{"choices": [{{"message": {{"content": {content}}}}}], "usage": {usage}}}'.encode()

    running = Server(answer)
    running.raws = raws
    yield running
    running.close()


def _rerank(kind: str, base_url: str):
    node = {"kind": kind, "base_url": base_url, "model": "m1", "first_size": 2, "api_key_env": "RR_KEY", "retries": 0}
    stage = Reranked(Fixed([2, 1]), components.build("rerank", node, Context()), first_size=2)
    stage.fit(["a", "b"], np.arange(2))
    return stage.rank(["q"], 2)


@pytest.mark.parametrize("kind, field", [("http", "usage.total_tokens"), ("llm", "usage.completion_tokens")])
@pytest.mark.parametrize("case", range(len(BAD_COUNTS)))
@pytest.mark.slow
def test_a_reported_token_count_that_is_not_a_whole_number_stops_the_run(counting, monkeypatch, kind, field, case):
    monkeypatch.setenv("RR_KEY", KEY)
    prefix = "rerank" if kind == "http" else "chat"
    path = "/rerank" if kind == "http" else "/chat/completions"
    shown = BAD_COUNTS[counting.raws[case]]
    with pytest.raises(RecevalError) as caught:
        _rerank(kind, f"{counting.url}/{prefix}-{case}")
    message = str(caught.value)
    assert message == (
        f"{counting.url}/{prefix}-{case}{path}: the answer's {field} is {shown}, not a count (a whole number "
        "from 0 to 2**53); its usage cannot be priced: check the server behind rerank.base_url"
    )
    assert KEY not in message


@pytest.mark.parametrize("kind", ["http", "llm"])
def test_a_whole_float_count_is_taken_and_a_null_one_is_estimated(counting, monkeypatch, kind):
    monkeypatch.setenv("RR_KEY", KEY)
    prefix = "rerank" if kind == "http" else "chat"
    name = "input_tokens.rerank" if kind == "http" else "output_tokens.rerank"
    whole = _rerank(kind, f"{counting.url}/{prefix}-{len(BAD_COUNTS)}")
    assert whole.counts[name].tolist() == [12.0 if kind == "http" else 24.0]  # llm: 2 pairs x 12
    assert whole.tokens_estimated == set()
    null = _rerank(kind, f"{counting.url}/{prefix}-{len(BAD_COUNTS) + 1}")
    assert null.tokens_estimated == {"rerank"}


def test_http_rerank_refuses_an_index_scored_twice(monkeypatch):
    def answer(path, body):
        return 200, {}, b'{"results": [{"index": 0, "relevance_score": 1.0}, {"index": 0, "relevance_score": 0.5}]}'

    running = Server(answer)
    try:
        with pytest.raises(RecevalError, match=r"/rerank: .*nothing usable came back: 1 request sent, 0 of 1 rankings "
                                               r"usable, 1 failed \(last: the answer scores document 0 twice: "
                                               r".*index.: 0"):
            _rerank("http", running.url)
    finally:
        running.close()
