"""receval judge (issue 25): agreement statistics against statsmodels and scipy,
the qrels, llm and oneshot judges in-process (the llm one against the loopback chat
server), labels and agreement files, and a rerun that sends no request."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from chatserver import ChatServer, chat_reply
from receval.run import config as config_schema
from receval.core.errors import ConfigError, RecevalError
from receval.judge.agreement import agreement, confusion, kappa
from receval.judge.job import agreement_path, run_judge, summary_lines
from receval.judge.llm import vote
from receval.stats.concordance import kendall_tau_b, tau_interval


def judge_cfg(*overrides: str):
    config_schema.register_judge()
    with initialize_config_dir(config_dir=config_schema.config_dir(), version_base="1.3"):
        return compose("judge", overrides=list(overrides))


# --------------------------------------------------------------------------- statistics


@pytest.mark.parametrize("seed", range(5))
def test_kappa_equals_statsmodels(seed):
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    rng = np.random.default_rng(seed)
    known = rng.integers(0, 4, size=200)
    judged = np.where(rng.random(200) < 0.7, known, rng.integers(0, 4, size=200))
    table = confusion(known, judged, [0, 1, 2, 3])
    assert table.sum() == 200 and np.trace(table) == (known == judged).sum()
    assert kappa(table) == pytest.approx(inter_rater.cohens_kappa(table).kappa, abs=1e-12)
    assert kappa(table, "linear") == pytest.approx(inter_rater.cohens_kappa(table, wt="linear").kappa, abs=1e-12)
    found = agreement(known.tolist(), judged.tolist())
    binary = confusion(known >= 1, judged >= 1, [0, 1])
    assert found.kappa_binary == pytest.approx(inter_rater.cohens_kappa(binary).kappa, abs=1e-12)
    assert found.matrix == table.tolist() and found.n == 200


def test_kappa_worked_numbers_and_one_class():
    # p_o = 0.8, p_e = 0.5 * 0.5 + 0.5 * 0.5 = 0.5: kappa 0.6 (Cohen 1960's formula)
    assert kappa(np.array([[40, 10], [10, 40]])) == pytest.approx(0.6)
    found = agreement([1, 1, 1], [1, 1, 1])
    assert found.kappa_binary is None and found.accuracy_binary == 1.0  # one class: undefined, said so
    assert "undefined (one class only)" in found.lines("known")[0]


@pytest.mark.parametrize("seed", range(4))
def test_kendall_tau_b_equals_scipy(seed):
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 5, size=12).astype(float)  # ties on both sides
    y = x + rng.integers(-2, 3, size=12)
    assert kendall_tau_b(x, y) == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)
    batch = rng.random((7, 12))
    np.testing.assert_allclose(kendall_tau_b(batch, batch[::-1]),
                               [stats.kendalltau(a, b).statistic for a, b in zip(batch, batch[::-1])], atol=1e-12)


def test_tau_interval_covers_and_is_one_for_a_monotone_relabelling():
    rng = np.random.default_rng(0)
    before = rng.random((300, 6)) + np.linspace(0, 0.5, 6)
    found = tau_interval(before, before * 2 + 1, n_resamples=200, seed=0)
    assert found.tau == 1.0 and found.lo == 1.0 and found.hi == 1.0
    noisy = tau_interval(before, before + rng.normal(0, 0.5, before.shape), n_resamples=200, seed=0)
    assert noisy.lo <= noisy.tau <= noisy.hi and noisy.lo < 1.0


def test_vote_majority_and_ties_to_the_lower_grade():
    assert vote([2, 3, 3]) == 3 and vote([3, 2]) == 2 and vote([0, 1, 1, 0]) == 0 and vote([1]) == 1


# --------------------------------------------------------------------------- the judges


def write_pool(path, holes, calibration=(), references=()):
    lines = [{"question_id": q, "question": f"question {q}", "id": u, "text": t, "n_runs": 1, "best_rank": 1,
              "role": "hole"} for q, u, t in holes]
    lines += [{"question_id": q, "question": f"question {q}", "id": u, "text": t, "n_runs": 1, "best_rank": 2,
               "role": "calibration", "known_grade": g} for q, u, t, g in calibration]
    lines += [{"question_id": q, "question": f"question {q}", "id": u, "text": t, "n_runs": 0, "best_rank": None,
               "role": "reference", "known_grade": 1} for q, u, t in references]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_qrels_judge_labels_holes_and_measures_agreement(tmp_path):
    pool = write_pool(tmp_path / "pool.jsonl", [("q1", "d1", "a"), ("q1", "d2", "b"), ("q2", "d3", "c")],
                      calibration=[("q1", "d9", "z", 2), ("q2", "d8", "y", 1)])
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 2\nq1 0 d9 2\nq2 0 d3 0\nq2 0 d8 0\n")
    summary = run_judge(judge_cfg(f"pool={pool}", "judge=qrels", f"judge.path={qrels}", f"out={tmp_path / 'l.jsonl'}"))
    labels = read_jsonl(tmp_path / "l.jsonl")
    assert [(x["question_id"], x["id"], x["grade"], x["judge"]) for x in labels] == [
        ("q1", "d1", 2, "qrels:qrels.txt"), ("q2", "d3", 0, "qrels:qrels.txt")]  # d2 unjudged: left a hole
    assert summary["unlabelled"] == 1
    calibration = json.loads(agreement_path(tmp_path / "l.jsonl").read_text())["calibration"]
    # known 2 and 1, judged 2 and 0 (the qrels grade d8 0): rows known, columns judged
    assert calibration["categories"] == [0, 1, 2] and calibration["matrix"] == [[0, 0, 0], [1, 0, 0], [0, 0, 1]]
    run_judge(judge_cfg(f"pool={pool}", "judge=qrels", f"judge.path={qrels}", "judge.missing=zero",
                        f"out={tmp_path / 'z.jsonl'}"))
    assert [x["grade"] for x in read_jsonl(tmp_path / "z.jsonl")] == [2, 0, 0]
    with pytest.raises(RecevalError, match=r"out=.*l.jsonl: already exists; add force=true"):
        run_judge(judge_cfg(f"pool={pool}", "judge=qrels", f"judge.path={qrels}", f"out={tmp_path / 'l.jsonl'}"))
    with pytest.raises(RecevalError, match="pool"):
        run_judge(judge_cfg(f"pool={pool}", "judge=qrels", f"judge.path={qrels}", f"out={pool}", "force=true"))
    with pytest.raises(ConfigError, match="judge.path"):
        run_judge(judge_cfg(f"pool={pool}", "judge=qrels", f"judge.path={tmp_path / 'nope.txt'}",
                            f"out={tmp_path / 'n.jsonl'}"))


@pytest.mark.slow
def test_a_bad_pool_line_is_named(tmp_path):
    pool = tmp_path / "pool.jsonl"
    pool.write_text('{"question_id": "q1", "id": "d1", "role": "hole"}\nnot json\n')
    with pytest.raises(RecevalError, match=r"pool.jsonl:2: not a pool line"):
        run_judge(judge_cfg(f"pool={pool}", "judge=oneshot", f"out={tmp_path / 'l.jsonl'}"))


def test_oneshot_judge_labels_what_is_close_to_the_known_unit(tmp_path):
    known = "supersonic flow over a heated flat plate with boundary layer transition"
    pool = write_pool(
        tmp_path / "pool.jsonl",
        [("q1", "near", known + " measured in a wind tunnel"), ("q1", "far", "the history of the printing press"),
         ("q2", "orphan", known)],
        references=[("q1", "k1", known)],
    )
    summary = run_judge(judge_cfg(f"pool={pool}", "judge=oneshot", f"out={tmp_path / 'l.jsonl'}"))
    labels = {x["id"]: x for x in read_jsonl(tmp_path / "l.jsonl")}
    assert labels["near"]["grade"] == 1 and labels["far"]["grade"] == 0
    assert labels["far"]["similarity"] == 0.0 and 0.5 <= labels["near"]["similarity"] <= 1.5
    assert "orphan" not in labels and summary["unlabelled"] == 1  # q2 has no known unit to compare with


@pytest.fixture
def grading_server():
    """Grades a passage by its first word; with several samples, 'split' answers 3, 2, 3 by seed."""
    server = ChatServer()
    grades = {"answer": 3, "partial": 2, "topic": 1, "noise": 0}

    def respond(body, attempt):
        passage = body["messages"][-1]["content"].split("Passage: ", 1)[1]
        word = passage.split()[0]
        grade = (3, 2, 3)[body["seed"] % 3] if word == "split" else grades[word]
        status, headers, data = chat_reply(json.dumps({"grade": grade}))
        payload = json.loads(data)
        payload["usage"] = {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}
        return status, headers, json.dumps(payload).encode()

    server.respond = respond
    server.thread.start()
    yield server
    server.httpd.shutdown()


@pytest.mark.slow
def test_llm_judge_labels_measures_kappa_and_a_rerun_makes_zero_calls(grading_server, tmp_path):
    holes = [("q1", "d1", "answer here"), ("q1", "d2", "noise there"), ("q2", "d3", "split case"),
             ("q2", "d4", "topic only")]
    calibration = [("q1", "k1", "answer it", 3), ("q1", "k2", "partial one", 2), ("q2", "k3", "noise x", 1),
                   ("q2", "k4", "topic y", 1), ("q3", "k5", "answer z", 2)]
    pool = write_pool(tmp_path / "pool.jsonl", holes, calibration)
    overrides = [f"pool={pool}", "judge=llm", f"judge.base_url={grading_server.url}", "judge.model=grader",
                 "judge.samples=3", "judge.seed=0", f"judge.cache_dir={tmp_path / 'cache'}",
                 "judge.per_1m_input_tokens=2.0", "judge.per_1m_output_tokens=8.0"]
    first = run_judge(judge_cfg(*overrides, f"out={tmp_path / 'a.jsonl'}"))
    labels = read_jsonl(tmp_path / "a.jsonl")
    assert [(x["id"], x["grade"]) for x in labels] == [("d1", 3), ("d2", 0), ("d3", 3), ("d4", 1)]
    assert labels[2]["votes"] == [3, 2, 3] and labels[0]["model"] == "grader" and labels[0]["samples"] == 3
    assert len(labels[0]["prompt_sha256"]) == 64 and labels[0]["temperature"] == 0.0
    answers = (len(holes) + len(calibration)) * 3
    assert len(grading_server.requests) == answers
    assert [r["body"]["seed"] for r in grading_server.requests[:3]] != [0, 0, 0]  # sample s: seed + s
    usage = first["usage"]
    assert usage["requests"] == answers and usage["input_tokens"] == 50 * answers
    assert usage["cost_usd"] == pytest.approx(answers * (50 * 2.0 + 5 * 8.0) / 1e6)
    # calibration: known 3, 2, 1, 1, 2 against judged 3, 2, 0, 1, 3
    found = agreement([3, 2, 1, 1, 2], [3, 2, 0, 1, 3])
    assert first["calibration"]["kappa_graded"] == pytest.approx(found.kappa_graded)
    # every known label is relevant: chance explains all binary agreement, kappa 0 (statsmodels agrees)
    assert first["calibration"]["kappa_binary"] == 0.0
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    assert found.kappa_graded == pytest.approx(inter_rater.cohens_kappa(np.array(found.matrix)).kappa)
    # the rerun: every answer from the cache, not one request, the same labels
    again = run_judge(judge_cfg(*overrides, f"out={tmp_path / 'b.jsonl'}"))
    assert len(grading_server.requests) == answers
    assert again["usage"]["requests"] == 0 and again["usage"]["cached_answers"] == answers
    assert again["usage"]["cost_usd"] == 0.0
    # the summary says what the cached-call layer replayed and what those answers cost when live
    assert again["usage"]["replayed"] == answers
    assert again["usage"]["live_cost_usd"] == pytest.approx(usage["cost_usd"]) == pytest.approx(0.00378)
    assert summary_lines(again)[1] == (
        f"  0 requests sent ({answers} answers replayed from the cache), 9 of 9 pairs usable; tokens in 0, out 0; "
        "$0.0000 this run ($0.0038 when asked live)"
    )
    assert summary_lines(first)[1] == f"  {answers} requests sent, 9 of 9 pairs usable; tokens in {50 * answers}, " \
                                      f"out {5 * answers}; $0.0038 this run"
    assert read_jsonl(tmp_path / "b.jsonl") == labels
    # another temperature is another key: asked again
    run_judge(judge_cfg(*overrides, "judge.temperature=0.5", "judge.samples=1", f"out={tmp_path / 'c.jsonl'}"))
    assert len(grading_server.requests) == answers + len(holes) + len(calibration)


@pytest.mark.slow  # subprocesses: the commands as a user runs them
def test_pool_judge_report_commands_end_to_end(tmp_path_factory, tmp_path):
    from conftest import run_cli, sweep_in_process

    sweep = sweep_in_process(tmp_path_factory.mktemp("sweep"), ["depth=10"], ["retriever=bm25", "retriever=tfidf"])
    done = run_cli(str(sweep), "--depth", "5", "--calibrate", "10", "--out", "pool.jsonl", cwd=tmp_path,
                   command="pool")
    assert done.returncode == 0, done.stderr
    done = run_cli("pool=pool.jsonl", "judge=oneshot", "out=labels.jsonl", cwd=tmp_path, command="judge")
    assert done.returncode == 0, done.stderr
    assert "agreement with the calibration sample's known labels: 10 pairs" in done.stdout
    assert (tmp_path / "labels.jsonl.agreement.json").is_file()
    done = run_cli(str(sweep), "--labels", "labels.jsonl", "--agreement", "--format", "json", cwd=tmp_path,
                   command="report")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["label_agreement"]["n_questions"] > 0
    done = run_cli("pool=missing.jsonl", "judge=oneshot", "out=other.jsonl", cwd=tmp_path, command="judge")
    assert done.returncode == 2 and "missing.jsonl: file not found" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_required_keys_are_named(tmp_path):
    pool = write_pool(tmp_path / "pool.jsonl", [("q1", "d1", "a")])
    with pytest.raises(ConfigError, match=r"pool is required and has no value"):
        run_judge(judge_cfg("judge=oneshot"))
    with pytest.raises(ConfigError, match=r"judge.path is required"):
        run_judge(judge_cfg(f"pool={pool}", "judge=qrels"))
    with pytest.raises(ConfigError, match=r"judge.base_url is required"):
        run_judge(judge_cfg(f"pool={pool}", "judge=llm", "judge.model=m"))
    with pytest.raises(ConfigError, match=r"judge.samples=0: out of range"):
        run_judge(judge_cfg(f"pool={pool}", "judge=llm", "judge.model=m", "judge.base_url=http://127.0.0.1:1/v1",
                            "judge.samples=0"))
