"""Interleaved repeated timing (``timing.repeats``, issue 44): every question timed N
times, the passes interleaved (1..n, then 1..n again), each latency the median of its
N; a remote stage's answers are this run's own in a repeat (never asked again, standing
for the latency they had live); a stage that keeps no answer is refused up front; the
key is saved with the run but is not part of its identity."""

from __future__ import annotations

import json

import numpy as np
import pytest
from chatserver import ChatServer
from conftest import Fixed
from test_calls import answering

from receval.run import components
from receval.clients import http
from receval.run.components import Context
from receval.core.errors import ConfigError
from receval.retrievers.base import Stage, StageOutput
from receval.run.stages import Reranked, check_repeats, timed_search

QUESTIONS = ["q0", "q1", "q2", "q3"]
TEXTS = ["apples grow on trees", "bananas are yellow", "cherries are red"]


class Scheduled(Stage):
    """A stage that measures each question's own time (``question_seconds``) from a
    schedule: pass p, question q takes ``ms[p][q]`` ms; it records the order it was asked in."""

    name = "scheduled"

    def __init__(self, ms):
        self.ms, self.asked, self.repeats = np.asarray(ms, float), [], 0

    def fit(self, texts, tie_rank):
        self.tie_rank = tie_rank

    def rank(self, questions, depth):
        seconds = [self.ms[self.repeats, QUESTIONS.index(q)] / 1000.0 for q in questions]
        self.asked += list(questions)
        idx = np.zeros((len(questions), depth), dtype=np.int32)
        return StageOutput(idx, np.ones(idx.shape), {self.name: sum(seconds)}, question_seconds=np.asarray(seconds))

    def repeat(self):
        self.repeats += 1


def test_repeats_are_interleaved_and_each_latency_is_the_median_of_its_passes():
    ms = [[1.0, 50.0, 3.0, 4.0],
          [90.0, 2.0, 3.0, 4.0],  # q0 slow in the second pass only: the median drops it
          [1.0, 60.0, 3.0, 80.0]]
    stage = Scheduled(ms)
    stage.fit(TEXTS, np.arange(3))
    hits = timed_search(stage, QUESTIONS, 2, stage.tie_rank, batch_size=1, label=None, repeats=3)
    assert stage.asked == QUESTIONS * 3  # 1..n, 1..n, 1..n: never one question three times in a row
    assert hits.latency_ms.tolist() == pytest.approx(np.median(ms, axis=0).tolist())
    assert hits.latency_ms.tolist() == pytest.approx([1.0, 50.0, 3.0, 4.0])
    assert hits.stage_ms["scheduled"].tolist() == pytest.approx([1.0, 50.0, 3.0, 4.0])  # each stage alike
    once = Scheduled(ms)
    once.fit(TEXTS, np.arange(3))
    single = timed_search(once, QUESTIONS, 2, once.tie_rank, batch_size=1, label=None)
    assert once.asked == QUESTIONS and single.latency_ms.tolist() == pytest.approx(ms[0])


def test_no_request_leaves_while_held():
    client = http.Client("http://127.0.0.1:9/v1", option="rerank")
    with http.held("timing.repeats=3: because"), pytest.raises(http.Held, match=r"^http://127\.0\.0\.1:9/v1/x: timing"):
        client.send("/x", {})
    assert client.requests == 0 and not http._HELD


def test_a_stage_asking_a_remote_service_each_question_is_refused_up_front():
    class Service(Fixed):
        name, asks_per_question = "http", True

    reranked = Reranked(Service([1, 2]), components.build("rerank", {"kind": "dense", "first_size": 2}, Context()), 2)
    check_repeats(reranked, 1)  # timed once: nothing to refuse
    with pytest.raises(ConfigError, match=r"timing\.repeats=3: http asks a remote service for each question; a timing "
                                          r"repeat re-times the local stages and never asks a remote one again"):
        check_repeats(reranked, 3)
    check_repeats(Fixed([1, 2]), 3)


def test_a_repeat_reads_the_run_s_own_remote_answers_and_reports_their_live_latency(tmp_path):
    """An LLM re-ranker behind a server taking 20 ms an answer, timed three times: the
    server is asked once per pair (the first pass), the repeats read the run's own
    answers (no request may leave), and the re-rank stage's latency is the live one."""
    server = ChatServer()
    server.respond = answering("", [], 2, delay=0.02)
    server.thread.start()
    try:
        node = {"kind": "llm", "base_url": server.url, "model": "m", "first_size": 2, "concurrency": 1,
                "api_key_env": None}
        stage = Reranked(Fixed([3, 2, 1]), components.build("rerank", node, Context(cache_dir=None)), 2)
        stage.fit(TEXTS, np.arange(3))
        hits = timed_search(stage, QUESTIONS, 3, stage.tie_rank, batch_size=1, label=None, repeats=3)
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
    assert len(server.requests) == len(QUESTIONS) * 2  # each pair once
    assert (hits.stage_ms["rerank"] >= 2 * 20.0).all()  # two answers of 20 ms live, in every pass's median
    assert hits.replayed == {} and hits.counts["requests.rerank"].tolist() == [2.0] * 4  # the first pass's


@pytest.mark.slow  # a whole run composed through Hydra, timed three times
def test_a_run_timed_three_times_says_so_and_keeps_its_identity(make_config, tmp_path):
    from receval.cli.report import report_for
    from receval.run.pipeline import config_hash_of, run
    from receval.results.format import RUN_JSON

    cfg = make_config("retriever=fused", "timing.repeats=3")
    run(cfg, tmp_path / "r")
    info = json.loads((tmp_path / "r" / RUN_JSON).read_text())
    assert info["timing"] == {"repeats": 3} and info["config"]["timing"] == {"repeats": 3}
    assert info["config_hash"] == config_hash_of(make_config("retriever=fused"))
    (summary,) = report_for([str(tmp_path / "r")]).runs
    assert summary.repeats == 3 and summary.latency["p50"].lo <= summary.latency_p50 <= summary.latency["p50"].hi
    with pytest.raises(ConfigError, match=r"timing\.repeats=0"):
        run(make_config("timing.repeats=0"), tmp_path / "bad")
