"""LLM query transforms (hyde, multi_query) against the loopback chat server: what is
searched, what each question costs, and a replay that sends nothing and stores the same
results."""

from __future__ import annotations

import json
import re

import numpy as np
import pyarrow.parquet as pq
import pytest

from chatserver import ChatServer, chat_reply
from conftest import results_without_timings
from receval.run import stages
from receval.transforms import Spent
from receval.run.components import Context
from receval.run.config import check
from receval.core.errors import ConfigError, RecevalError
from receval.run.pipeline import run
from receval.results.format import RESULTS, RUN_JSON
from receval.retrievers.bm25 import BM25
from receval.retrievers.fusion import fuse
from receval.retrievers.text import Tokenizer

QUESTION = re.compile(r"Question: (.*)$", re.S)


def question_of(body: dict) -> str:
    return QUESTION.search(body["messages"][-1]["content"]).group(1).strip()


def with_usage(content: dict, prompt: int = 40, completion: int = 12):
    status, headers, raw = chat_reply(json.dumps(content))
    payload = json.loads(raw)
    payload["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    return status, headers, json.dumps(payload).encode()


def hyde_reply(body: dict, attempt: int):
    """A passage made of the question's words and a fixed tail (deterministic)."""
    return with_usage({"passage": f"{question_of(body)} install pip version cache"})


def rewrites_reply(body: dict, attempt: int):
    words = question_of(body).split()
    return with_usage({"queries": [" ".join(words[::-1]), " ".join(words[:2]) or "cache"]}, 50, 20)


@pytest.fixture
def server():
    chat = ChatServer()
    chat.thread.start()
    yield chat
    chat.httpd.shutdown()
    chat.httpd.server_close()


def llm(server, kind: str, *more: str) -> list[str]:
    return [f"transform={kind}", f"transform.base_url={server.url}", "transform.model=tiny-test",
            "transform.backoff=0.001", "transform.concurrency=2", *more]


@pytest.mark.slow
def test_hyde_prices_each_question_and_a_replay_sends_nothing(server, make_config, tmp_path, monkeypatch):
    monkeypatch.setenv("RECEVAL_CACHE_DIR", str(tmp_path / "cache"))
    server.respond = hyde_reply
    overrides = llm(server, "hyde", "+cost.transform.per_1k_requests=2", "+cost.transform.per_1m_input_tokens=10")
    first = run(make_config(*overrides), tmp_path / "first")
    n = first.n_questions
    sent = len(server.requests)
    assert sent == n + 1  # every question once, and the warm-up's question once more
    info = json.loads((tmp_path / "first" / RUN_JSON).read_text())
    assert info["stages"]["transform"] == {"index_api_calls": 0, "search_api_calls": n, "warmup_api_calls": 1}
    assert info["transform"]["asked"] == n and info["transform"]["from_cache"] == 0
    rows = pq.read_table(tmp_path / "first" / RESULTS).to_pylist()
    assert {row["requests.transform"] for row in rows} == {1.0}
    assert {row["input_tokens.transform"] for row in rows} == {40.0}  # the server's usage, not an estimate
    assert {row["output_tokens.transform"] for row in rows} == {12.0}
    # $2 per 1,000 requests + 40 tokens at $10 per million = 0.002 + 0.0004 per question
    assert [row["cost_usd"] for row in rows] == pytest.approx([0.0024] * n)
    assert all(row["latency_ms.transform"] > 0 for row in rows)
    sent_bodies = [r["body"] for r in server.requests]
    assert {b["model"] for b in sent_bodies} == {"tiny-test"} and {b["seed"] for b in sent_bodies} == {0}

    replay = run(make_config(*overrides), tmp_path / "replay")
    assert len(server.requests) == sent  # zero calls
    assert replay.means == first.means
    assert results_without_timings(tmp_path / "replay") == results_without_timings(tmp_path / "first")
    again = json.loads((tmp_path / "replay" / RUN_JSON).read_text())
    assert again["stages"]["transform"]["search_api_calls"] == 0 and again["transform"]["from_cache"] == n

    from receval.analysis.breakdown import stage_latency
    from receval.analysis.costs import cost_facts
    from receval.results import open_run

    stored = open_run(tmp_path / "first")
    assert cost_facts(stored)["usd_per_1000"] == pytest.approx(2.4)
    assert stage_latency(stored)["transform"]["api_calls_per_1000"] == pytest.approx(1000.0)
    # another seed is another answer: asked again
    run(make_config(*overrides, "transform.seed=1"), tmp_path / "seed1")
    assert len(server.requests) == sent + n + 1


def test_hyde_searches_with_the_question_and_the_passage(server):
    server.respond = hyde_reply
    texts = ["Install the package with pip", "The cache folder holds embeddings", "Bananas are yellow"]
    from receval.run import components

    node = {"kind": "hyde", "base_url": server.url, "model": "m", "search_with": "passage", "concurrency": 1}
    stage = components.build("transform", node, Context()).wrap(BM25(Tokenizer()), {})
    stage.fit(texts, np.arange(3))
    out = stage.rank(["bananas"], 3)
    plain = BM25(Tokenizer())
    plain.fit(texts, np.arange(3))
    want = plain.rank(["bananas install pip version cache"], 3)
    assert out.idx.tolist() == want.idx.tolist() and np.allclose(out.scores, want.scores, equal_nan=True)
    assert out.counts["requests.transform"].tolist() == [1.0]
    node["search_with"] = "both"
    stage = components.build("transform", node, Context()).wrap(plain, {})
    stage.fit(texts, np.arange(3))
    assert stage.searched(["bananas"], Spent()) == ["bananas bananas install pip version cache"]


def test_multi_query_fuses_the_question_and_its_rewrites(server):
    server.respond = rewrites_reply
    from receval.run import components

    texts = ["install the package with pip", "the cache folder holds embeddings", "set k1 for bm25", "pip cache"]
    node = {"kind": "multi_query", "base_url": server.url, "model": "m", "n": 2, "concurrency": 1}
    rrf = {"method": "rrf", "k": 60.0, "size": 100}
    stage = components.build("transform", node, Context()).wrap(BM25(Tokenizer()), rrf)
    stage.fit(texts, np.arange(4))
    question = "where is the cache"
    scored = stage.scored([question])
    block = scored.scores
    plain = BM25(Tokenizer())
    plain.fit(texts, np.arange(4))
    lists = [question, "cache the is where", "where is"]
    members = [plain.score([text]) for text in lists]
    np.testing.assert_array_equal(block, fuse(members, [0.0] * 3, np.arange(4), **rrf))
    # "the cache folder..." is first in the question's list and the reversed one; "where is"
    # shares no word with any chunk, so its list is empty: 1/61 + 1/61
    assert block.max() == pytest.approx(2 / 61) and int(np.argmax(block)) == 1
    assert set(scored.seconds) == {"transform", "bm25", "fusion"}
    assert scored.counts["input_tokens.transform"].tolist() == [50.0]


@pytest.mark.slow
def test_multi_query_run_uses_the_fused_first_stages_fusion(server, make_config, tmp_path, monkeypatch):
    monkeypatch.setenv("RECEVAL_CACHE_DIR", str(tmp_path / "cache"))
    server.respond = rewrites_reply
    cfg = make_config(*llm(server, "multi_query", "transform.n=2"), "retriever=fused", "retriever/fusion=weighted")
    stage = stages.build(cfg, Context(tokenizer=Tokenizer()))
    assert stage.fusion["method"] == "weighted" and "weights" not in stage.fusion
    result = run(cfg, tmp_path / "run")
    table = pq.read_table(tmp_path / "run" / RESULTS)
    assert {"latency_ms.transform", "latency_ms.fusion", "requests.transform"} <= set(table.column_names)
    assert result.means["rr"] > 0


@pytest.mark.slow
def test_llm_transform_needs_an_endpoint_and_a_model(make_config):
    with pytest.raises(ConfigError) as missing:
        check(make_config("transform=hyde"))
    text = "\n".join(missing.value.problems)
    assert "transform.base_url is required" in text and "transform.model is required" in text
    with pytest.raises(ConfigError, match=r"transform.prompt must hold \{question\}"):
        check(make_config("transform=multi_query", "transform.base_url=http://127.0.0.1:9/v1",
                          "transform.model=m", "transform.prompt=rewrite"))


def test_a_reply_that_never_fits_stops_the_run(server, make_config, tmp_path):
    server.respond = lambda body, attempt: with_usage({"queries": ["only one"]})
    cfg = make_config(*llm(server, "multi_query"), "transform.retries=1", "cache_dir=null")
    with pytest.raises(RecevalError, match=r"transform=multi_query, transform.model='tiny-test': nothing usable "
                                           r"came back: \d+ requests sent, 0 of \d+ answers usable"):
        run(cfg, tmp_path / "run")


@pytest.mark.parametrize("kind", ["hyde", "multi_query"])
def test_a_server_answering_prose_stops_the_transform_in_the_failure_rules_words(server, kind):
    """The one failure rule's stricter form (receval.clients.failures.stop): the counts say what
    was sent, and the last reason is named. One question in flight at a time: the first
    question's 1 + retries requests, and the questions after it are not sent."""
    server.respond = lambda body, attempt: chat_reply("Sure! Here is a passage about that.")
    from receval.run import components

    node = {"kind": kind, "base_url": server.url, "model": "m", "concurrency": 1, "retries": 2,
            "backoff": 0.001}
    stage = components.build("transform", node, Context()).wrap(BM25(Tokenizer()), {"method": "rrf", "k": 60.0})
    stage.fit(["install the package", "bananas are yellow"], np.arange(2))
    with pytest.raises(RecevalError) as stopped:
        stage.rank(["bananas", "pip", "cache"], 2)
    assert str(stopped.value) == (
        f"{server.url}/chat/completions: transform={kind}, transform.model='m': nothing usable came back: "
        "3 requests sent, 0 of 3 answers usable, 1 failed (last: gave up after 3 attempts; last: the reply's "
        "content is not a JSON object: 'Sure! Here is a passage about that.'); raise transform.retries or "
        "transform.timeout, or check the server and that the model answers the JSON the prompt asks for"
    )
    assert len(server.requests) == 3


def test_hyde_before_a_score_only_stage_and_a_reranker(server):
    """A first stage with no rank() of its own is ranked by select_top of its block; a
    re-ranker after the transform keeps the transform's counts and stage times."""
    from conftest import Fixed
    from receval.run import components
    from receval.rerankers import PAIRS, Rescored, Scorer
    from receval.run.stages import Reranked, api_calls

    server.respond = hyde_reply
    node = {"kind": "hyde", "base_url": server.url, "model": "m", "concurrency": 1}
    stage = components.build("transform", node, Context()).wrap(Fixed([3, 1, 2]), {})

    class Flat(Scorer):
        def fit(self, texts, tie_rank):
            pass

        def rescore(self, questions, idx):
            return Rescored(np.zeros(idx.shape))

    both = Reranked(stage, Flat(), first_size=2)
    both.fit(["a", "b", "c"], np.arange(3))
    out = both.rank(["q1", "q2"], 3)
    assert out.idx.tolist() == [[0, 2, 1], [0, 2, 1]]  # equal re-ranker scores: the tie rule (ids)
    assert out.counts["requests.transform"].tolist() == [1.0, 1.0]
    assert out.counts[PAIRS].tolist() == [2.0, 2.0]
    assert {"transform", "bm25", "rerank"} <= set(out.seconds)
    assert api_calls(both) == {"bm25": 0, "transform": 2, "rerank": 0}
    from receval.measures.cost import stage_names

    assert stage_names(both) == ["transform", "bm25", "rerank", "select"]
