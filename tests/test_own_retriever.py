"""Your own retriever: ``retriever=python`` (a module of yours) and ``retriever=http``
(a search service), checked against the code's own answers recomputed here."""

from __future__ import annotations

import importlib
import json
import sys
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from receval.chunking.words import chunk_sections
from receval.datasets import load_dataset
from receval.core.errors import RecevalError
from receval.retrievers.ranked import Ids, passages, top_lists
from receval.run.ranking import tie_ranks
from receval.core.trust import check_reach, reaches

from conftest import loopback, run_cli, run_of

JACCARD = '''
import re


def words(text):
    return set(re.findall(r"\\w+", text.lower()))


class Jaccard:
    """Word-set overlap; ``min_score`` drops weaker matches."""

    def __init__(self, min_score=0.0):
        self.min_score = min_score

    def fit(self, chunks):
        self.ids = [chunk.id for chunk in chunks]
        self.sets = [words(chunk["text"]) for chunk in chunks]

    def search(self, questions, k):
        answers = []
        for question in questions:
            q = words(question)
            scored = [(i, len(q & s) / len(q | s)) for i, s in zip(self.ids, self.sets)]
            scored = [pair for pair in scored if pair[1] > self.min_score]
            answers.append(sorted(scored, key=lambda pair: -pair[1])[:k])
        return answers


class Broken(Jaccard):
    def search(self, questions, k):
        return self.helper(questions)

    def helper(self, questions):
        raise ValueError("my own bug in " + str(len(questions)) + " questions")


class Unknown(Jaccard):
    def search(self, questions, k):
        return [[("fines#late-returnz", 1.0)] for _ in questions]


class NotFinite(Jaccard):
    def search(self, questions, k):
        return [[("fines#late-returns", float("nan"))] for _ in questions]


class Strings(Jaccard):
    def search(self, questions, k):
        return [[("fines#late-returns", "0.5")] for _ in questions]


class Twice(Jaccard):
    def search(self, questions, k):
        return [[("fines#late-returns", 0.5), ("loans#loan-periods", 0.4), ("fines#late-returns", 0.1)]
                for _ in questions]


class Exits(Jaccard):
    def search(self, questions, k):
        import sys

        sys.exit(0)


class ExitsOver(Jaccard):
    """Fine up to ``limit`` chunks; then ends the process (``how``: exit or interrupt)."""

    def __init__(self, limit=100, how="exit"):
        super().__init__()
        self.limit, self.how = limit, how

    def search(self, questions, k):
        if len(self.ids) > self.limit:
            if self.how == "exit":
                import sys

                sys.exit(0)
            raise KeyboardInterrupt
        return super().search(questions, k)


def sections_only(**params):
    """A factory: an index over whole sections, no fit."""
    return SectionIndex(**params)


class SectionIndex:
    def __init__(self, ids=()):
        self.ids = list(ids)

    def search(self, questions, k):
        return [[(sid, 1.0 / (rank + 1)) for rank, sid in enumerate(self.ids[:k])] for _ in questions]
'''


@pytest.fixture
def user_code(tmp_path, monkeypatch):
    """``jac.py`` in a folder on the path, as ``PYTHONPATH=folder`` would put it."""
    folder = tmp_path / "code"
    folder.mkdir()
    (folder / "jac.py").write_text(JACCARD, encoding="utf-8")
    (folder / "exits_on_import.py").write_text("import sys\nsys.exit('bye')\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    sys.modules.pop("jac", None)
    importlib.invalidate_caches()
    return folder


def stored(run_dir: Path) -> list[dict]:
    return pq.read_table(run_dir / "results.parquet", columns=["question", "retrieved", "scores"]).to_pylist()


def expected_sections(answers, chunks, depth):
    """The module's answers for one question ordered by the tie rule (score, then
    (section id, ordinal)) and collapsed to sections at their first rank, by hand."""
    by_id = {chunk.id: chunk for chunk in chunks}
    order = sorted(answers, key=lambda p: (-p[1], by_id[p[0]].section_id, by_id[p[0]].ordinal))[:depth]
    sections, scores = [], []
    for chunk_id, score in order:
        sid = by_id[chunk_id].section_id
        if sid not in sections:
            sections.append(sid)
            scores.append(score)
    return sections, scores


@pytest.mark.slow
def test_a_2x2_sweep_through_python_stores_the_modules_own_rankings(user_code, tmp_path, make_config):
    where = tmp_path / "sweep"
    done = run_cli(
        "retriever=python", "retriever.target=jac:Jaccard", "retriever.params={min_score: 0.02}",
        "chunking.max_words=40,120", "chunking.headings=true,false", f"hydra.sweep.dir={where}", "-m",
        cwd=tmp_path, env={"PYTHONPATH": f"{user_code}:{Path(__file__).resolve().parent.parent}"},
    )
    assert done.returncode == 0, done.stderr
    jac = importlib.import_module("jac")
    cfg = make_config()
    dataset = load_dataset(cfg.dataset)
    seen = set()
    for job in sorted(where.glob("[0-9]*")):
        config = json.loads((job / "run.json").read_text())["config"]
        assert config["retriever"]["target"] == "jac:Jaccard"
        words, headings = config["chunking"]["max_words"], config["chunking"]["headings"]
        seen.add((words, headings))
        chunks = chunk_sections(dataset.sections, words, 0, headings)
        mine = jac.Jaccard(min_score=0.02)
        mine.fit(passages(chunks, dataset.sections))
        rows = stored(job)
        assert len(rows) == len(dataset.questions)
        for row in rows:
            sections, scores = expected_sections(mine.search([row["question"]], cfg.depth)[0], chunks, cfg.depth)
            assert row["retrieved"] == sections
            np.testing.assert_allclose(row["scores"], scores, rtol=0, atol=0)
    assert seen == {(40, True), (40, False), (120, True), (120, False)}


def test_section_ids_stand_for_their_sections_and_ties_follow_the_tie_rule(user_code, tmp_path_factory):
    ids = ["loans#book-drop", "fines#late-returns", "computers#wifi"]
    run_dir = run_of(
        tmp_path_factory, "retriever=python", "retriever.target=jac:sections_only",
        f"retriever.params={{ids: [{', '.join(repr(i) for i in ids)}]}}", "chunking.max_words=20",
    )
    row = stored(run_dir)[0]
    assert row["retrieved"] == ids and row["scores"] == [1.0, 0.5, 1 / 3]


class C:
    def __init__(self, section_id, ordinal):
        self.section_id, self.ordinal, self.id = section_id, ordinal, f"{section_id}@{ordinal}"


CHUNKS = [C("b", 0), C("b", 1), C("a", 0)]
TIE_RANK = tie_ranks([(c.section_id, c.ordinal) for c in CHUNKS])


def test_top_lists_orders_equal_scores_by_chunk_id():
    answers = [[("b@1", 2.0), ("a", 2.0), ("b", np.float32(2.0))], []]
    idx, scores = top_lists(answers, Ids(CHUNKS), TIE_RANK, 3, "test", ["q1", "q2"])
    assert idx.tolist() == [[2, 0, 1], [-1, -1, -1]]  # a@0, b@0, b@1: equal scores by chunk id
    assert scores[0].tolist() == [2.0, 2.0, 2.0] and np.isnan(scores[1]).all()
    idx, scores = top_lists([[(2, 1), (0, 3)]], None, TIE_RANK, 2, "lancedb", ["q"])  # positions, int scores
    assert idx.tolist() == [[0, 2]] and scores.tolist() == [[3.0, 1.0]]


BAD_ANSWERS = {  # one question's answer -> the message (question "what is it?", retriever "mine")
    "string score": ([("a", "0.5")], "mine gave id 'a' the score '0.5' for question 'what is it?': scores must "
                     "be finite real numbers (not strings, booleans, lists or None)"),
    "boolean": ([("a", True)], "gave id 'a' the score True for question"),
    "numpy boolean": ([("a", np.True_)], "gave id 'a' the score np.True_ for question"),
    "none": ([("a", None)], "gave id 'a' the score None for question"),
    "nan": ([("a", float("nan"))], "gave id 'a' the score nan for question"),
    "infinite": ([("a", 1.0), ("b", float("-inf"))], "gave id 'b' the score -inf for question"),
    "too large for a float": ([("a", 10**400)], "gave id 'a' the score 1000000000"),
    "a list": ([("a", [1.0, 2.0]), ("b", [3.0, 4.0])], "gave id 'a' the score [1.0, 2.0] for question"),
    "ragged lists": ([("a", [1.0]), ("b", [3.0, 4.0])], "gave id 'a' the score [1.0] for question"),
    "ids and scores apart": ((["a", "b"], [1.0]), "mine answered question 'what is it?' with (['a', 'b'], [1.0]): "
                             "each answer is a list of (id, score) pairs"),
    "a triple": ([("a", 1.0, "x")], "answered question 'what is it?' with [('a', 1.0, 'x')]: each answer"),
    "not a list": ("a", "answered question 'what is it?' with 'a': each answer is a list of (id, score) pairs"),
    "same id twice": ([("a", 1.0), ("b", 0.5), ("a", 0.2)], "mine named id 'a' twice for question 'what is it?': "
                      "give each chunk at most once per answer (a section id stands for its first chunk)"),
    "section and its first chunk": ([("b", 1.0), ("b@0", 0.5)], "mine named one chunk twice, as 'b' and 'b@0' "
                                    "for question 'what is it?'"),
    "a 5 MB id": ([("z" * 5_000_000, 1.0)], "mine (question 'what is it?') answered id 'zzzz"),
}


@pytest.mark.parametrize("case", BAD_ANSWERS)
def test_a_bad_answer_is_one_line_naming_the_retriever_and_the_question(case):
    answer, expected = BAD_ANSWERS[case]
    with pytest.raises(RecevalError) as caught:
        top_lists([[("a", 1.0)], answer], Ids(CHUNKS), TIE_RANK, 3, "mine", ["fine", "what is it?"])
    message = str(caught.value)
    assert expected in message
    assert "\n" not in message and len(message) < 400


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("jac:Unknown", "answered id 'fines#late-returnz', which is neither a chunk id nor a section id of this run; "
         "closest known ids: 'fines#late-returns'"),
        ("jac:NotFinite", "jac:NotFinite search gave id 'fines#late-returns' the score nan for question "
         "'What is the loan period for DVDs?': scores must be finite real numbers"),
        ("jac:Strings", "jac:Strings search gave id 'fines#late-returns' the score '0.5' for question "
         "'What is the loan period for DVDs?': scores must be finite real numbers"),
        ("jac:Twice", "jac:Twice search named id 'fines#late-returns' twice for question "
         "'What is the loan period for DVDs?': give each chunk at most once per answer"),
        ("jac:Exits", "jac:Exits search raised SystemExit(0) (sys.exit in your code): a retriever returns its "
         "answers or raises an exception, it does not end the process; no results were written"),
        ("exits_on_import:Anything", "importing exits_on_import raised SystemExit('bye')"),
        ("jac:Nope", "retriever.target='jac:Nope': jac has no attribute 'Nope'"),
        ("nowhere:Nope", "no module named 'nowhere'; put its folder on PYTHONPATH"),
    ],
)
@pytest.mark.slow
def test_bad_answers_and_targets_are_one_clear_error(user_code, tmp_path_factory, target, expected):
    with pytest.raises(RecevalError) as caught:
        run_of(tmp_path_factory, "retriever=python", f"retriever.target={target}")
    assert expected in str(caught.value)


@pytest.mark.slow
def test_an_exception_in_user_code_shows_its_traceback_and_exits_2_writing_nothing(user_code, tmp_path):
    done = run_cli(
        "retriever=python", "retriever.target=jac:Broken", f"hydra.run.dir={tmp_path}/run",
        cwd=tmp_path, env={"PYTHONPATH": f"{user_code}:{Path(__file__).resolve().parent.parent}"},
    )
    assert done.returncode == 2
    assert 'jac.py", line' in done.stderr and "in helper" in done.stderr
    assert "ValueError: my own bug in 1 questions" in done.stderr
    assert "receval: error: jac:Broken search raised ValueError (traceback above)" in done.stderr
    assert "receval/run/pipeline.py" not in done.stderr  # the user's frames, not receval's
    assert not (tmp_path / "run" / "results.parquet").exists() and not (tmp_path / "run" / "run.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize(("how", "status", "why"), [("exit", 2, "an error"), ("interrupt", 130, "KeyboardInterrupt")])
def test_sys_exit_or_ctrl_c_in_user_code_stops_the_sweep_non_zero_saying_which_jobs_finished(
    user_code, tmp_path, how, status, why
):
    """Job 0 (120 words: 99 chunks) runs; job 1 (20 words) calls sys.exit(0) or raises
    KeyboardInterrupt in search. Before: exit 0 (or a traceback) and no summary."""
    where = tmp_path / "sweep"
    done = run_cli(
        "retriever=python", "retriever.target=jac:ExitsOver", f"retriever.params={{limit: 100, how: {how}}}",
        "chunking.max_words=120,20", f"hydra.sweep.dir={where}", "-m",
        cwd=tmp_path, env={"PYTHONPATH": f"{user_code}:{Path(__file__).resolve().parent.parent}"},
    )
    assert done.returncode == status, done.stderr
    assert (
        f"receval: sweep stopped by {why}: 1 jobs ran (0), 0 skipped (finished before, same config), "
        f"1 without results (1) -> {where}"
    ) in done.stdout
    assert (where / "0" / "run.json").is_file() and not (where / "1" / "results.parquet").exists()
    assert "Traceback" not in done.stderr
    if how == "exit":
        assert "receval: error: jac:ExitsOver search raised SystemExit(0) (sys.exit in your code)" in done.stderr


def test_a_stored_run_naming_a_target_needs_allow_code(tmp_path):
    config = {"retriever": {"kind": "python", "target": "jac:Jaccard", "params": {}}}
    assert [(r.key, r.what) for r in reaches(config)] == [("retriever.target", "code")]
    with pytest.raises(RecevalError, match="retriever.target='jac:Jaccard' names code to import"):
        check_reach(config, tmp_path, allow_remote=False, allow_code=False)
    check_reach(config, tmp_path, allow_remote=False, allow_code=True)


@pytest.mark.slow
def test_a_python_retriever_is_a_fusion_member_and_a_first_stage(user_code, tmp_path_factory):
    alone = stored(run_of(tmp_path_factory, "retriever=python", "retriever.target=jac:Jaccard"))
    fused = stored(run_of(
        tmp_path_factory, "retriever=fused",
        "retriever.members=[bm25,{kind: python, target: 'jac:Jaccard'}]",
    ))
    assert len(fused) == len(alone) and any(f["retrieved"] != a["retrieved"] for f, a in zip(fused, alone))
    # fusing a retriever with itself ranks exactly as it alone (same ranks, summed)
    same = stored(run_of(
        tmp_path_factory, "retriever=fused",
        "retriever.members=[{kind: python, target: 'jac:Jaccard'},bm25]",
        "retriever/fusion=weighted", "retriever.fusion.weights=[1,0]",
    ))
    assert [s["retrieved"][:3] for s in same] == [a["retrieved"][:3] for a in alone]


# ----------------------------------------------------------------------- http


def words(text):
    import re

    return set(re.findall(r"\w+", text.lower()))


@pytest.fixture(scope="module")
def library_sections():
    from hydra import compose, initialize_config_dir

    from receval.run.config import config_dir

    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        cfg = compose("config")
    return load_dataset(cfg.dataset).sections


def jaccard_answer(question, sections, k):
    q = words(question)
    scored = [(s.id, len(q & words(s.text)) / len(q | words(s.text))) for s in sections]
    return sorted([p for p in scored if p[1] > 0], key=lambda p: -p[1])[:k]


@pytest.fixture
def service(library_sections):
    """A search endpoint on loopback: Jaccard over whole sections; ``script`` holds
    replies to send first (status, body) before answering normally."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            httpd.seen.append((request, dict(self.headers)))
            if httpd.script:
                status, body = httpd.script.pop(0)
            else:
                status, body = 200, httpd.shape(request)
            raw = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    def plain(request):
        answer = jaccard_answer(request["query"], library_sections, request["k"])
        return {"results": [{"id": sid, "score": score} for sid, score in answer]}

    with loopback(Handler) as httpd:
        httpd.seen, httpd.script, httpd.shape = [], [], plain
        httpd.url = f"{httpd.root}/search"
        yield httpd


def expected_http(question, sections, depth):
    """The endpoint's answer ordered by the tie rule (a section id stands for its first chunk)."""
    answer = sorted(jaccard_answer(question, sections, depth), key=lambda p: (-p[1], p[0]))
    return [sid for sid, _ in answer], [score for _, score in answer]


@pytest.mark.slow
def test_http_rankings_equal_the_endpoints_answers_after_a_503(service, library_sections, tmp_path_factory):
    service.script = [(503, {"error": "warming up"})]
    run_dir = run_of(tmp_path_factory, "retriever=http", f"retriever.url={service.url}", "retriever.backoff=0")
    rows = stored(run_dir)
    # one request per question, plus the warm-up (the first question once more, untimed),
    # which met the 503 and its retry
    assert len(rows) == len(service.seen) - 2
    assert service.seen[0][0] == service.seen[1][0] == service.seen[2][0] == {"query": rows[0]["question"], "k": 10}
    for row in rows:
        sections, scores = expected_http(row["question"], library_sections, 10)
        assert row["retrieved"] == sections and row["scores"] == scores
    calls = json.loads((run_dir / "run.json").read_text())["stages"]["http"]
    assert calls == {"index_api_calls": 0, "warmup_api_calls": 2, "search_api_calls": len(rows)}


@pytest.mark.slow
def test_http_elasticsearch_shape_concurrency_and_headers_from_the_environment(
    service, library_sections, tmp_path_factory, monkeypatch
):
    monkeypatch.setenv("ES_AUTH", "ApiKey c2VjcmV0")

    def search(request):
        hits = jaccard_answer(request["query"]["match"]["text"], library_sections, request["size"])
        return {"took": 1, "hits": {"total": {"value": len(hits)}, "hits": [{"_id": s, "_score": v} for s, v in hits]}}

    service.shape = search
    run_dir = run_of(
        tmp_path_factory, "retriever=http_elasticsearch", f"retriever.url={service.url}",
        "retriever.headers={Authorization: ES_AUTH}", "retriever.concurrency=4", "search_batch=8",
    )
    request, headers = service.seen[0]
    assert set(request) == {"query", "size", "_source"} and request["size"] == 10 and request["_source"] is False
    assert headers["Authorization"] == "ApiKey c2VjcmV0"
    for row in stored(run_dir):
        sections, scores = expected_http(row["question"], library_sections, 10)
        assert row["retrieved"] == sections and row["scores"] == scores
    saved = (run_dir / "run.json").read_text()
    assert "ES_AUTH" in saved and "c2VjcmV0" not in saved


def test_the_search_client_sends_through_the_shared_transport_and_holds_no_header_value(monkeypatch):
    import pickle

    from receval.clients import http
    from receval.retrievers.http import SearchClient

    monkeypatch.setenv("ES_AUTH", "ApiKey c2VjcmV0")
    client = SearchClient("http://127.0.0.1:9/search", {"Authorization": "ES_AUTH"}, retries=0)
    assert type(client).send is http.Client.send  # no httpx client of its own
    assert client.secret_envs == ("ES_AUTH",) and client.credentials() == ("ApiKey c2VjcmV0",)
    sent = http.headers(client.api_key_env, client.header_envs)
    assert sent["Authorization"] == "ApiKey c2VjcmV0" and sent["Content-Type"] == "application/json"
    assert b"c2VjcmV0" not in pickle.dumps(client)  # a value is read at each request, never kept
    assert "c2VjcmV0" not in client.clip("the server echoes ApiKey c2VjcmV0")  # redacted from every message


def test_a_header_value_where_a_variable_name_belongs_is_refused(make_config):
    from receval.run.config import check

    cfg = make_config(
        "retriever=http", "retriever.url=http://127.0.0.1:9/s", "retriever.headers={Authorization: 'Bearer sk-abc'}"
    )
    with pytest.raises(RecevalError, match="headers.Authorization must be the NAME of an environment variable"):
        check(cfg)


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ({"hits": []}, "malformed reply: no 'results' in it (it has ['hits'])"),
        ({"results": [{"doc": "x"}]}, "malformed reply: a result without 'id' and 'score'"),
        (b"<html>oops</html>", "the reply is not JSON"),
    ],
)
@pytest.mark.slow
def test_a_malformed_reply_is_one_clear_error(service, tmp_path_factory, reply, message):
    service.script = [(200, reply)]
    with pytest.raises(RecevalError) as caught:
        run_of(tmp_path_factory, "retriever=http", f"retriever.url={service.url}")
    assert message in str(caught.value)


@pytest.mark.slow
def test_a_malformed_reply_exits_2_and_writes_nothing(service, tmp_path):
    service.script = [(200, {"hits": []})]
    done = run_cli("retriever=http", f"retriever.url={service.url}", f"hydra.run.dir={tmp_path}/run", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "receval: error: retriever.url=" in done.stderr and "malformed reply" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "run" / "results.parquet").exists()


def test_a_header_value_on_the_command_line_is_refused_before_anything_is_written():
    from receval.run.argv import argv_problems

    assert argv_problems(["retriever.headers={Authorization: ES_AUTH}", "retriever.headers.X-Key=MY_KEY"]) == []
    for arg in ["retriever.headers={Authorization: 'ApiKey c2VjcmV0'}", "retriever.headers.Authorization=sk-live-1234"]:
        (problem,) = argv_problems([arg])
        assert "NAME of an environment variable" in problem and "c2VjcmV0" not in problem and "sk-live" not in problem


def test_search_takes_each_questions_own_latency_when_a_retriever_measures_it():
    from receval.retrievers.base import Stage, StageOutput, search

    class Timed(Stage):
        name = "timed"

        def rank(self, questions, depth):
            idx, scores = np.zeros((len(questions), depth), np.int32), np.ones((len(questions), depth))
            return StageOutput(idx, scores, {"timed": 1.0}, question_seconds=np.array([0.5, 0.25][: len(questions)]))

    hits = search(Timed(), ["a", "b"], 1, np.arange(3), batch_size=2)
    assert hits.latency_ms.tolist() == [500.0, 250.0]


@pytest.mark.dense
def test_a_python_retriever_is_the_first_stage_of_re_ranking(user_code, tmp_path_factory, library_sections):
    ids = [section.id for section in library_sections[::5]][:12]  # distinct scores 1, 1/2, ... 1/12
    params = f"retriever.params={{ids: [{', '.join(repr(i) for i in ids)}]}}"
    reranked = stored(run_of(
        tmp_path_factory, "retriever=python", "retriever.target=jac:sections_only", params,
        "chunking.max_words=null", "rerank=dense", "rerank.first_size=10",
    ))
    # the shortlist is the first stage's top 10 (= depth): re-ordered by dense, never replaced
    assert all(set(row["retrieved"]) == set(ids[:10]) for row in reranked)
    assert len({tuple(row["retrieved"]) for row in reranked}) > 1


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (None, "retriever.url is required: give your search endpoint, e.g. retriever.url=http://localhost:8000/search"),
        ("ftp://host/search", "retriever.url=ftp://host/search: give your search endpoint"),
        ("http://user@host/search", "retriever.url must hold no user, password, query or fragment"),
    ],
)
@pytest.mark.slow
def test_a_bad_url_is_one_clear_error_before_any_request(make_config, url, message):
    from receval import retrievers

    cfg = make_config("retriever=http", *([f"retriever.url={url}"] if url else []))
    with pytest.raises(RecevalError) as caught:
        retrievers.build(cfg.retriever, retrievers.Context())
    assert message in str(caught.value)


def test_a_stored_http_run_needs_allow_remote_and_names_the_header_variable(tmp_path, capsys):
    config = {"retriever": {"kind": "http", "url": "http://search.example:9200/docs/_search",
                            "headers": {"Authorization": "ES_AUTH"}}}
    with pytest.raises(RecevalError, match="would send requests over the network"):
        check_reach(config, tmp_path, allow_remote=False, allow_code=False)
    check_reach(config, tmp_path, allow_remote=True, allow_code=False)
    assert "sends requests to search.example:9200 with the key from $ES_AUTH" in capsys.readouterr().err
