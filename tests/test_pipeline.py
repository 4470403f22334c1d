"""One run on composed configs: determinism, batching, options, stored facts."""

from __future__ import annotations

import json
import math

import pyarrow.parquet as pq
import pytest
from hydra import compose, initialize_config_dir

from receval.run.config import config_dir
from receval.run.pipeline import run
from receval.results.format import RESULTS, RUN_JSON


def rows_of(run_dir):
    return pq.read_table(run_dir / RESULTS).to_pylist()


def without_latency(rows):
    return [{k: v for k, v in row.items() if not k.startswith("latency_ms")} for row in rows]


def test_defaults_and_hydra_settings():
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        cfg = compose("config", return_hydra_config=True)
    assert cfg.hydra.job.name == "receval" and cfg.hydra.job.chdir is False
    assert cfg.depth == 10 and list(cfg.metrics.ks) == [1, 3, 5, 10]
    assert dict(cfg.retriever) == {"kind": "bm25", "k1": 1.2, "b": 0.75}  # only what applies to bm25
    assert cfg.rerank is None
    assert (cfg.bootstrap.n_resamples, cfg.bootstrap.level, cfg.bootstrap.seed) == (2000, 0.95, 0)


@pytest.mark.slow
def test_same_config_same_results_and_hash(make_config, tmp_path):
    cfg = make_config("retriever=tfidf", "chunking.max_words=40")
    run(cfg, tmp_path / "a")
    run(cfg, tmp_path / "b")
    assert without_latency(rows_of(tmp_path / "a")) == without_latency(rows_of(tmp_path / "b"))
    info = [json.loads((tmp_path / d / RUN_JSON).read_text()) for d in "ab"]
    assert info[0]["config_hash"] == info[1]["config_hash"]
    run(make_config("retriever=tfidf", "chunking.max_words=41"), tmp_path / "c")
    assert json.loads((tmp_path / "c" / RUN_JSON).read_text())["config_hash"] != info[0]["config_hash"]


@pytest.mark.slow
def test_batching_does_not_change_rankings(make_config, tmp_path):
    run(make_config("search_batch=1"), tmp_path / "one")
    run(make_config("search_batch=7"), tmp_path / "seven")
    assert without_latency(rows_of(tmp_path / "one")) == without_latency(rows_of(tmp_path / "seven"))
    assert all(row["latency_ms"] > 0 for row in rows_of(tmp_path / "one"))


def test_unanswerable_questions_are_ranked_but_not_scored(make_config, tmp_path):
    run(make_config(), tmp_path)
    rows = [r for r in rows_of(tmp_path) if r["kind"] == "unanswerable"]
    assert len(rows) == 2
    for row in rows:
        assert row["relevant"] == [] and row["rr"] is None and row["ndcg@5"] is None
        assert row["first_relevant_rank"] is None


def test_graded_labels_are_the_ndcg_gain(make_config, site, tmp_path):
    run(make_config("dataset=folder", f"dataset.path={site}", "chunking.max_words=null"), tmp_path)
    row = next(r for r in rows_of(tmp_path) if r["question_id"] == "b2")
    assert dict(zip(row["relevant"], row["grades"])) == {"bikes#prices-2": 2, "bikes#prices": 1}
    gains = [dict(zip(row["relevant"], row["grades"])).get(s, 0) for s in row["retrieved"]]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains[:5]))
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert row["ndcg@5"] == pytest.approx(dcg / idcg)
    assert row["scores"] == sorted(row["scores"], reverse=True)


@pytest.mark.slow
def test_headings_change_the_chunks(make_config, tmp_path):
    run(make_config("chunking.headings=true"), tmp_path / "on")
    run(make_config("chunking.headings=false"), tmp_path / "off")
    on, off = rows_of(tmp_path / "on"), rows_of(tmp_path / "off")
    assert [r["retrieved"] for r in on] != [r["retrieved"] for r in off]


@pytest.mark.parametrize("option", ["tokenizer.stopwords=true", "tokenizer.stem=true"])
@pytest.mark.slow
def test_tokenizer_options_run(make_config, tmp_path, option):
    run(make_config(option), tmp_path / "x")
    run(make_config(), tmp_path / "plain")
    assert [r["retrieved"] for r in rows_of(tmp_path / "x")] != [
        r["retrieved"] for r in rows_of(tmp_path / "plain")
    ]
