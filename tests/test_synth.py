"""Synthetic questions against a local chat-completions server started by the tests
(:mod:`chatserver`: a good reply by default; a test swaps in ``server.respond`` to send
malformed content, 429/500/400 answers or slow replies)."""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from chatserver import PASSAGE, ChatServer, chat_reply, error, first_sentence, good_content, passages_of
from conftest import FIXTURES, ROOT, run_cli
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException

from receval.run import pipeline
from receval.run.config import config_dir, register_synth
from receval.datasets import LIBRARY, folder
from receval.datasets.questions import read_questions
from receval.core.errors import ConfigError, DatasetError, RecevalError, RecevalWarning
from receval.clients.chat import ChatClient, ReplyError, ServerError, parse_json_object
from receval.synth.quotes import Source, locate_quotes, without_heading
from receval.synth import (
    QA_SCHEMA,
    Unit,
    build_messages,
    generate,
    make_units,
    pick_partners,
    record_id,
    select_units,
    split_of,
    validate_reply,
)

register_synth()

SITE = FIXTURES / "site"
KEY = "sk-test-DO-NOT-LEAK-8c1f2e"


@pytest.fixture
def server():
    chat = ChatServer()
    chat.thread.start()
    yield chat
    chat.httpd.shutdown()
    chat.httpd.server_close()


@pytest.fixture
def synth_config(server, tmp_path):
    """Compose ``conf/synth.yaml`` as ``receval synth`` would, pointed at the server."""

    def _compose(*overrides: str):
        base = [
            f"synth.base_url={server.url}", "synth.model=test-model", f"synth.out={tmp_path / 'syn.jsonl'}",
            "synth.backoff=0.001", "synth.max_backoff=0.01", "synth.concurrency=2",
            f"synth.cache_dir={tmp_path / 'cache'}",  # answers of this test's server only
        ]
        with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
            return compose("synth", overrides=[*base, *overrides])

    return _compose


def site_cfg() -> list[str]:
    return ["dataset=folder", f"dataset.path={SITE}"]


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def site_sections():
    return folder.read_pages(SITE / "pages")[0]


# ----------------------------------------------------------------- end to end


@pytest.mark.slow
def test_generated_file_runs_through_the_pipeline_at_k_3_10_25(synth_config, server, tmp_path, make_config):
    cfg = synth_config()  # the library, every section
    summary = generate(cfg, progress=False)
    out = Path(cfg.synth.out)
    records = lines(out)
    sections = folder.read_pages(LIBRARY / "pages")[0]
    by_id = {s.id: s for s in sections}
    assert summary.written == len(records) == len(sections) and not summary.failed
    for record in records:
        assert record["kind"] == "direct" and record["split"] in ("dev", "test")
        assert record["id"].startswith("syn-direct-") and record["answer"]
        (label,) = record["relevant"]
        words = " ".join(by_id[label].text.split()[:8])
        assert record["question"] == f"What about {words}?"  # labelled with the passage it came from
        origin = record["provenance"]
        assert origin["model"] == "test-model" and origin["style"] == "direct"
        assert origin["source"]["ids"] == [label] and len(origin["prompt_hash"]) == 12
    assert {r["path"] for r in server.requests} == {"/v1/chat/completions"}
    assert set(server.formats()) == {"json_schema"}
    assert len(read_questions(out, sections)) == len(sections)

    run_cfg = make_config(f"dataset.questions={out}", "metrics.ks=[3,10,25]", "depth=25")
    result = pipeline.run(run_cfg, tmp_path / "run")
    table = pq.read_table(tmp_path / "run" / "results.parquet")
    assert result.n_questions == len(sections)
    assert {"rr", "ndcg@3", "ndcg@10", "ndcg@25", "hit@25"} <= set(table.column_names)
    assert result.means["hit@25"] > 0.9  # the questions copy their passages' words


@pytest.mark.slow
def test_cli_sends_the_key_only_in_the_authorization_header(server, tmp_path):
    out = tmp_path / "q.jsonl"
    done = run_cli(
        f"synth.base_url={server.url}", "synth.model=m", f"synth.out={out}", "dataset=folder",
        f"dataset.path={SITE}", f"hydra.run.dir={tmp_path / 'run'}",
        cwd=tmp_path, command="synth", env={"OPENAI_API_KEY": KEY},
    )
    assert done.returncode == 0, done.stderr
    assert "wrote 8 questions" in done.stdout
    assert {r["headers"].get("Authorization") for r in server.requests} == {f"Bearer {KEY}"}
    assert KEY not in done.stdout + done.stderr
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(".hydra" in p.parts for p in files) and out in files
    for path in files:
        assert KEY.encode() not in path.read_bytes(), path

    # the file is usable as is
    ran = run_cli(
        "dataset=folder", f"dataset.path={SITE}", f"dataset.questions={out}", "metrics.ks=[3,10,25]",
        "depth=25", f"hydra.run.dir={tmp_path / 'eval'}", cwd=tmp_path,
    )
    assert ran.returncode == 0, ran.stderr
    assert pq.read_table(tmp_path / "eval" / "results.parquet").num_rows == 8


@pytest.mark.slow
def test_a_refused_key_is_one_redacted_message_and_exit_2(server, tmp_path):
    server.respond = lambda body, attempt: error(401, f"Incorrect API key provided: {KEY}")
    done = run_cli(
        f"synth.base_url={server.url}", "synth.model=m", f"synth.out={tmp_path / 'q.jsonl'}",
        f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path, command="synth", env={"OPENAI_API_KEY": KEY},
    )
    assert done.returncode == 2
    assert "refused the request (HTTP 401" in done.stderr and "OPENAI_API_KEY" in done.stderr
    assert KEY not in done.stderr and "***" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_unreachable_server_is_one_message_and_exit_2(tmp_path):
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = run_cli(
        f"synth.base_url=http://127.0.0.1:{port}/v1", "synth.model=m", "synth.retries=1",
        "synth.backoff=0.01", f"synth.out={tmp_path / 'q.jsonl'}", f"hydra.run.dir={tmp_path / 'a'}",
        cwd=tmp_path, command="synth",
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"cannot reach http://127.0.0.1:{port}/v1/chat/completions" in done.stderr


@pytest.mark.slow
def test_config_checks(synth_config, monkeypatch):
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        bare = compose("synth", overrides=["synth.model=m"])
    with pytest.raises(ConfigError, match=r"synth.base_url is required and has no value"):
        generate(bare)
    with pytest.raises(ConfigError) as caught:
        generate(synth_config("synth.concurrency=0", "synth.per_section=0",
                              "synth.dev_fraction=1.5", "synth.limit=0", "synth.timeout=0"))
    text = "\n".join(caught.value.problems)
    for key in ("concurrency", "per_section", "dev_fraction", "limit", "timeout"):
        assert f"synth.{key}=" in text
    with pytest.raises(ConfigCompositionException, match=r"(?s)synth.unit.*page"):  # an Enum field: Hydra refuses it
        synth_config("synth.unit=page")
    with pytest.raises(ConfigError, match="use an http:// or https:// URL"):
        generate(synth_config("synth.base_url=localhost:11434"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY .* is not set"):
        generate(synth_config("synth.base_url=https://api.example.com/v1"))
    with pytest.raises(ConfigError, match="the dataset's own questions file"):
        generate(synth_config(*site_cfg(), f"synth.out={SITE / 'questions.jsonl'}"))


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
@pytest.mark.slow
def test_a_non_finite_number_is_refused_before_any_request(synth_config, server, value):
    with pytest.raises(ConfigError) as caught:
        generate(synth_config(f"synth.temperature={value}", f"synth.backoff={value}"))
    text = "\n".join(caught.value.problems)
    assert f"synth.temperature={float(value)}: out of range; use a number in [0, 2]" in text
    assert f"synth.backoff={float(value)}: out of range; use a number in [0, 3600]" in text
    assert not server.requests


def test_a_job_failing_at_its_first_request_leaves_no_file(synth_config, server, tmp_path):
    """A refused key stops the job before any question: neither the file nor the folder
    made for it stays behind; a file that was there before is left alone."""
    server.respond = lambda body, attempt: error(401, "bad key")
    out = tmp_path / "new" / "folder" / "q.jsonl"
    with pytest.raises(ServerError, match="refused the request"):
        generate(synth_config(*site_cfg(), f"synth.out={out}"), progress=False)
    assert server.requests and not (tmp_path / "new").exists()
    out.parent.mkdir(parents=True)
    out.write_bytes(b"")
    with pytest.raises(ServerError):
        generate(synth_config(*site_cfg(), f"synth.out={out}"), progress=False)
    assert out.is_file()  # the user's own (empty) file stays


def heading_quoting(alone: bool):
    """A model quoting each passage as the prompt shows it: its ``Heading:`` line, then
    (unless ``alone``) the first sentence; one plain quote beside the heading alone."""
    def respond(body, attempt):
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        shown = PASSAGE.findall(user)
        assert all(heading for heading, _ in shown)  # every section of the site has one
        quotes = [f"Heading: {h}" if alone else f"Heading: {h}\n{first_sentence(t)}" for h, t in shown]
        if alone:
            quotes += [first_sentence(t) for _, t in shown]
        content = json.loads(good_content(body))
        return chat_reply(json.dumps({**content, "quotes": quotes}))
    return respond


@pytest.mark.parametrize("alone", [False, True])
def test_a_quote_of_the_shown_heading_passes_the_check(synth_config, server, tmp_path, alone):
    """The prompt shows each passage's heading on a ``Heading:`` line: a model quoting it
    is answered at once (no re-ask), and its quote located by the text after the heading:
    the same spans as a reply quoting the sentence alone."""
    plain = generate(synth_config(*site_cfg(), f"synth.out={tmp_path / 'plain.jsonl'}"), progress=False)
    asked = len(server.requests)
    server.respond = heading_quoting(alone)
    quoting = generate(synth_config(*site_cfg(), f"synth.out={tmp_path / 'heading.jsonl'}",
                                    f"synth.cache_dir={tmp_path / 'other-cache'}"), progress=False)
    assert quoting.written == plain.written == 8
    assert len(server.requests) - asked == 8  # each question asked once: no reply refused
    want = {r["id"]: r["spans"] for r in lines(plain.path)}
    assert {r["id"]: r["spans"] for r in lines(quoting.path)} == want
    assert all(span for span in want.values())


def test_heading_quotes_are_located_by_what_follows_the_heading():
    text = "The library opens at nine. It closes at five."
    source = Source("hours", 100, text, "Opening hours")
    assert locate_quotes(["Heading: Opening hours\nThe library opens at nine."], [source]) == (
        [{"page": "hours", "start": 100, "end": 126}], None)
    assert locate_quotes(["Opening  hours The library opens at nine."], [source])[0] == [
        {"page": "hours", "start": 100, "end": 126}]
    assert locate_quotes(["Heading: Opening hours"], [source]) == ([], None)  # quoted, no span
    spans, problem = locate_quotes(["Heading: Closing hours"], [source])
    assert spans == [] and "is not in the passage" in problem
    assert "is not in the passage" in locate_quotes(["Heading: Opening hours"], [Source("p", 0, text)])[1]
    assert without_heading("Opening hours are long", "Opening hours") == "are long"
    assert without_heading("Opening hoursX", "Opening hours") == "Opening hoursX"


# ----------------------------------------------------------------- structured output and retries


def test_json_schema_rejected_falls_back_to_json_object_once(synth_config, server):
    def respond(body, attempt):
        if body["response_format"]["type"] == "json_schema":
            return error(400, "response_format type json_schema is not supported by this model")
        return None

    server.respond = respond
    summary = generate(synth_config(*site_cfg(), "synth.concurrency=1"), progress=False)
    assert summary.written == 8 and summary.mode == "json_object"
    assert server.formats() == ["json_schema"] + ["json_object"] * 8  # remembered after the first 400


def test_no_json_mode_at_all_falls_back_to_plain_prompt(synth_config, server):
    def respond(body, attempt):
        if "response_format" in body:
            return error(400, f"unknown field response_format {body['response_format']['type']}")
        return chat_reply("Sure! Here it is:\n```json\n" + good_content(body) + "\n```")

    server.respond = respond
    summary = generate(synth_config(*site_cfg(), "synth.concurrency=1"), progress=False)
    assert summary.written == 8 and summary.mode == "none"
    assert server.formats()[:3] == ["json_schema", "json_object", None]


def flaky(body, attempt):
    """429, 500, malformed JSON, a reply missing 'answer', then a good reply."""
    if attempt == 1:
        return error(429, "slow down", {"Retry-After": "0"})
    if attempt == 2:
        return error(500, "boom")
    if attempt == 3:
        return chat_reply('{"question": "unterminated')
    if attempt == 4:
        return chat_reply(json.dumps({"question": "What?"}))
    return None


@pytest.mark.slow
def test_429_500_and_malformed_replies_are_retried(synth_config, server):
    server.respond = flaky
    summary = generate(synth_config(*site_cfg(), "synth.retries=4"), progress=False)
    assert summary.written == 8 and not summary.failed
    assert summary.requests == len(server.requests) == 8 * 5
    assert all(record["answer"] for record in lines(summary.path))


def test_retries_are_bounded_and_a_failing_section_is_skipped(synth_config, server, capsys):
    bad = "Riders must be 16"  # safety#safety

    def respond(body, attempt):
        return chat_reply("I cannot answer in JSON, sorry.") if bad in passages_of(body)[0] else None

    server.respond = respond
    summary = generate(synth_config(*site_cfg(), "synth.retries=2"), progress=True)  # bar on
    err = capsys.readouterr().err
    assert "skipped section 'safety#safety'" in err and "not a JSON object" in err and "3 attempts" in err
    assert summary.failed and summary.failed[0][0] == "safety#safety"
    records = lines(summary.path)
    assert len(records) == summary.written == 7
    assert "safety#safety" not in {r["relevant"][0] for r in records}
    assert sum(bad in passages_of(r["body"])[0] for r in server.requests) == 3  # 1 + retries


def test_the_old_name_max_retries_is_read_as_retries_with_a_notice(synth_config, server):
    bad = "Riders must be 16"

    def respond(body, attempt):
        return chat_reply("I cannot answer in JSON, sorry.") if bad in passages_of(body)[0] else None

    server.respond = respond
    with pytest.warns(RecevalWarning, match=r"synth\.max_retries is deprecated: it is read as synth\.retries=1"):
        summary = generate(synth_config(*site_cfg(), "synth.max_retries=1"), progress=False)
    assert summary.failed and sum(bad in passages_of(r["body"])[0] for r in server.requests) == 2  # 1 + 1


def test_many_failures_in_a_row_stop_the_job(synth_config, server):
    server.respond = lambda body, attempt: error(503, "overloaded")
    with pytest.raises(RecevalError, match="stopped after 3 sections failed in a row"):
        generate(synth_config(*site_cfg(), "synth.retries=1", "synth.max_failures=3",
                              "synth.concurrency=1"), progress=False)
    assert len(server.requests) == 3 * 2


def client_for(server, **kw) -> ChatClient:
    return ChatClient(server.url, "m", None, **{"backoff": 0.001, "max_backoff": 0.01, **kw})


def ask(client: ChatClient, text: str = "A short passage about bikes.") -> dict:
    messages = build_messages("direct", [Unit("p#s", "p#s", "p", "P > S", text)], [])
    return client.complete_json(messages, QA_SCHEMA, validate_reply)


def test_retry_after_is_honoured_up_to_max_backoff(server):
    waits: list[float] = []
    hints = {1: "7", 2: "1000", 3: "Wed, 21 Oct 2015 07:28:00 GMT"}
    server.respond = lambda body, attempt: error(429, "later", {"Retry-After": hints[attempt]}) if attempt <= 3 else None
    client = ChatClient(server.url, "m", None, backoff=0.5, max_backoff=30, sleep=waits.append)
    assert ask(client)["question"].startswith("What about A short passage")
    assert waits == [7.0, 30.0, 2.0]  # the hint; capped; an HTTP date keeps the backoff (0.5 * 2**2)
    assert client.retries == 3


def test_a_slow_answer_times_out_and_is_retried(server):
    def respond(body, attempt):
        if attempt == 1:
            time.sleep(0.6)
        return None

    server.respond = respond
    client = client_for(server, timeout=0.2)
    assert ask(client)["answer"]
    assert client.retries == 1 and len(server.requests) == 2


def test_a_slow_server_fails_the_item_after_the_retries(server):
    server.respond = lambda body, attempt: time.sleep(0.4)
    client = client_for(server, timeout=0.1, max_retries=1)
    with pytest.raises(ReplyError, match="gave up after 2 attempts; last: no answer within synth.timeout=0.1s"):
        ask(client)


def test_unknown_model_is_a_server_error(server):
    server.respond = lambda body, attempt: error(404, 'model "m" not found, try pulling it first')
    with pytest.raises(ServerError, match="synth.model='m'"):
        ask(client_for(server))
    assert len(server.requests) == 1  # not retried


def test_other_4xx_fails_the_item_without_retrying(server):
    server.respond = lambda body, attempt: error(400, "this passage exceeds the context length")
    with pytest.raises(ReplyError, match="HTTP 400 Bad Request: .*context length"):
        ask(client_for(server))
    assert len(server.requests) == 1


def test_parse_json_object_accepts_fences_and_prose():
    assert parse_json_object('{"question": "a", "answer": "b"}') == {"question": "a", "answer": "b"}
    assert parse_json_object('```json\n{"question": "a"}\n```') == {"question": "a"}
    assert parse_json_object('Here you go: {"question": "a"} hope it helps') == {"question": "a"}
    assert parse_json_object("[1, 2]") is None and parse_json_object("no json") is None
    assert validate_reply({"question": " ", "answer": "b"}) == "'question' is missing or not a non-empty string"
    assert validate_reply({"question": "q", "answer": 3}) is not None
    assert validate_reply({"question": "q", "answer": "a", "quotes": ["a"], "extra": 1}) is None
    assert validate_reply({"question": "q", "answer": "a"}).startswith("'quotes' is missing")
    assert validate_reply({"question": "q", "answer": "a", "quotes": [" "]}).startswith("'quotes' is missing")
    assert validate_reply({"question": "? ...", "answer": "a", "quotes": ["a"]}) == "the question has no words: '? ...'"


# ----------------------------------------------------------------- resuming


def test_resume_skips_done_sections_and_drops_a_truncated_last_line(synth_config, server, capsys):
    cfg = synth_config(*site_cfg())
    first = generate(cfg, progress=False)
    out = first.path
    full = out.read_bytes().splitlines(keepends=True)
    assert first.written == len(full) == 8 and len(server.requests) == 8

    # a crash mid-write: 5 whole lines, then half of the sixth
    out.write_bytes(b"".join(full[:5]) + full[5][: len(full[5]) // 2])
    server.requests.clear()
    again = generate(cfg, progress=False)
    assert "dropped an incomplete last line" in capsys.readouterr().err
    # the 3 lost questions' answers are replayed from the cache: no request, the same questions
    assert again.already == 5 and again.written == 3 and not server.requests and again.replayed == 3
    records = lines(out)
    assert sorted(r["id"] for r in records) == sorted(json.loads(line)["id"] for line in full)
    assert {r["id"]: r["question"] for r in records} == {
        json.loads(line)["id"]: json.loads(line)["question"] for line in full}
    assert len(read_questions(out, site_sections())) == 8

    # a complete but unterminated last line is kept and terminated
    out.write_bytes(out.read_bytes().rstrip(b"\n"))
    server.requests.clear()
    third = generate(cfg, progress=False)
    assert third.already == 8 and third.written == 0 and not server.requests
    assert out.read_bytes().endswith(b"}\n") and len(lines(out)) == 8


def test_a_damaged_line_inside_the_file_is_an_error_naming_it(synth_config, server):
    cfg = synth_config(*site_cfg())
    out = generate(cfg, progress=False).path
    text = out.read_text().splitlines()
    text[2] = text[2][:10]
    out.write_text("\n".join(text) + "\n")
    with pytest.raises(DatasetError, match=r"syn\.jsonl:3: not a valid JSON line"):
        generate(cfg, progress=False)


@pytest.mark.slow
def test_larger_limit_and_per_section_only_add(synth_config, server):
    generate(synth_config("synth.limit=10"), progress=False)
    server.requests.clear()
    summary = generate(synth_config("synth.limit=20", "synth.per_section=2"), progress=False)
    assert summary.already == 10 and summary.written == 30 and len(server.requests) == 30
    records = lines(summary.path)
    assert len({r["id"] for r in records}) == 40
    by_label: dict[str, list[dict]] = {}
    for record in records:
        by_label.setdefault(record["relevant"][0], []).append(record)
    assert len(by_label) == 20 and all(len(v) == 2 for v in by_label.values())
    for pair in by_label.values():  # the second question was asked knowing the first
        assert {r["provenance"]["source"]["n"] for r in pair} == {0, 1}
        second = next(r for r in pair if r["provenance"]["source"]["n"] == 1)
        assert second["question"].endswith("(variant 1)")


# ----------------------------------------------------------------- styles, units, ids


def test_multi_pairs_sections_of_the_same_page_when_it_can(synth_config, server):
    summary = generate(synth_config(*site_cfg(), "synth.style=multi"), progress=False)
    records = lines(summary.path)
    units = make_units(site_sections())
    pairs = {(u.id, v.id) for u, v in ((u, pick_partners(units, units, 0)[u.id]) for u in units)}
    reversed_twice = sum((b, a) in pairs for a, b in pairs) // 2
    # the server's question for (b, a) has the words of (a, b)'s: the second is a near-duplicate, asked
    # again 1 + retries (5) times (this server's variant does not change the words enough), then dropped
    assert reversed_twice >= 1 and summary.duplicates == 5 * reversed_twice
    assert summary.repeats_dropped == reversed_twice
    assert len(records) == summary.written == 8 - reversed_twice
    for record in records:
        a, b = record["relevant"]
        assert a != b and a.split("#")[0] == b.split("#")[0]  # both pages have several sections
        assert record["kind"] == "multi" and record["id"].startswith("syn-multi-")
        assert record["provenance"]["source"]["ids"] == [a, b]
        assert [span["page"] for span in record["spans"]] == [a.split("#")[0]] * 2  # a quote from each
    user = server.requests[0]["body"]["messages"][-1]["content"]
    assert user.count("<passage>") == 2 and "both passages" in user and "one quote from each" in user
    assert len(read_questions(summary.path, site_sections())) == len(records)


def test_partners_do_not_depend_on_the_sample():
    sections = folder.read_pages(LIBRARY / "pages")[0]
    units = make_units(sections)
    small = pick_partners(select_units(units, 10, 3), units, 3)
    large = pick_partners(select_units(units, 40, 3), units, 3)
    assert small and all(large[k] == v for k, v in small.items())
    lonely = [Unit("a#x", "a#x", "a", "A", "text a"), Unit("b#y", "b#y", "b", "B", "text b")]
    assert pick_partners(lonely, lonely, 0) == {"a#x": lonely[1], "b#y": lonely[0]}  # another page
    with pytest.raises(DatasetError, match="fewer than two"):
        pick_partners(lonely[:1], lonely[:1], 0)


def test_sample_is_a_seeded_prefix_in_dataset_order():
    units = make_units(folder.read_pages(LIBRARY / "pages")[0])
    ten, twenty = select_units(units, 10, 0), select_units(units, 20, 0)
    assert set(u.id for u in ten) <= set(u.id for u in twenty)
    order = {u.id: i for i, u in enumerate(units)}
    assert [order[u.id] for u in twenty] == sorted(order[u.id] for u in twenty)
    assert select_units(units, 10, 1) != ten and select_units(units, None, 0) == units


def test_chunk_units_label_sections(synth_config, server):
    summary = generate(synth_config(*site_cfg(), "synth.unit=chunk", "chunking.max_words=8"), progress=False)
    records = lines(summary.path)
    known = {s.id for s in site_sections()}
    assert len(records) > 8  # long sections give several chunks
    for record in records:
        (label,) = record["relevant"]
        (source,) = record["provenance"]["source"]["ids"]
        assert label in known and source.startswith(label + "@")


def test_paraphrase_prompt_asks_for_other_words(synth_config, server):
    summary = generate(synth_config(*site_cfg(), "synth.style=paraphrase", "synth.limit=2"), progress=False)
    assert summary.written == 2
    user = server.requests[0]["body"]["messages"][-1]["content"]
    assert "Do not reuse the passage's distinctive words" in user
    assert {r["kind"] for r in lines(summary.path)} == {"paraphrase"}


def test_ids_and_splits_are_deterministic():
    qid = record_id("direct", ["fines#daily-rates"], 0)
    assert qid == record_id("direct", ["fines#daily-rates"], 0) != record_id("direct", ["fines#daily-rates"], 1)
    assert re.fullmatch(r"syn-direct-[0-9a-f]{16}", qid)
    ids = [record_id("direct", [f"p#{i}"], 0) for i in range(2000)]
    share = sum(split_of(i, 0.3) == "dev" for i in ids) / len(ids)
    assert 0.26 < share < 0.34
    assert {split_of(i, 0.0) for i in ids} == {"test"} and {split_of(i, 1.0) for i in ids} == {"dev"}


def test_long_passages_are_cut_in_the_prompt():
    unit = Unit("p#s", "p#s", "p", "", " ".join(f"w{i}" for i in range(100)))
    user = build_messages("direct", [unit], ["Q1?"], max_words=10)[1]["content"]
    assert "w9 ..." in user and "w10" not in user and "Heading:" not in user
    assert "- Q1?" in user


def test_conf_ships_the_synth_configs():
    assert (ROOT / "conf" / "synth.yaml").is_file() and (ROOT / "conf" / "synth" / "default.yaml").is_file()


def test_sections_are_read_by_the_dataset_loaders_without_questions(tmp_path):
    """synth reads sections through receval.datasets: a folder without questions.jsonl
    and a BEIR folder holding only corpus.jsonl both give their sections."""
    from types import SimpleNamespace

    from receval.datasets import load_dataset, load_sections, questions_path

    site = SimpleNamespace(name="site", format="folder", path=str(SITE), questions=None)
    shutil.copytree(SITE / "pages", tmp_path / "bare" / "pages")
    bare = SimpleNamespace(name="bare", format="folder", path=str(tmp_path / "bare"), questions=None)
    assert load_sections(bare) == load_dataset(site).sections
    assert questions_path(site) == SITE / "questions.jsonl"

    (tmp_path / "b").mkdir()
    rows = [{"_id": "d1", "title": "Fines", "text": "Ten cents a day."}, {"_id": "d2", "title": "", "text": "Open late."}]
    (tmp_path / "b" / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    beir = SimpleNamespace(name="b", format="beir", path=str(tmp_path / "b"), questions=None, title=True, split=None)
    assert [s.id for s in load_sections(beir)] == ["d1", "d2"]
    with pytest.raises(DatasetError, match="corpus.jsonl: not found"):
        load_sections(SimpleNamespace(format="beir", path=str(tmp_path), title=True))
