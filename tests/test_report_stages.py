"""Report additions: overlap buckets, latency per stage, API calls per 1,000 questions."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from conftest import run_cli
from forge import forged

from receval.core.errors import RecevalError
from receval.analysis.breakdown import overlap_bucket
from receval.cli.report import report_for
from receval.render.report import render
from receval.results.format import RESULTS, RUN_JSON


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    where = tmp_path_factory.mktemp("stages")
    done = run_cli("retriever=bm25,fused", f"hydra.sweep.dir={where}/s", "-m", cwd=where)
    assert done.returncode == 0, done.stderr
    return where / "s"


@pytest.mark.slow
def test_by_overlap_buckets_rouge1_precision(sweep):
    report = report_for([str(sweep), "--by", "overlap", "--by-metric", "hit@3"])
    rows = pq.read_table(sweep / "0" / RESULTS).to_pylist()
    scored = [r for r in rows if r["hit@3"] is not None]
    buckets = overlap_bucket([r["rouge1_p"] for r in scored], (0.3, 0.6))
    by = report.to_dict()["by"]
    assert [v["value"] for v in by["values"]] == [b for b in ("low", "medium", "high") if b in buckets]
    for value in by["values"]:
        members = [r["hit@3"] for r, b in zip(scored, buckets) if b == value["value"]]
        assert value["n_questions"] == len(members)
        cell = by["runs"][0]["values"][value["value"]]
        assert cell["mean"] == pytest.approx(sum(members) / len(members))


@pytest.mark.slow
def test_overlap_thresholds_move_questions_between_buckets(sweep):
    low = report_for([str(sweep), "--by", "overlap", "--overlap-thresholds", "0.0,0.0"]).to_dict()["by"]
    assert [v["value"] for v in low["values"]] == ["high"]
    with pytest.raises(RecevalError, match="overlap-measure"):
        report_for([str(sweep), "--by", "overlap", "--overlap-measure", "rouge9_p"])


@pytest.mark.slow
def test_stage_latency_and_api_calls_per_thousand_questions(sweep, tmp_path):
    report = report_for([str(sweep)]).to_dict()
    bm25, rrf = report["runs"]
    assert set(bm25["stages"]) == {"bm25", "select"}
    assert set(rrf["stages"]) == {"tfidf", "bm25", "fusion", "select"}
    for facts in rrf["stages"].values():
        assert 0 < facts["p50"] <= facts["p95"] and facts["api_calls_per_1000"] == 0
    # a paid stage: 49 questions answered with 98 API calls -> 2,000 per 1,000 questions
    info_path = sweep / "1" / RUN_JSON
    info = json.loads(info_path.read_text())
    info["stages"]["bm25"]["search_api_calls"] = 98
    info_path.write_text(json.dumps(info))
    forged(sweep / "1")
    try:
        paid = report_for([str(sweep)]).to_dict()["runs"][1]["stages"]["bm25"]
        text = render(report_for([str(sweep)]), "table")
    finally:
        info["stages"]["bm25"]["search_api_calls"] = 0
        info_path.write_text(json.dumps(info))
        forged(sweep / "1")
    assert paid["api_calls_per_1000"] == pytest.approx(2000.0)
    assert "API calls / 1k questions" in text and "2000" in text


@pytest.mark.slow
def test_cli_by_overlap_and_bad_thresholds(sweep, tmp_path):
    done = run_cli("--by", "overlap", str(sweep), cwd=tmp_path, command="report")
    assert done.returncode == 0, done.stderr
    assert "hit@3 by overlap" in done.stdout
    bad = run_cli("--by", "overlap", "--overlap-thresholds", "0.7,0.2", str(sweep), cwd=tmp_path, command="report")
    assert bad.returncode == 2 and "LOW <= HIGH" in bad.stderr and "Traceback" not in bad.stderr
