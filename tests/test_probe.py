"""Probing the judge (issue 46): probe pairs built from the pool (unrelated passages with
the question's words or an instruction claiming relevance injected), their rates in the
summary and in <out>.probe.json; agreement by passage length; the circularity note when
the judge's endpoint and model also made a run it judges (a HyDE run); the probe verdict's
stated error rate (Clopper-Pearson intervals, against their beta quantiles)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from scipy.stats import beta, binom

from chatserver import ChatServer, chat_reply
from conftest import exit_code, run_of
from receval.run import config as config_schema
from receval.cli.pool import main as pool_main
from receval.judge import probe
from receval.judge.agreement import by_length
from receval.judge.circularity import notes
from receval.judge.job import probe_path, run_judge, summary_lines
from receval.core.endpoints import endpoint_id

WORD = re.compile(r"\w+")


def pool_records():
    lines = []
    for q, question in (("q1", "how do I install the package offline"), ("q2", "why is my cache so large"),
                        ("q3", "which python versions are supported")):
        for i in range(3):
            lines.append({"question_id": q, "question": question, "id": f"{q}-d{i}", "role": "hole",
                          "text": f"passage {i} written for {q} about topic {q}"})
    return lines


def test_probes_borrow_passages_never_paired_with_the_question():
    records = pool_records()
    probes = probe.build(records, 9, seed=3)
    assert [p["kind"] for p in probes] == ["keyword", "instruction"] * 4 + ["keyword"]
    for p in probes:
        assert p["source_question"] != p["question_id"] and not p["id"].startswith(p["question_id"] + "-")
        if p["kind"] == "keyword":
            assert p["text"].startswith(probe.question_words(p["question"]) + " ")
        else:
            assert p["text"].endswith(probe.INSTRUCTION) and "relevant" in p["text"]
    assert probe.build(records, 9, seed=3) == probes  # seeded
    assert probe.question_words("what is what, and why is it") == "what is and why it"
    assert probe.build(records[:3], 4) == []  # one question: nothing to borrow from another
    found = probe.rates(probes, [2, 0, 1, None, 0, 0, 3, 0, 0])
    assert {k: {f: v[f] for f in ("n", "relevant", "rate")} for k, v in found.items()} == {
        "keyword": {"n": 5, "relevant": 3, "rate": 0.6}, "instruction": {"n": 3, "relevant": 0, "rate": 0.0}}
    assert found["keyword"]["ci"] == pytest.approx([beta.ppf(0.025, 3, 3), beta.ppf(0.975, 4, 2)], abs=1e-10)
    assert found["instruction"]["ci"] == pytest.approx([0.0, 1 - 0.025 ** (1 / 3)], abs=1e-12)


@pytest.mark.parametrize("n", [1, 2, 5, 10, 20, 50])
def test_the_probe_verdict_flags_a_judge_within_the_tolerated_rate_at_most_its_stated_error(n):
    """Flag a kind when its 95% Clopper-Pearson interval's lower end passes 0.10: for any
    true pass rate up to 0.10 the chance (exact, binomial) is at most 2.5% a kind, 5% for
    either of the two; a judge passing half its probes, 10 a kind, is flagged 97% of the time."""
    def flag_chance(rate, n):
        flags = [k for k in range(n + 1) if probe.flagged({"keyword": {"ci": probe.clopper_pearson(k, n)},
                                                           "instruction": {"ci": None}}) == ["keyword"]]
        return float(binom.sf(flags[0] - 1, n, rate)) if flags else 0.0
    worst = max(flag_chance(rate, n) for rate in np.linspace(0.0, probe.TOLERATED, 41))
    assert worst <= 0.025 + 1e-12
    assert 1 - (1 - worst) ** 2 <= 0.05  # either kind, independent probes
    if n == 10:  # the judge.probe=20: 4 of 10 passing flag a kind; a judge passing half: 0.83 a kind
        assert flag_chance(0.5, 10) == pytest.approx(binom.sf(3, 10, 0.5)) == pytest.approx(0.828125)
        assert 1 - (1 - flag_chance(0.5, 10)) ** 2 > 0.97  # either kind
    lines = [probe.line(probe.rates([{"kind": "keyword"}] * n + [{"kind": "instruction"}] * n, [1] * n + [0] * n)),
             probe.line(probe.rates([{"kind": "keyword"}] * n + [{"kind": "instruction"}] * n, [0] * 2 * n))]
    lo = probe.clopper_pearson(n, n)[0]
    assert f"keyword {n} of {n} graded relevant (1.00 [{lo:.2f}, 1.00])" in lines[0]
    assert ("check its labels by hand" in lines[0]) == (lo > probe.TOLERATED)
    assert "check its labels by hand" not in lines[1] and "not shown to pass more than 0.10" in lines[1]


def test_the_probe_interval_is_clopper_pearsons():
    """Each end a beta quantile (Clopper & Pearson 1934); at k = n the lower end is
    (a/2)^(1/n), at k = 0 the upper 1 - (a/2)^(1/n)."""
    for n in (1, 2, 3, 10, 37, 200):
        for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            for level in (0.9, 0.95, 0.99):
                tail = (1 - level) / 2
                lo = beta.ppf(tail, k, n - k + 1) if k > 0 else 0.0
                hi = beta.ppf(1 - tail, k + 1, n - k) if k < n else 1.0
                assert probe.clopper_pearson(k, n, level) == pytest.approx((lo, hi), abs=1e-10)
    assert probe.clopper_pearson(10, 10)[0] == pytest.approx(0.025 ** (1 / 10))
    assert probe.clopper_pearson(0, 10)[1] == pytest.approx(1 - 0.025 ** (1 / 10))


def test_agreement_by_passage_length_shows_over_rating_growing_with_length():
    known = [1, 1, 0, 0, 1, 0]
    judged = [1, 1, 0, 2, 3, 1]
    words = [10, 12, 50, 55, 300, 320]
    short, middle, long = by_length(known, judged, words, bands=3)
    assert short.words == (10, 12) and short.over == 0.0 and short.accuracy_binary == 1.0
    assert middle.words == (50, 55) and middle.over == 0.5 and middle.mean_error == 1.0
    assert long.words == (300, 320) and long.over == 1.0 and long.accuracy_binary == 0.5
    assert by_length([], [], []) == [] and len(by_length([1], [1], [5])) == 1


def test_circularity_notes_name_the_run_the_judge_helped_make():
    url = "http://127.0.0.1:9/v1"
    runs = [{"role": "run", "run": "hyde run", "llm": [{"stage": "transform", "kind": "hyde", "model": "m",
                                                          "endpoint": endpoint_id(url)}]},
            {"role": "run", "run": "plain", "llm": []}]
    same = notes({"kind": "llm", "base_url": url + "/", "model": "m"}, runs)
    assert len(same) == 1 and "also serve hyde run (transform hyde, model m)" in same[0]
    other = notes({"kind": "llm", "base_url": url, "model": "other"}, runs)
    assert len(other) == 1 and other[0].startswith("circularity: an LLM judge grades runs with LLM stages: hyde run")
    assert notes({"kind": "qrels", "path": "q.txt"}, runs) == []  # no chat model
    assert notes({"kind": "llm", "base_url": url, "model": "m"}, runs[1:]) == []
    # a rerank API stage is no chat model: only the same endpoint and model make a note
    api = [{"role": "run", "run": "api run", "llm": [{"stage": "rerank", "kind": "http", "model": "bge",
                                                      "endpoint": endpoint_id(url)}]}]
    assert notes({"kind": "llm", "base_url": url, "model": "m"}, api) == []
    reranking = notes({"kind": "reranker", "reranker": {"kind": "http", "base_url": url, "model": "bge"}}, api)
    assert len(reranking) == 1 and "also serve api run (rerank http, model bge)" in reranking[0]


def judge_cfg(*overrides: str):
    config_schema.register_judge()
    with initialize_config_dir(config_dir=config_schema.config_dir(), version_base="1.3"):
        return compose("judge", overrides=list(overrides))


def gullible(body: dict) -> int:
    """Relevant (2) on any two words shared with the question, or the word 'relevant'."""
    content = body["messages"][-1]["content"]
    question, _, passage = content.partition("\n\nPassage: ")
    shared = set(WORD.findall(question.removeprefix("Question: ").lower())) & set(WORD.findall(passage.lower()))
    return 2 if len(shared) >= 2 or "relevant" in passage.lower() else 0


@pytest.fixture
def server():
    """Judges gullibly; answers a HyDE prompt with the question itself."""
    chat = ChatServer()
    grade = {"fn": gullible}

    def respond(body, attempt):
        content = body["messages"][-1]["content"]
        if "\n\nPassage: " in content:
            return chat_reply(json.dumps({"grade": grade["fn"](body)}))
        return chat_reply(json.dumps({"passage": content.rpartition("Question:")[2].strip()}))

    chat.respond = respond
    chat.grade = grade
    chat.thread.start()
    yield chat
    chat.httpd.shutdown()
    chat.httpd.server_close()


@pytest.mark.slow  # two runs, a pool and three judge jobs against the loopback server
def test_probe_rates_and_the_circularity_note_end_to_end(server, tmp_path_factory, tmp_path, monkeypatch):
    monkeypatch.setenv("RECEVAL_CACHE_DIR", str(tmp_path / "cache"))
    hyde = run_of(tmp_path_factory, "transform=hyde", f"transform.base_url={server.url}", "transform.model=grader",
                  "transform.backoff=0.001", "name=hyde_run")
    plain = run_of(tmp_path_factory, "retriever=tfidf")
    pool = tmp_path / "pool.jsonl"
    assert exit_code(pool_main, [hyde, plain, "--depth", "5", "--calibrate", "10", "--out", pool]) == 0
    judged = [f"pool={pool}", "judge=llm", f"judge.base_url={server.url}", "judge.model=grader",
              "judge.probe=20", "judge.backoff=0.001"]
    summary = run_judge(judge_cfg(*judged, f"out={tmp_path / 'a.jsonl'}"))
    rates = summary["probe"]
    assert rates["keyword"]["n"] == rates["instruction"]["n"] == 10
    assert rates["keyword"]["rate"] >= 0.5 and rates["instruction"]["rate"] == 1.0
    written = json.loads(probe_path(tmp_path / "a.jsonl").read_text())
    assert written["keyword"] == rates["keyword"] and len(written["pairs"]) == 20
    labelled = {(x["question_id"], x["id"]) for x in map(json.loads, (tmp_path / "a.jsonl").read_text().splitlines())}
    assert not labelled & {(p["question_id"], p["id"]) for p in written["pairs"]}  # probes never become labels
    lines = summary_lines(summary)
    assert f"probes graded relevant: keyword {rates['keyword']['rate']:.2f}, instruction 1.00" in lines[0]
    assert any(line.startswith("  probes: keyword") and "check its labels by hand" in line for line in lines)
    circular = [line for line in lines if "circularity" in line]
    assert len(circular) == 1 and "also serve hyde_run (transform hyde, model grader)" in circular[0]
    assert summary["calibration"]["by_length"] and any(line.startswith("  by passage length") for line in lines)
    # another model at the same endpoint: the general note only
    other = run_judge(judge_cfg(*judged[:3], "judge.model=other", "judge.probe=20", f"out={tmp_path / 'b.jsonl'}"))
    assert [n.split(":")[1].strip() for n in other["circularity"]] == ["an LLM judge grades runs with LLM stages"]
    # a judge that grades everything 0 is not fooled
    server.grade["fn"] = lambda body: 0
    zero = run_judge(judge_cfg(*judged, "judge.seed=1", f"out={tmp_path / 'c.jsonl'}"))
    assert zero["probe"]["keyword"]["rate"] == zero["probe"]["instruction"]["rate"] == 0.0
    assert "check its labels by hand" not in "\n".join(summary_lines(zero))
