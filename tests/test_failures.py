"""The one failure rule for remote steps (receval.clients.failures, issue 37): the rule's
worked cases, and the judge and synth against a loopback chat server that answers prose:
each exits non-zero naming the last reason, and says how many requests it sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chatserver import ChatServer, chat_reply
from conftest import FIXTURES

from receval.clients.failures import Counts, StepFailed, check, verdict
from receval.core.errors import RecevalError


def test_the_rule_worked_cases():
    ok = Counts("s", sent=12, asked=10, usable=5, failed=5, last_reason="timed out")
    assert verdict(ok) is None  # half failed is not more than half
    assert ok.line() == "12 requests sent, 5 of 10 answers usable, 5 failed (last: timed out)"
    many = Counts("s", sent=12, asked=10, usable=4, failed=6, last_reason="timed out")
    assert verdict(many).startswith("more than half failed: 12 requests sent, 4 of 10")
    none = Counts("judge", sent=1, asked=3, usable=0, failed=3, last_reason="not JSON", item="pair")
    with pytest.raises(StepFailed, match=r"^judge: nothing usable came back: 1 request sent, 0 of 3 pairs usable, "
                                         r"3 failed \(last: not JSON\); fix it$"):
        check(none, fix="fix it")
    assert isinstance(StepFailed("x"), RecevalError)  # exit 2, one message
    assert verdict(Counts("s", sent=0, asked=0, usable=0, failed=0)) is None  # nothing asked: nothing to refuse
    assert verdict(Counts("s", sent=0, asked=4, usable=4, failed=0)) is None  # all from the cache


@pytest.fixture
def prose_server():
    server = ChatServer()
    server.respond = lambda body, attempt: chat_reply("Sure! I think this passage is quite relevant, really.")
    server.thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def test_the_judge_against_prose_exits_2_naming_the_reason(prose_server, tmp_path):
    from test_judge import judge_cfg, write_pool

    pool = write_pool(tmp_path / "pool.jsonl", [("q1", "d1", "a passage"), ("q1", "d2", "another")],
                      calibration=[("q1", "k1", "known", 2)])
    out = tmp_path / "labels.jsonl"
    cfg = judge_cfg(f"pool={pool}", "judge=llm", f"judge.base_url={prose_server.url}", "judge.model=m",
                    "judge.retries=1", "judge.backoff=0.001", "judge.max_backoff=0.01",
                    f"judge.cache_dir={tmp_path / 'cache'}", f"out={out}")
    with pytest.raises(RecevalError, match=r"receval.judge llm:m: nothing usable came back: 6 requests sent, 0 of 3 "
                                           r"pairs usable, 3 failed \(last: gave up .*not a JSON object.*\); check "
                                           r"judge.base_url.*Nothing was written to .*labels.jsonl") as raised:
        from receval.judge.job import run_judge

        run_judge(cfg)
    assert "unchanged" not in str(raised.value)
    assert not out.exists() and not Path(str(out) + ".agreement.json").exists()
    assert len(prose_server.requests) == 6  # 3 pairs, 1 + retries each


def test_the_judge_refuses_when_more_than_half_the_pairs_fail(tmp_path):
    from test_judge import judge_cfg, write_pool

    server = ChatServer()  # grades "good" passages, answers prose for the rest
    server.respond = lambda body, attempt: chat_reply(
        json.dumps({"grade": 2}) if "Passage: good" in body["messages"][-1]["content"] else "no idea")
    server.thread.start()
    try:
        pool = write_pool(tmp_path / "pool.jsonl", [("q1", "d1", "good"), ("q1", "d2", "bad"), ("q1", "d3", "bad")])
        cfg = judge_cfg(f"pool={pool}", "judge=llm", f"judge.base_url={server.url}", "judge.model=m",
                        "judge.retries=0", f"judge.cache_dir={tmp_path / 'cache'}", f"out={tmp_path / 'l.jsonl'}")
        from receval.judge.job import run_judge, summary_lines

        with pytest.raises(RecevalError, match=r"more than half failed: 3 requests sent, 1 of 3 pairs usable, 2 failed"):
            run_judge(cfg)
        pool.write_text(pool.read_text().replace('"bad"', '"good"', 1))  # 2 of 3 now graded: it stands
        summary = run_judge(cfg)
        assert summary["labelled"] == 2
        # d1's answer, and d2's (now d1's very prompt), replayed from the cache; d3 asked again
        assert "1 request sent (2 answers replayed from the cache), 2 of 3 pairs usable, 1 failed" \
            in summary_lines(summary)[1]
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()


@pytest.mark.slow
def test_synth_against_prose_exits_2_naming_the_reason(prose_server, tmp_path):
    from conftest import run_cli

    out = tmp_path / "syn.jsonl"
    done = run_cli("dataset=folder", f"dataset.path={FIXTURES / 'site'}", f"synth.base_url={prose_server.url}",
                   "synth.model=m", f"synth.out={out}", "synth.retries=1", "synth.backoff=0.001",
                   "synth.max_backoff=0.01", cwd=tmp_path, command="synth")
    assert done.returncode == 2, done.stderr
    assert "receval.synth: nothing usable came back: 16 requests sent, 0 of 8 questions usable, 8 failed " \
           "(last: gave up" in done.stderr and "not a JSON object" in done.stderr
    assert "Nothing was written" in done.stderr and "Traceback" not in done.stderr
    assert "unchanged" not in done.stdout + done.stderr and not out.exists()


def test_a_local_judge_grading_nothing_is_an_error_too(tmp_path):
    from test_judge import judge_cfg, write_pool

    from receval.judge.job import run_judge

    pool = write_pool(tmp_path / "pool.jsonl", [("q1", "d1", "a passage"), ("q2", "d2", "another")])  # no references
    out = tmp_path / "l.jsonl"
    with pytest.raises(RecevalError, match=r"receval.judge oneshot:bm25: graded none of the 2 pairs asked, so there "
                                           r"is nothing to write: judge=oneshot grades .* --calibrate N"):
        run_judge(judge_cfg(f"pool={pool}", "judge=oneshot", f"out={out}"))
    assert not out.exists()


def test_ask_until_failure_sends_nothing_after_the_first_failed_item():
    """The stricter form's asking loop: in order, one at a time, the items after the first
    that fails for good are not sent; another error stops the rest and is raised."""
    from receval.clients.failures import ask_until_failure

    class Failed(Exception):
        def __init__(self, reason):
            self.reason = reason

    sent = []

    def ask(item):
        sent.append(item)
        if item == 2:
            raise Failed("no JSON")
        return item * 10

    assert ask_until_failure([0, 1, 2, 3, 4], ask, Failed) == ([0, 10], ["no JSON"])
    assert sent == [0, 1, 2]
    sent.clear()

    def broken(item):
        sent.append(item)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ask_until_failure([0, 1, 2], broken, Failed)
    assert sent == [0]
