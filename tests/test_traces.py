"""Traces: OpenInference retriever spans exported from a stored run import into a run
with the same per-question measures; several spans of one trace are a trajectory; an
unknown document keeps its text for pool; unmatched spans are counted and named."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hydra import compose, initialize_config_dir

from receval.run.config import config_dir
from receval.core.errors import ConfigError, RecevalError
from receval.traces import import_traces, read_spans
from receval.traces.config import register_traces

from conftest import run_cli, run_of

register_traces()
START = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z in ns


def traces_config(*overrides: str):
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        return compose("traces", overrides=list(overrides))


def exported_spans(run_dir: Path) -> list[dict]:
    """A stored run's per-question rankings as OpenInference retriever spans, flat
    attributes as the OpenTelemetry console exporter writes them: one span per question,
    its latency as the span's duration; every other span names its question only by text
    (spaced differently), the rest by ``receval.question_id``."""
    rows = pq.read_table(run_dir / "results.parquet", columns=["question_id", "question", "retrieved", "scores",
                                                               "latency_ms"]).to_pylist()
    spans = []
    for n, row in enumerate(rows):
        start = START + n * 10**9
        attributes = {"openinference.span.kind": "RETRIEVER", "input.value": row["question"]}
        if n % 2:
            attributes["input.value"] = "  " + row["question"].replace(" ", "   ") + "\n"
        else:
            attributes["receval.question_id"] = row["question_id"]
        for i, (uid, score) in enumerate(zip(row["retrieved"], row["scores"])):
            attributes[f"retrieval.documents.{i}.document.id"] = uid
            attributes[f"retrieval.documents.{i}.document.score"] = score
        spans.append({
            "name": "retrieve", "context": {"trace_id": f"0x{n:032x}", "span_id": f"0x{n:016x}"},
            "start_time": start, "end_time": start + round(row["latency_ms"] * 1e6), "attributes": attributes,
        })
    return spans


def write_lines(path: Path, spans: list[dict]) -> Path:
    path.write_text("".join(json.dumps(span) + "\n" for span in spans), encoding="utf-8")
    return path


def library_text(section_id: str) -> str:
    from receval.datasets import load_dataset

    return next(s.text for s in load_dataset(traces_config().dataset).sections if s.id == section_id)


def judge_cfg(*overrides: str):
    from receval.run import config as config_schema

    config_schema.register_judge()
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        return compose("judge", overrides=list(overrides))


@pytest.fixture(scope="module")
def bm25_run(tmp_path_factory):
    return run_of(tmp_path_factory, "retriever=bm25", "cache_dir=null")


@pytest.mark.slow
def test_spans_of_a_bm25_run_import_with_its_per_question_rr_and_pool_works(bm25_run, tmp_path, capsys):
    from receval.cli.pool import main as pool_main
    from receval.judge.job import run_judge

    spans = exported_spans(bm25_run)
    spans[0]["attributes"]["retrieval.documents.1.document.id"] = "wiki/elsewhere"  # not a unit of the dataset
    mirrored = library_text(spans[0]["attributes"]["retrieval.documents.0.document.id"]) + " (mirrored on the wiki)"
    spans[0]["attributes"]["retrieval.documents.1.document.content"] = mirrored
    spans.append({"context": {"trace_id": "0xfeed"}, "start_time": START, "end_time": START + 5,
                  "attributes": {"openinference.span.kind": "RETRIEVER", "input.value": "what is the meaning of life"}})
    spans.append({"context": {"trace_id": "0xbeef"}, "start_time": START, "end_time": START + 5,
                  "attributes": {"openinference.span.kind": "LLM", "input.value": "hello"}})
    path = write_lines(tmp_path / "spans.jsonl", spans)
    summary = import_traces(traces_config(f"traces.path={path}"), tmp_path / "run")
    assert (summary.spans, summary.others, summary.unknown_ids) == (len(spans) - 1, 1, 1)
    assert summary.unmatched == [(len(spans) - 1, "what is the meaning of life")]
    stored = {r["question_id"]: r for r in pq.read_table(bm25_run / "results.parquet").to_pylist()}
    imported = pq.read_table(tmp_path / "run" / "results.parquet").to_pylist()
    assert len(imported) == len(stored) == 49
    first = imported[0]
    for row in imported:
        if row is first:
            continue
        assert row["rr"] == stored[row["question_id"]]["rr"]  # equal, not close: the same ranking
        assert row["retrieved"] == stored[row["question_id"]]["retrieved"]
        assert row["n_calls"] == 1
        assert row["latency_ms"] == pytest.approx(stored[row["question_id"]]["latency_ms"], abs=1e-6)
    assert first["retrieved"][1] == "wiki/elsewhere"
    assert first["documents"] == [{"id": "wiki/elsewhere", "text": mirrored}]
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["traces"]["unmatched"] == [{"line": len(spans) - 1, "query": "what is the meaning of life"}]
    # --show: a known section by what the run wrote (heading, text), the unknown one by the trace's text
    from receval.analysis.show import snippet
    from receval.cli.report import report_for

    (seen,) = report_for([str(tmp_path / "run"), "--show", first["question_id"], "--top", "2"]).shown[0].runs
    known, elsewhere = seen.top
    assert known.section_id == first["retrieved"][0] and known.heading and seen.note == ""
    assert known.snippet == snippet(library_text(known.section_id), first["question"])
    assert elsewhere.section_id == "wiki/elsewhere" and elsewhere.snippet == snippet(mirrored, first["question"])
    (call,) = seen.calls  # the trace's one retriever span: its query, latency and documents as stored
    assert seen.trajectory["n_calls"] == 1 and call.query == first["calls"][0]["query"]
    assert call.latency_ms == first["calls"][0]["latency_ms"] and call.top == first["calls"][0]["retrieved"][:5]
    assert pool_main([str(tmp_path / "run"), "--depth", "10", "--out", str(tmp_path / "pool.jsonl")]) == 0
    pool = [json.loads(line) for line in (tmp_path / "pool.jsonl").read_text().splitlines()]
    holes = {(p["question_id"], p["id"]): p for p in pool if p["role"] == "hole"}
    assert holes[(first["question_id"], "wiki/elsewhere")]["text"] == mirrored
    assert all(p["text"] for p in holes.values())  # every unit's text found: the dataset's, or the trace's
    # the one-shot judge labels the unknown document like any unit: close to the known relevant one
    run_judge(judge_cfg(f"pool={tmp_path / 'pool.jsonl'}", "judge=oneshot", f"out={tmp_path / 'labels.jsonl'}"))
    labels = [json.loads(line) for line in (tmp_path / "labels.jsonl").read_text().splitlines()]
    assert [x["grade"] for x in labels if x["id"] == "wiki/elsewhere"] == [1]


@pytest.mark.slow
def test_spans_of_one_trace_are_a_trajectory_nested_and_otlp_attributes_alike(tmp_path):
    def otlp(key, value):
        kind = "doubleValue" if isinstance(value, float) else "stringValue"
        return {"key": key, "value": {kind: value}}

    spans = [
        {  # the second call, OTLP shape, started later: ordered by start time
            "traceId": "t1", "startTimeUnixNano": str(START + 3_000_000), "endTimeUnixNano": str(START + 5_000_000),
            "attributes": [otlp("openinference.span.kind", "RETRIEVER"), otlp("input.value", "dvd loan length"),
                           otlp("retrieval.documents.0.document.id", "loans#loan-periods"),
                           otlp("retrieval.documents.0.document.score", 2.5)],
        },
        {  # the first call, nested attributes, ISO times; named by text
            "context": {"trace_id": "t1"}, "start_time": "2026-01-01T00:00:00Z",
            "end_time": "2026-01-01T00:00:00.001500Z",
            "attributes": {"openinference": {"span": {"kind": "RETRIEVER"}},
                           "input": {"value": "What is the loan period for DVDs?"},
                           "retrieval": {"documents": [{"document": {"id": "fines#late-returns", "score": 1.0}},
                                                      {"document": {"id": "loans#loan-periods@0", "score": 0.5}}]}},
        },
    ]
    summary = import_traces(traces_config(f"traces.path={write_lines(tmp_path / 's.jsonl', spans)}"), tmp_path / "run")
    assert summary.untraced == 48 and summary.calls == 2
    (row,) = pq.read_table(tmp_path / "run" / "results.parquet").to_pylist()
    assert row["question_id"] == "q01" and row["n_calls"] == 2
    assert row["retrieved"] == ["fines#late-returns", "loans#loan-periods"]  # a chunk id stands for its section
    assert row["rr"] == 0.5 and row["first_relevant_call"] == 1 and row["recall_union"] == 1.0
    assert [c["latency_ms"] for c in row["calls"]] == [1.5, 2.0] and row["latency_ms"] == 3.5
    assert [c["query"] for c in row["calls"]] == ["What is the loan period for DVDs?", "dvd loan length"]


@pytest.mark.parametrize(("line", "message"), [
    ("[1, 2]", r"line 1: a list, not a span"),
    ("{not json", r"line 1: not JSON"),
    ('{"attributes": {"retrieval.documents.0.document.id": "a"}}', "without start_time and end_time"),
    ('{"start_time": 5, "end_time": 4, "attributes": {"retrieval.documents.0.document.id": "a"}}',
     "end_time is before start_time"),
    ('{"start_time": "2026-01-01T00:00:00", "end_time": 9, "attributes": {"openinference.span.kind": "RETRIEVER"}}',
     "has no time zone"),
    ('{"start_time": 1, "end_time": 2, "attributes": {"retrieval.documents.0.document.score": 1}}',
     r"retrieval.documents.0 has no document.id"),
    ('{"start_time": 1, "end_time": 2, "attributes": {"retrieval.documents.0.document.id": "a", '
     '"retrieval.documents.0.document.score": "high"}}', r"document.score is 'high', not a finite number"),
])
def test_a_bad_span_line_is_one_error_naming_the_file_and_line(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(RecevalError, match=message):
        read_spans(path)


@pytest.mark.slow
def test_a_missing_traces_file_is_a_config_error_naming_the_key(tmp_path):
    from receval.traces import check_config

    with pytest.raises(ConfigError, match="traces.path is required"):
        check_config(traces_config())
    with pytest.raises(ConfigError, match=r"traces.path=.*nope.jsonl: file not found"):
        check_config(traces_config(f"traces.path={tmp_path / 'nope.jsonl'}"))


@pytest.mark.slow
def test_the_command_writes_a_run_the_report_reads(bm25_run, tmp_path):
    path = write_lines(tmp_path / "spans.jsonl", exported_spans(bm25_run))
    done = run_cli(f"traces.path={path}", f"hydra.run.dir={tmp_path / 'run'}",
                   cwd=tmp_path, command="traces")
    assert done.returncode == 0, done.stderr
    assert "49 retriever spans -> 49 questions, 49 calls" in done.stdout
    assert not (tmp_path / "run" / ".hydra").exists()
    report = run_cli(str(bm25_run), str(tmp_path / "run"), "--format", "json", "--baseline", str(bm25_run),
                     cwd=tmp_path, command="report")
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)
    assert [run["label"] for run in data["runs"]][1] == "traces"
    assert data["runs"][0]["metrics"]["rr"] == data["runs"][1]["metrics"]["rr"]  # mean and interval alike


@pytest.mark.slow
def test_questions_labelled_with_evidence_are_judged_by_their_spans_as_in_the_run(tmp_path_factory, tmp_path):
    """Whole-section chunks: a trace naming the chunks scores each evidence question as the
    run did (rr and token measures alike)."""
    essays = Path(__file__).parent / "fixtures" / "essays"
    run_dir = run_of(tmp_path_factory, "dataset=folder", f"dataset.path={essays}", "chunking.max_words=null",
                     "cache_dir=null")
    path = write_lines(tmp_path / "spans.jsonl", exported_spans(run_dir))
    import_traces(traces_config(f"traces.path={path}", "dataset=folder", f"dataset.path={essays}"), tmp_path / "run")
    stored = {r["question_id"]: r for r in pq.read_table(run_dir / "results.parquet").to_pylist()}
    imported = pq.read_table(tmp_path / "run" / "results.parquet").to_pylist()
    assert len(imported) == len(stored) and any(r["rr"] for r in imported)
    assert sum(":" in r["relevant"][0] for r in imported if r["relevant"]) >= 5  # labelled with evidence spans
    for row in imported:
        before = stored[row["question_id"]]
        assert row["relevant"] == before["relevant"]
        for name in ("rr", "hit@1", "token_recall@3", "token_precision@3"):
            assert row[name] == before[name], (row["question_id"], name)
