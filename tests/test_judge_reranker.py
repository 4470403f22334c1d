"""judge=reranker (issue 46): any configured re-ranker grades the pool, its scores mapped
to grades by thresholds fitted on the calibration pairs (and borrowed grade-0 pairs),
calibration judged out of sample; a remote one through the cached-call layer (a rerun
sends nothing)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from conftest import PostServer, exit_code, sweep_in_process
from receval.run import config as config_schema
from receval.core.errors import ConfigError, RecevalError
from receval.judge.reranker import grade_of, thresholds

WORD = re.compile(r"\w+")


def test_thresholds_separate_each_grade_with_balanced_accuracy():
    scores = np.array([0.1, 0.2, 0.3, 0.35, 0.6, 0.7, 0.9, 0.95])
    grades = np.array([0, 0, 0, 1, 1, 2, 2, 2])
    cuts = thresholds(scores, grades)
    assert cuts == pytest.approx({1: (0.3 + 0.35) / 2, 2: (0.6 + 0.7) / 2})
    assert [grade_of(s, cuts) for s in scores] == grades.tolist()
    # overlap: one grade-0 pair scores high; balanced accuracy still cuts between the bulk
    noisy = thresholds(np.array([0.1, 0.2, 0.9, 0.5, 0.6, 0.7]), np.array([0, 0, 0, 1, 1, 1]))
    assert noisy[1] == pytest.approx(0.35)
    # the cuts never decrease with the grade, and a grade on one side only gives none
    assert thresholds(np.array([0.5, 0.4, 0.1]), np.array([0, 1, 2]))[2] >= thresholds(
        np.array([0.5, 0.4, 0.1]), np.array([0, 1, 2]))[1]
    assert thresholds(np.array([0.1, 0.2]), np.array([1, 1])) == {}


def judge_cfg(*overrides: str):
    config_schema.register_judge()
    with initialize_config_dir(config_dir=config_schema.config_dir(), version_base="1.3"):
        return compose("judge", overrides=list(overrides))


@pytest.fixture
def rerank_server():
    """A rerank API scoring a document by the share of the query's words it holds."""

    def answer(path, body):
        query = set(WORD.findall(body["query"].lower()))
        results = [{"index": i, "relevance_score": len(query & set(WORD.findall(d.lower()))) / max(len(query), 1)}
                   for i, d in enumerate(body["documents"])]
        return 200, {"Content-Type": "application/json"}, json.dumps(
            {"results": results, "usage": {"total_tokens": 7}}).encode()

    server = PostServer(answer)  # .seen: each request sent, .url: where
    yield server
    server.close()


@pytest.mark.slow  # a sweep, a pool and three judge jobs
def test_reranker_judge_grades_by_calibrated_thresholds_through_the_cache(rerank_server, tmp_path_factory, tmp_path,
                                                                         monkeypatch):
    from receval.cli.pool import main as pool_main
    from receval.judge.job import run_judge, summary_lines

    monkeypatch.setenv("RECEVAL_CACHE_DIR", str(tmp_path / "cache"))
    sweep = sweep_in_process(tmp_path_factory.mktemp("sweep"), ["depth=10"], ["retriever=bm25", "retriever=tfidf"])
    pool = tmp_path / "pool.jsonl"
    assert exit_code(pool_main, [sweep, "--depth", "5", "--calibrate", "30", "--out", pool]) == 0
    node = f"judge.reranker={{kind: http, base_url: '{rerank_server.url}', model: overlap, backoff: 0.001}}"
    summary = run_judge(judge_cfg(f"pool={pool}", "judge=reranker", node, f"out={tmp_path / 'a.jsonl'}"))
    labels = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert summary["labelled"] == summary["holes"] == len(labels) > 0
    cuts = {int(g): t for g, t in labels[0]["thresholds"].items()}
    assert cuts and labels[0]["reranker"] == "overlap@30" and labels[0]["negatives"] == 30
    for label in labels:  # every hole graded by the one map from its score
        assert label["grade"] == grade_of(label["score"], cuts)
    calibration = summary["calibration"]
    assert calibration["n"] == 30 and summary_lines(summary)[0].startswith("receval judge reranker:overlap@30: ")
    sent = len(rerank_server.seen)
    assert sent > 0
    again = run_judge(judge_cfg(f"pool={pool}", "judge=reranker", node, f"out={tmp_path / 'b.jsonl'}"))
    assert len(rerank_server.seen) == sent  # every answer replayed from the cache: nothing sent
    assert (tmp_path / "b.jsonl").read_text() == (tmp_path / "a.jsonl").read_text() and again["labelled"] == len(labels)
    # a pool without calibration pairs cannot map scores to grades: said so
    bare = tmp_path / "bare.jsonl"
    assert exit_code(pool_main, [sweep, "--depth", "5", "--out", bare]) == 0
    with pytest.raises(RecevalError, match="pool with --calibrate N"):
        run_judge(judge_cfg(f"pool={bare}", "judge=reranker", node, f"out={tmp_path / 'c.jsonl'}"))
    with pytest.raises(ConfigError, match="judge.reranker.base_url is required"):
        run_judge(judge_cfg(f"pool={pool}", "judge=reranker", "judge.reranker={kind: http, model: m}",
                            f"out={tmp_path / 'd.jsonl'}"))
    with pytest.raises(ConfigError, match="judge.reranker is required: a rerank node"):
        run_judge(judge_cfg(f"pool={pool}", "judge=reranker", f"out={tmp_path / 'e.jsonl'}"))
