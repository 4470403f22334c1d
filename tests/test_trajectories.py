"""Trajectories: a retriever that answers each question with its search calls stores the
calls and the trajectory columns (``n_calls``, ``first_relevant_call``, ``recall_union``),
scores the final ranking, and the report groups questions by calls."""

from __future__ import annotations

import importlib
import json
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest

from receval.core.errors import RecevalError
from receval.render.show import to_text
from receval.run.ranking import tie_ranks
from receval.retrievers.ranked import Ids
from receval.retrievers.trajectory import rank_answers

from conftest import run_of

TWO_CALLS = '''
import json


class TwoCalls:
    """First a call that finds one section no label names, then one that finds every
    labelled section; ``final`` left out: the union in call order."""

    def __init__(self, labels):
        with open(labels, encoding="utf-8") as handle:
            self.labels = json.load(handle)

    def fit(self, chunks):
        self.sections = sorted({chunk.section_id for chunk in chunks})

    def search(self, questions, k):
        out = []
        for question in questions:
            relevant = self.labels.get(question, [])
            miss = next(s for s in self.sections if s not in relevant)
            out.append({"calls": [
                {"query": "first: " + question, "hits": [[miss, 9.0]], "latency_ms": 4.0},
                {"query": "second: " + question, "hits": [[s, 1.0] for s in relevant]},
            ]})
        return out
'''


@pytest.fixture
def two_calls(tmp_path, monkeypatch, make_config):
    from receval.datasets import load_dataset

    folder = tmp_path / "code"
    folder.mkdir()
    (folder / "twocalls.py").write_text(TWO_CALLS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    sys.modules.pop("twocalls", None)
    importlib.invalidate_caches()
    dataset = load_dataset(make_config().dataset)
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps({q.text: sorted(q.relevant) for q in dataset.questions}), encoding="utf-8")
    return labels, dataset


@pytest.mark.slow
def test_two_calls_the_first_finding_nothing_store_calls_2_first_relevant_2_recall_1(two_calls, tmp_path_factory):
    from receval.cli.report import report_for

    labels, dataset = two_calls
    run_dir = run_of(
        tmp_path_factory, "retriever=python", "retriever.target=twocalls:TwoCalls",
        f"retriever.params={{labels: '{labels}'}}", "cache_dir=null",
    )
    rows = pq.read_table(run_dir / "results.parquet").to_pylist()
    labelled = [row for row in rows if row["rr"] is not None]
    assert len(labelled) == sum(bool(q.relevant) for q in dataset.questions) == 47
    for row in labelled:
        assert row["n_calls"] == 2 and row["first_relevant_call"] == 2 and row["recall_union"] == 1.0
        # the final ranking is the union in call order: the miss first, then the labelled sections
        assert row["retrieved"][0] not in row["relevant"] and row["rr"] == 0.5
        first, second = row["calls"]
        assert first["query"].startswith("first: ") and first["latency_ms"] == 4.0 and len(first["retrieved"]) == 1
        assert second["latency_ms"] is None and sorted(second["retrieved"]) == sorted(row["relevant"])
        assert row["requests.python"] == 2.0  # each call a request: a price per request is money per call
    for row in rows:
        if row["rr"] is None:  # unanswerable: calls kept, nothing to find
            assert row["n_calls"] == 2 and row["first_relevant_call"] is None and row["recall_union"] is None
    # --show prints each question's calls as stored: query, latency, sections, relevant ones with their rank
    q = labelled[0]
    report = report_for([str(run_dir), "--show", q["question_id"], "--top", "2"])
    (seen,) = report.shown[0].runs
    assert seen.trajectory == {"n_calls": 2, "first_relevant_call": 2, "recall_union": 1.0}
    first, second = seen.calls
    assert (first.number, first.query, first.latency_ms, first.n_retrieved, first.relevant) == (
        1, "first: " + q["question"], 4.0, 1, [])
    assert second.latency_ms is None and second.n_retrieved == len(q["calls"][1]["retrieved"])
    assert second.relevant == [(s, i) for i, s in enumerate(q["calls"][1]["retrieved"], start=1) if s in q["relevant"]]
    assert seen.spent == {"requests.python": 2.0}
    text = to_text(report.shown, q["question_id"])
    assert "    calls: 2 calls; first relevant at call 2; recall over the calls 1.00" in text
    assert f"       1.    4.0 ms  first: {q['question']}" in text and "    spent: requests.python 2" in text
    assert f"-> 1 section: {q['calls'][0]['retrieved'][0]}" in text and f"*{q['relevant'][0]}" in text
    bm25 = run_of(tmp_path_factory, "retriever=bm25", "cache_dir=null")
    (plain,) = report_for([str(bm25), "--show", q["question_id"]]).shown[0].runs
    assert plain.calls is None and plain.spent == {} and "calls:" not in to_text(
        report_for([str(bm25), "--show", q["question_id"]]).shown, q["question_id"])
    report = report_for([str(run_dir), "--by", "calls", "--by-metric", "rr"])
    assert report.by.column == "calls" and report.by.values == ["2"] and report.by.counts == [47]
    assert report.by.cells[0][0].mean == pytest.approx(0.5)
    with pytest.raises(RecevalError, match="--by calls needs runs whose retriever answered with its search calls"):
        report_for([str(bm25), "--by", "calls"])


class Chunk:
    def __init__(self, section_id, ordinal):
        self.section_id, self.ordinal, self.id = section_id, ordinal, f"{section_id}@{ordinal}"


CHUNKS = [Chunk("a", 0), Chunk("a", 1), Chunk("b", 0), Chunk("c", 0)]
TIE = tie_ranks([(c.section_id, c.ordinal) for c in CHUNKS])


def test_union_keeps_call_order_first_places_and_an_explicit_final_is_ranked_by_score():
    answers = [
        {"calls": [{"query": "x", "hits": [["c@0", 0.1], ["a@1", 0.9]]}, {"query": "y", "hits": [["a@1", 5], ["b@0", 3]]}]},
        {"calls": [{"query": "z", "hits": [["b@0", 1]]}], "final": [["c@0", 0.2], ["a@0", 0.7]]},
        [["b@0", 1.0]],
    ]
    idx, scores, calls = rank_answers(answers, Ids(CHUNKS), TIE, 3, "test", ["q1", "q2", "q3"])
    assert idx.tolist() == [[1, 3, 2], [0, 3, -1], [2, -1, -1]]  # call 1 by score (a@1, c@0), then b@0
    assert scores[0].tolist() == [0.9, 0.1, 3.0]
    assert [c.query for c in calls[0]] == ["x", "y"] and calls[2] is None
    assert calls[0][1].idx.tolist() == [1, 2, -1]


@pytest.mark.parametrize(("answer", "message"), [
    ({"calls": "x"}, "with calls = 'x': give a list"),
    ({"calls": [{"query": "x"}]}, r"call 1 is \{'query': 'x'\}"),
    ({"calls": [{"query": 3, "hits": []}]}, "call 1's query is 3, not a string"),
    ({"calls": [{"query": "x", "hits": [], "latency_ms": -1}]}, "call 1's latency_ms is -1"),
    ({"calls": [], "finale": []}, "unknown key.s. finale"),
    ({"calls": [{"query": "x", "hits": [["nope", 1.0]]}]}, "answered id 'nope'"),
])
def test_a_bad_trajectory_is_one_line_naming_the_question_and_the_call(answer, message):
    with pytest.raises(RecevalError, match=message):
        rank_answers([answer], Ids(CHUNKS), TIE, 3, "twocalls search", ["q1"])


def test_first_relevant_call_and_recall_union_by_hand():
    from receval.datasets import Question
    from receval.run.evaluate import trajectory_columns
    from receval.retrievers.trajectory import Call

    def call(*chunks):
        return Call("q", np.array([*chunks, -1], dtype=np.int32), np.array([1.0] * len(chunks) + [np.nan]))

    questions = [
        Question("q1", "one", "direct", "dev", {"a": 1, "b": 2, "c": 1}),
        Question("q2", "two", "direct", "dev", {"c": 1}),
        Question("q3", "three", "unanswerable", "dev", {}),
    ]
    section_of = np.array([0, 0, 1, 2])  # chunks a@0, a@1, b@0, c@0
    calls = [[call(3), call(1, 0), call(2)], [call(0), call(1)], None]
    final = np.array([[2, -1], [-1, -1], [3, -1]], dtype=np.int32)
    got = trajectory_columns(questions, ["a", "b", "c"], section_of, calls, final, np.ones((3, 2)), np.array([1.0, 2.0, 7.0]))
    assert got["n_calls"] == [3, 2, 1]
    assert got["first_relevant_call"] == [1, None, None]
    assert got["recall_union"] == [1.0, 0.0, None]
    assert got["calls"][0][1]["retrieved"] == ["a"]  # two chunks of one section: one place
    assert got["calls"][2] == [{"query": "three", "retrieved": ["c"], "scores": [1.0], "latency_ms": 7.0}]


@pytest.mark.slow
def test_an_http_service_answering_with_calls_is_charged_per_call(two_calls, tmp_path_factory):
    """The service answers each question with three calls and a ``final``: the measures
    score the final ranking, each call is a request (priced per call)."""
    from http.server import BaseHTTPRequestHandler

    from conftest import loopback

    _, dataset = two_calls
    relevant = {q.text: sorted(q.relevant) for q in dataset.questions}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            question = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["query"]
            found = [[sid, 1.0] for sid in relevant[question]]
            body = json.dumps({"calls": [{"query": "a", "hits": []}, {"query": "b", "hits": found, "latency_ms": 2},
                                         {"query": "c", "hits": [["fines#late-returns", 0.5]]}],
                               "final": found}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with loopback(Handler) as httpd:
        run_dir = run_of(tmp_path_factory, "retriever=http", f"retriever.url={httpd.root}/search", "cache_dir=null",
                         "+cost.http.per_1k_requests=2")
    rows = pq.read_table(run_dir / "results.parquet").to_pylist()
    for row in rows:
        assert row["n_calls"] == 3 and row["requests.http"] == 3.0
        assert row["cost_usd"] == pytest.approx(3 * 2 / 1000)
        assert [c["query"] for c in row["calls"]] == ["a", "b", "c"] and row["calls"][1]["latency_ms"] == 2.0
        assert row["retrieved"] == sorted(row["relevant"])  # the final ranking, not the union
        if row["rr"] is not None:
            assert row["rr"] == 1.0 and row["first_relevant_call"] == 2 and row["recall_union"] == 1.0


def _rerank_reversed(body: dict) -> bytes:
    """A rerank API that puts the first stage's shortlist in reverse order."""
    n = len(body["documents"])
    results = [{"index": i, "relevance_score": float(i)} for i in range(n)]
    return json.dumps({"results": sorted(results, key=lambda r: -r["relevance_score"])[: body["top_n"]]}).encode()


@pytest.mark.slow
def test_a_reranker_after_a_trajectory_keeps_the_first_stages_calls(two_calls, tmp_path_factory):
    """``rerank=http`` after the two-call retriever: the measures are of the re-ranked
    list, ``n_calls``, ``first_relevant_call`` and ``recall_union`` of the first stage's
    calls, each call still a request of the retriever."""
    from http.server import BaseHTTPRequestHandler

    from conftest import loopback

    labels, dataset = two_calls

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = _rerank_reversed(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with loopback(Handler) as httpd:
        run_dir = run_of(
            tmp_path_factory, "retriever=python", "retriever.target=twocalls:TwoCalls",
            f"retriever.params={{labels: '{labels}'}}", "cache_dir=null",
            "rerank=http", f"rerank.base_url={httpd.root}", "rerank.model=m1",
        )
    rows = pq.read_table(run_dir / "results.parquet").to_pylist()
    labelled = [row for row in rows if row["rr"] is not None]
    assert len(labelled) == 47
    for row in labelled:
        assert row["n_calls"] == 2 and row["first_relevant_call"] == 2 and row["recall_union"] == 1.0
        assert [c["query"][:7] for c in row["calls"]] == ["first: ", "second:"]
        assert row["requests.python"] == 2.0 and row["requests.rerank"] == 1.0
        # re-ranked: the union (the miss first) reversed, so a labelled section leads
        assert row["retrieved"][-1] not in row["relevant"] and row["rr"] == 1.0


@pytest.mark.slow
def test_a_query_transform_before_a_trajectory_keeps_its_calls(two_calls, tmp_path_factory, monkeypatch):
    """``transform=hyde`` (searching with the passage, which the echo server makes the
    question itself): the calls are the ones searched with the passage; ``multi_query``
    searches several texts per question, so its run has no trajectory columns."""
    from chatserver import ChatServer, echo

    labels, _ = two_calls
    server = ChatServer()
    server.respond = echo
    server.thread.start()
    common = ["retriever=python", "retriever.target=twocalls:TwoCalls", f"retriever.params={{labels: '{labels}'}}",
              "cache_dir=null", f"transform.base_url={server.url}", "transform.model=tiny-test"]
    try:
        hyde = run_of(tmp_path_factory, *common, "transform=hyde", "transform.search_with=passage")
        multi = run_of(tmp_path_factory, *common, "transform=multi_query")
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
    rows = pq.read_table(hyde / "results.parquet").to_pylist()
    labelled = [row for row in rows if row["rr"] is not None]
    assert len(labelled) == 47
    for row in labelled:
        assert row["n_calls"] == 2 and row["first_relevant_call"] == 2 and row["recall_union"] == 1.0
        assert row["calls"][1]["query"] == "second: " + row["question"] and row["requests.python"] == 2.0
        assert row["requests.transform"] == 1.0
    columns = pq.read_schema(multi / "results.parquet").names
    assert "rr" in columns and "n_calls" not in columns and "calls" not in columns
