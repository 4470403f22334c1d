"""The cached-call layer (receval/clients/calls.py): one identity per remote answer
(endpoint, model, fields, prompt), one usage rule, and answers that keep their live
cost when replayed. Every server is a loopback ChatServer."""

from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest

from chatserver import ChatServer, chat_reply
from receval.run import components
from receval.clients.calls import FOLDER, Calls, call_key, normal_endpoint
from receval.clients.chat import ChatClient
from receval.run.components import Context
from receval.core.errors import RecevalError
from receval.judge.llm import LlmJudge, LlmJudgeConfig
from receval.retrievers.base import search
from receval.retrievers.bm25 import BM25
from receval.retrievers.text import Tokenizer

TEXTS = ["apples grow on trees", "bananas are yellow", "cherries are red", "dates are sweet"]
QUESTIONS = ["which fruit", "what colour", "how sweet"]
QUESTION = re.compile(r"Question: (.*)$", re.S)


def answering(passage: str, queries: list[str], grade: int, delay: float = 0.0, prompt_tokens=40):
    """A server's reply to every transform or judge prompt: its own passage, rewrites and grade."""

    def respond(body, attempt):
        if delay:
            time.sleep(delay)
        status, headers, raw = chat_reply(json.dumps({"passage": passage, "queries": queries, "grade": grade}))
        payload = json.loads(raw)
        payload["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": 12}
        return status, headers, json.dumps(payload).encode()

    return respond


@pytest.fixture
def servers():
    """Two loopback chat servers: A answers of apples (grade 3), B of cherries (grade 0)."""
    pair = [ChatServer(), ChatServer()]
    pair[0].respond = answering("apples trees", ["apples", "trees"], 3)
    pair[1].respond = answering("cherries red", ["cherries", "red"], 0)
    for server in pair:
        server.thread.start()
    yield pair
    for server in pair:
        server.httpd.shutdown()
        server.httpd.server_close()


def transformed(kind: str, server: ChatServer, cache, **more):
    node = {"kind": kind, "base_url": server.url, "model": "same-name", "concurrency": 1, "backoff": 0.001, **more}
    stage = components.build("transform", node, Context(cache_dir=str(cache))).wrap(
        BM25(Tokenizer()), {"method": "rrf", "k": 60.0, "size": 100}
    )
    stage.fit(TEXTS, np.arange(len(TEXTS)))
    return stage


def test_an_endpoint_has_one_spelling_and_every_part_of_the_key_counts():
    assert normal_endpoint("HTTP://LocalHost:80/v1/chat/completions/") == "http://localhost/v1/chat/completions"
    assert normal_endpoint("https://API.example.com:443/v1") == "https://api.example.com/v1"
    assert normal_endpoint("http://[::1]:8080/v1/") == "http://[::1]:8080/v1"
    base = call_key("http://localhost/v1", "m", {"seed": 0}, [{"role": "user", "content": "q"}])
    assert call_key("HTTP://localhost:80/v1/", "m", {"seed": 0}, [{"role": "user", "content": "q"}]) == base
    others = [
        call_key("http://localhost:8081/v1", "m", {"seed": 0}, [{"role": "user", "content": "q"}]),
        call_key("http://localhost/v1", "m2", {"seed": 0}, [{"role": "user", "content": "q"}]),
        call_key("http://localhost/v1", "m", {"seed": 1}, [{"role": "user", "content": "q"}]),
        call_key("http://localhost/v1", "m", {"seed": 0}, [{"role": "user", "content": "q2"}]),
    ]
    assert len({base, *others}) == 5


@pytest.mark.parametrize("kind", ["hyde", "multi_query"])
def test_a_second_server_with_the_same_model_name_is_asked_and_its_answers_used(servers, tmp_path, kind):
    a, b = servers
    more = {"search_with": "passage"} if kind == "hyde" else {"n": 2, "include_question": False}
    first = transformed(kind, a, tmp_path / "cache", **more).rank(QUESTIONS, 4)
    assert len(a.requests) == len(QUESTIONS)
    again = transformed(kind, a, tmp_path / "cache", **more).rank(QUESTIONS, 4)
    assert len(a.requests) == len(QUESTIONS)  # A's own answers replay
    assert again.idx.tolist() == first.idx.tolist() and again.replayed["transform"].answers == len(QUESTIONS)
    second = transformed(kind, b, tmp_path / "cache", **more).rank(QUESTIONS, 4)
    assert len(b.requests) == len(QUESTIONS)  # B is asked, not answered from A's entries
    assert "transform" not in second.replayed
    # A's answers find the apples chunk first, B's the cherries chunk
    assert first.idx[:, 0].tolist() == [0] * len(QUESTIONS)
    assert second.idx[:, 0].tolist() == [2] * len(QUESTIONS)


def judge_node(server, cache) -> LlmJudgeConfig:
    return LlmJudgeConfig(base_url=server.url, model="same-name", cache_dir=str(cache), backoff=0.001,
                          per_1m_input_tokens=2.0)


def test_the_llm_judge_asks_a_second_server_with_the_same_model_name(servers, tmp_path):
    a, b = servers
    records = [{"question": q, "text": t} for q, t in zip(QUESTIONS, TEXTS)]
    live = LlmJudge(judge_node(a, tmp_path))
    assert [grade for grade, _ in live.judge(records, {})] == [3, 3, 3]
    assert live.usage["cost_usd"] == pytest.approx(3 * 40 * 2.0 / 1e6) == live.usage["live_cost_usd"]
    replay = LlmJudge(judge_node(a, tmp_path))
    assert [grade for grade, _ in replay.judge(records, {})] == [3, 3, 3]
    assert len(a.requests) == 3 and replay.usage["replayed"] == 3 and replay.usage["cost_usd"] == 0.0
    # what this run paid is nothing; what its answers cost live is kept, latency too
    assert replay.usage["live_cost_usd"] == live.usage["live_cost_usd"]
    assert replay.usage["live_ms"] == pytest.approx(live.usage["live_ms"]) and live.usage["live_ms"] > 0
    other = LlmJudge(judge_node(b, tmp_path))
    assert [grade for grade, _ in other.judge(records, {})] == [0, 0, 0]
    assert len(b.requests) == 3 and other.usage["replayed"] == 0


def test_a_replay_reports_the_live_latency_apart_from_its_own(tmp_path):
    """A server taking 60 ms an answer: the replayed search's latencies are the live ones
    (>= 60 ms a question), and the replay's own read time is kept apart and small."""
    slow = ChatServer()
    slow.respond = answering("apples trees", [], 3, delay=0.06)
    slow.thread.start()
    try:
        live = search(transformed("hyde", slow, tmp_path), QUESTIONS, 4, np.arange(4), 1, None)
        replayed = search(transformed("hyde", slow, tmp_path), QUESTIONS, 4, np.arange(4), 1, None)
    finally:
        slow.httpd.shutdown()
        slow.httpd.server_close()
    assert len(slow.requests) == len(QUESTIONS)
    assert live.replayed == {} and np.all(live.latency_ms >= 60.0)
    assert np.all(replayed.latency_ms >= 60.0) and np.median(replayed.latency_ms) >= 60.0
    assert np.all(replayed.stage_ms["transform"] >= 60.0)
    replay = replayed.replayed["transform"]
    assert replay.answers == len(QUESTIONS)
    assert replay.live_s >= 0.06 * len(QUESTIONS) and replay.own_s < replay.live_s
    assert replayed.chunk_idx.tolist() == live.chunk_idx.tolist()


def test_a_token_count_of_minus_1e12_stops_the_step(tmp_path):
    bad = ChatServer()
    bad.respond = answering("apples", [], 3, prompt_tokens=-1e12)
    bad.thread.start()
    try:
        client = ChatClient(bad.url, "m", None, option="judge", cache_dir=str(tmp_path))
        with pytest.raises(RecevalError, match=r"/chat/completions: the answer's usage\.prompt_tokens is "
                                               r"-1000000000000\.0, not a count \(a whole number from 0 to "
                                               r"2\*\*53\); its usage cannot be priced: check the server "
                                               r"behind judge\.base_url"):
            client.answer([{"role": "user", "content": "q"}], {"type": "object"}, lambda reply: None)
        records = [{"question": "q", "text": "t"}]
        with pytest.raises(RecevalError, match=r"usage\.prompt_tokens is -1000000000000\.0, not a count"):
            LlmJudge(judge_node(bad, tmp_path)).judge(records, {})
    finally:
        bad.httpd.shutdown()
        bad.httpd.server_close()
    assert not list(tmp_path.rglob("*.json"))  # nothing cached of a refused answer


def test_an_entry_naming_another_server_is_never_an_answer(servers, tmp_path, monkeypatch):
    """An entry copied under another server's key (or a server-less one from before the
    endpoint was in the key) is asked again, and the API key never reaches the cache."""
    a, b = servers
    monkeypatch.setenv("CALLS_TEST_KEY", "sk-calls-test-5d1e")
    messages = [{"role": "user", "content": "Question: which fruit"}]
    schema = {"type": "object"}
    ChatClient(a.url, "m", "CALLS_TEST_KEY", option="transform", cache_dir=str(tmp_path)).answer(
        messages, schema, lambda reply: None
    )
    (entry,) = tmp_path.joinpath(*FOLDER).rglob("*.json")
    client_b = ChatClient(b.url, "m", None, option="transform", cache_dir=str(tmp_path))
    fields = {"temperature": 0.0, "seed": None, "response_format": schema}
    forged = client_b.calls.path(client_b.calls.key(fields, messages))
    forged.parent.mkdir(parents=True, exist_ok=True)
    forged.write_bytes(entry.read_bytes())  # A's answer under B's key: its endpoint says A
    answer = client_b.answer(messages, schema, lambda reply: None)
    assert len(b.requests) == 1 and not answer.replayed and answer.reply["passage"] == "cherries red"
    assert json.loads(forged.read_text())["endpoint"] == normal_endpoint(b.url + "/chat/completions")
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert b"sk-calls-test-5d1e" not in path.read_bytes()
    assert Calls("http://x/v1", "m", tmp_path).folder == tmp_path / "calls" / "v2"


@pytest.mark.slow  # two whole runs composed through Hydra
def test_a_replayed_run_reports_its_live_latency_and_is_marked(make_config, tmp_path, monkeypatch):
    """HyDE against a server taking 60 ms an answer, then the same run from the cache:
    the replayed run's stored p50 is the live one (>= 60 ms), run.json says how many
    answers were replayed and keeps the replay's own wall time apart, and report and
    select say the run was replayed."""
    import pyarrow.parquet as pq

    from receval.cli.report import report_for
    from receval.cli.select import select
    from receval.run.pipeline import run
    from receval.results.format import RESULTS, RUN_JSON

    monkeypatch.setenv("RECEVAL_CACHE_DIR", str(tmp_path / "cache"))
    slow = ChatServer()
    slow.respond = answering("install pip cache", [], 3, delay=0.06)
    slow.thread.start()
    overrides = ["transform=hyde", f"transform.base_url={slow.url}", "transform.model=tiny-test",
                 "transform.concurrency=1", "+cost.transform.per_1m_input_tokens=10"]
    try:
        live = run(make_config(*overrides), tmp_path / "live")
        sent = len(slow.requests)
        run(make_config(*overrides), tmp_path / "replay")
    finally:
        slow.httpd.shutdown()
        slow.httpd.server_close()
    assert len(slow.requests) == sent  # the replay sent nothing
    n = live.n_questions
    rows = {name: pq.read_table(tmp_path / name / RESULTS).to_pydict() for name in ("live", "replay")}
    assert np.median(rows["replay"]["latency_ms"]) >= 60.0
    assert min(rows["replay"]["latency_ms.transform"]) >= 60.0
    assert rows["replay"]["cost_usd"] == rows["live"]["cost_usd"]  # 40 tokens at $10 a million each
    info = json.loads((tmp_path / "replay" / RUN_JSON).read_text())
    first = json.loads((tmp_path / "live" / RUN_JSON).read_text())
    assert first["replayed"] == 0 and "replayed_answers" not in first["stages"]["transform"]
    facts = info["stages"]["transform"]
    assert info["replayed"] == n and facts["replayed_answers"] == n and facts["search_api_calls"] == 0
    assert facts["replayed_live_ms"] >= 60.0 * n and 0 <= facts["replay_wall_ms"] < facts["replayed_live_ms"]
    built = report_for([str(tmp_path / "live"), str(tmp_path / "replay")])
    assert [any(note.startswith(f"replayed: {n} remote answers") for note in r.notes) for r in built.runs] == [
        False, True,
    ]
    assert built.runs[1].latency_p50 >= 60.0
    from receval.analysis.breakdown import stage_latency
    from receval.results import open_run

    # the replay's transform calls are the ones its answers took live: one a question
    assert stage_latency(open_run(tmp_path / "replay"))["transform"]["api_calls_per_1000"] == pytest.approx(1000.0)
    selection, _ = select([str(tmp_path / "live"), str(tmp_path / "replay")], split=None)
    assert [note for note in selection.notes if "replayed" in note] == [
        f"#1 {selection.candidates[1].label}: replayed: {n} remote answers read from the cache; their "
        "latency and cost are the ones they had live (the replay's own wall time is in run.json)"
    ]


def test_the_llm_reranker_replays_its_own_server_only(servers, tmp_path):
    """Pairs graded by A, then again from the cache (marked, with A's live latency in the
    stage's time), then by B with the same model name: B is asked and its grades used.
    An entry whose grade is not 0-3 is asked again."""
    from conftest import Fixed
    from receval.run.stages import Reranked

    a, b = servers

    def reranked(server):
        node = {"kind": "llm", "base_url": server.url, "model": "same-name", "first_size": 2, "concurrency": 1,
                "backoff": 0.001}
        stage = Reranked(Fixed([3, 2, 1]), components.build("rerank", node, Context(cache_dir=str(tmp_path))), 2)
        stage.fit(TEXTS[:3], np.arange(3))
        return stage

    first = reranked(a).rank(["q1", "q2"], 3)
    assert len(a.requests) == 4 and first.replayed == {} and np.nanmax(first.scores[:, :2]) == 3.0
    again = reranked(a).rank(["q1", "q2"], 3)
    assert len(a.requests) == 4 and again.replayed["rerank"].answers == 4
    assert again.seconds["rerank"] >= again.replayed["rerank"].live_s > 0  # the live time, not the replay's
    assert again.counts["requests.rerank"].tolist() == first.counts["requests.rerank"].tolist() == [2.0, 2.0]
    other = reranked(b).rank(["q1", "q2"], 3)
    assert len(b.requests) == 4 and other.replayed == {} and np.nanmax(other.scores[:, :2]) == 0.0
    for entry in tmp_path.joinpath(*FOLDER).rglob("*.json"):
        data = json.loads(entry.read_text())
        entry.write_text(json.dumps({**data, "reply": 7}))
    reranked(a).rank(["q1", "q2"], 3)
    assert len(a.requests) == 8  # no grade 0-3 in the entries: asked again


def test_a_stage_s_live_calls_count_its_replayed_answers():
    from receval.clients.calls import live_calls

    assert live_calls({"search_api_calls": 0, "replayed_answers": 5}) == 5  # a replay is not free
    assert live_calls({"search_api_calls": 2, "index_api_calls": 7}) == 2
    assert live_calls(None) == 0 and live_calls({"search_api_calls": -3, "replayed_answers": "5"}) == 0


def test_an_answer_this_run_asked_is_live_when_read_again_and_an_earlier_run_s_is_replayed(servers, tmp_path):
    """"Replayed" means read from the cache an earlier run wrote, never this run's own:
    the same prompt asked twice by one run (its warm-up and its timed search, two
    questions asking the same) is live the second time too (``reused``), standing for
    the latency it had live, and sends no second request; another run (a new Calls
    over the same cache) replays it. Without a cache folder the run's own answer is
    kept in memory, so a re-read sends nothing either."""
    from receval.clients.calls import Answer, Replay, batch_replay

    a, _ = servers
    messages = [{"role": "user", "content": "Question: which fruit"}]
    client = ChatClient(a.url, "m", None, option="transform", cache_dir=str(tmp_path))
    first = client.answer(messages, {"type": "object"}, lambda reply: None)
    again = client.answer(messages, {"type": "object"}, lambda reply: None)
    assert len(a.requests) == 1 and not first.replayed and not first.reused
    assert again.reused and not again.replayed and again.live_ms == first.live_ms
    assert (client.calls.live, client.calls.reused, client.calls.replayed) == (1, 1, 0)
    later = ChatClient(a.url, "m", None, option="transform", cache_dir=str(tmp_path))  # the next run
    replayed = later.answer(messages, {"type": "object"}, lambda reply: None)
    assert replayed.replayed and not replayed.reused and len(a.requests) == 1
    memory = ChatClient(a.url, "m", None, option="transform", cache_dir=None)
    memory.answer(messages, {"type": "object"}, lambda reply: None)
    assert memory.answer(messages, {"type": "object"}, lambda reply: None).reused and len(a.requests) == 2
    # a batch of one live, one replayed and two reused answers: each kind stands for its live time apart
    batch = [Answer(1, live_ms=10.0), Answer(1, live_ms=40.0, replayed=True), Answer(1, live_ms=20.0, reused=True),
             Answer(1, live_ms=30.0, reused=True)]
    replay = batch_replay(batch, wall=0.004, concurrency=1)
    assert replay == Replay(1, 0.040, 0.001, 2, 0.050, 0.002)
    assert replay.shift == pytest.approx(0.040 - 0.001 + 0.050 - 0.002) and bool(replay) and not Replay()


@pytest.mark.slow  # two runs composed through Hydra
def test_a_live_llm_rerank_run_is_not_labelled_replayed_by_its_own_warm_up(make_config, tmp_path, monkeypatch):
    """The warm-up grades the first question's pairs; the timed search reads them again:
    this run's own answers, so run.json's ``replayed`` is 0 and the report has no replay
    note, the stage counts them as ``reused_answers`` (each a request it took live, so
    API calls per 1,000 questions are the pairs per question). The next run of the same
    config replays every answer and says so."""
    import pyarrow.parquet as pq

    from receval.analysis.breakdown import stage_latency
    from receval.cli.report import report_for
    from receval.run.pipeline import run
    from receval.results.format import RESULTS, RUN_JSON
    from receval.results import open_run

    monkeypatch.setenv("RECEVAL_CACHE_DIR", str(tmp_path / "cache"))
    server = ChatServer()
    server.respond = answering("", [], 2)
    server.thread.start()
    overrides = ["rerank=llm", f"rerank.base_url={server.url}", "rerank.model=tiny-test", "rerank.first_size=2",
                 "rerank.api_key_env=null", "rerank.concurrency=1"]
    try:
        live = run(make_config(*overrides), tmp_path / "live")
        sent = len(server.requests)
        run(make_config(*overrides), tmp_path / "replay")
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
    assert len(server.requests) == sent  # the second run sent nothing
    info = json.loads((tmp_path / "live" / RUN_JSON).read_text())
    pairs = pq.read_table(tmp_path / "live" / RESULTS).column("pairs_scored").to_numpy()
    facts = info["stages"]["rerank"]
    assert info["replayed"] == 0 and "replayed_answers" not in facts
    assert facts["reused_answers"] == pairs[0] == 2 and facts["warmup_api_calls"] == 2
    assert facts["search_api_calls"] == pairs.sum() - 2 and sent == pairs.sum()  # the warm-up's are not asked again
    assert stage_latency(open_run(tmp_path / "live"))["rerank"]["api_calls_per_1000"] == pytest.approx(
        1000 * pairs.mean())
    again = json.loads((tmp_path / "replay" / RUN_JSON).read_text())
    assert again["replayed"] == pairs.sum() and again["stages"]["rerank"]["replayed_answers"] == pairs.sum()
    built = report_for([str(tmp_path / "live"), str(tmp_path / "replay")])
    assert [[note.split(":")[0] for note in r.notes] for r in built.runs] == [[], ["replayed"]]
    assert live.n_questions == len(pairs)
