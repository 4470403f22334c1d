"""Synthetic questions worth keeping: near-duplicates dropped, a broken server's set
refused, and the quote (not the generating chunk) as the label, so a chunk-size sweep
is not biased toward the size that generated the questions. Against the loopback
chat server of :mod:`chatserver`."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from chatserver import ChatServer, chat_reply, first_sentence, passages_of, same_question
from conftest import FIXTURES, run_of
from hydra import compose, initialize_config_dir

from receval.run.config import config_dir, register_synth
from receval.core.errors import RecevalError
from receval.synth import generate
from receval.synth.dedup import JACCARD, QuestionSet, Verdict, jaccard, words

register_synth()
SITE = FIXTURES / "site"


@pytest.fixture
def server():
    chat = ChatServer()
    chat.thread.start()
    yield chat
    chat.httpd.shutdown()
    chat.httpd.server_close()


@pytest.fixture
def synth_config(server, tmp_path):
    def _compose(*overrides: str):
        base = [
            f"synth.base_url={server.url}", "synth.model=test-model", f"synth.out={tmp_path / 'syn.jsonl'}",
            "synth.backoff=0.001", "synth.max_backoff=0.01", "synth.concurrency=2",
            f"synth.cache_dir={tmp_path / 'cache'}",  # answers of this test's server only
        ]
        with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
            return compose("synth", overrides=[*base, *overrides])

    return _compose


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# ----------------------------------------------------------------- near-duplicates


def test_words_and_the_near_duplicate_rule():
    assert words("What is a FINE?") == words("what is a fine") == {"what", "is", "a", "fine"}
    assert words("Ｗｈａｔ ｉｓ") == {"what", "is"}  # NFKC: full-width letters are letters
    assert words("? ... !") == frozenset()
    same = QuestionSet()
    assert same.claim("How much is the late fine for a book?") is None
    assert same.claim("how much is the late fine for a book") == "How much is the late fine for a book?"
    assert same.claim("For a book, how much is the late fine?") is not None  # the same words, reordered
    # 8 shared of 10 words: Jaccard 0.8, kept
    assert same.claim("How much is the late fine for a DVD?") is None
    # 10 shared of 11: Jaccard 0.909 >= 0.9, dropped
    long = "When does the library on Mill Street open its doors on Saturdays"
    assert same.claim(long) is None and same.claim(long + " morning") == long
    assert len(same) == 3


@pytest.mark.slow
def test_the_prefix_filter_finds_exactly_what_comparing_every_pair_finds():
    """The index is exact: against brute force over every kept question, on random
    questions built to sit near the 0.9 threshold."""
    rng = random.Random(3)
    vocabulary = [f"w{i}" for i in range(60)]
    kept, index = [], QuestionSet()
    for _ in range(700):
        base = rng.sample(vocabulary, rng.randint(1, 14))
        if kept and rng.random() < 0.5:  # a variant of a kept question: a word swapped, added or dropped
            base = sorted(rng.choice(kept))
            move = rng.choice(["add", "drop", "swap"])
            if move in ("drop", "swap") and len(base) > 1:
                base.pop(rng.randrange(len(base)))
            if move in ("add", "swap"):
                base.append(rng.choice(vocabulary))
        question = " ".join(base)
        brute = next((k for k in kept if jaccard(words(question), k) >= JACCARD), None)
        found = index.claim(question)
        assert (found is None) == (brute is None), question
        if found is None:
            kept.append(words(question))
        else:
            assert jaccard(words(found), words(question)) >= JACCARD
    assert 150 < len(kept) < 650  # both outcomes were exercised


@pytest.mark.slow
def test_a_broken_server_repeating_one_question_is_refused_early(synth_config, server):
    """The incident: a server answered every passage with one question and 91 were
    accepted. Now the repeats are dropped and the set is refused once 20 replies
    are in, so the job stops long before 91 requests."""
    server.respond = same_question
    with pytest.raises(RecevalError) as raised:
        generate(synth_config("synth.limit=91"), progress=False)
    message = str(raised.value)
    assert "refused the generated questions:" in message
    assert "replies repeated a question already in the set ('What is this about?' came back" in message
    assert "check the server and synth.model" in message
    (kept,) = lines(Path(synth_config().synth.out))  # the one distinct question stays, said so
    assert kept["question"] == "What is this about?"
    assert f"The 1 distinct question is kept in {synth_config().synth.out}" in message
    assert 20 <= len(server.requests) <= 24  # stopped at the first judgement (2 in flight)


@pytest.mark.slow
def test_empty_questions_count_towards_the_refusal(synth_config, server):
    def respond(body, attempt):
        texts = passages_of(body)
        return chat_reply(json.dumps({"question": " ? ", "answer": "a", "quotes": [first_sentence(texts[0])]}))

    server.respond = respond
    with pytest.raises(RecevalError, match=r"0 of 16 replies repeated a question .* and 16 had no words.* Nothing was written; rerun once"):
        generate(synth_config("dataset=folder", f"dataset.path={SITE}", "synth.retries=1"), progress=False)
    assert not Path(synth_config().synth.out).exists()  # nothing kept: no file left


def test_a_few_duplicates_are_asked_again_then_dropped_with_a_count(synth_config, server, capsys):
    def respond(body, attempt):  # two of the eight sections get the same question, whatever is asked
        texts = passages_of(body)
        if texts[0].startswith(("A single ride", "Riders must be")):
            return chat_reply(json.dumps({"question": "What does it cost?", "answer": "a", "quotes": [first_sentence(texts[0])]}))
        return None

    server.respond = respond
    cfg = synth_config("dataset=folder", f"dataset.path={SITE}", "synth.retries=2")
    summary = generate(cfg, progress=False)
    # the repeating section is asked 1 + retries = 3 times, each reply a repeat, then dropped
    assert summary.written == 7 and summary.duplicates == 3 and summary.repeats_dropped == 1 and not summary.failed
    err = capsys.readouterr().err
    assert "3 replies repeated a question already in the set (same words, or word-set Jaccard >= 0.9) and were " \
           "asked again; 1 questions still repeated after 3 attempts and were dropped" in err
    assert sum(r["question"] == "What does it cost?" for r in lines(summary.path)) == 1
    assert summary.counts.line() == "10 requests sent, 7 of 8 questions usable, 1 failed (last: every reply " \
                                    "repeated a question already in the set (3 attempts))"
    # the later attempts list the repeated question as already written, so a model is told to write another
    asked_again = [r["body"]["messages"][-1]["content"] for r in server.requests
                   if "What does it cost?" in r["body"]["messages"][-1]["content"]]
    assert len(asked_again) == 2 and all("- What does it cost?" in text for text in asked_again)
    # a rerun replays the dropped one's 3 attempts from the cache (each attempt its own entry) and drops
    # it again: questions already in the file count
    server.requests.clear()
    with pytest.raises(RecevalError, match=r"receval.synth: nothing usable came back: 0 requests sent \(3 answers "
                                           r"replayed from the cache\), 0 of 1 questions usable, 1 failed "
                                           r".*The 7 questions in .* are kept"):
        generate(cfg, progress=False)
    assert not server.requests


def test_a_repeat_asked_again_gets_a_distinct_question(synth_config, server):
    """A model that repeats itself until told which question it repeated (the default server
    then writes a variant): no section loses its question."""
    def respond(body, attempt):
        texts = passages_of(body)
        if texts[0].startswith("Riders must be") and "Questions already written" not in body["messages"][-1]["content"]:
            return chat_reply(json.dumps({"question": "What does a single ride cost?", "answer": "a",
                                          "quotes": [first_sentence(texts[0])]}))
        if texts[0].startswith("A single ride") and "Questions already written" not in body["messages"][-1]["content"]:
            return chat_reply(json.dumps({"question": "What does a single ride cost?", "answer": "a",
                                          "quotes": [first_sentence(texts[0])]}))
        return None

    server.respond = respond
    summary = generate(synth_config("dataset=folder", f"dataset.path={SITE}", "synth.concurrency=1"), progress=False)
    assert summary.written == 8 and summary.duplicates == 1 and summary.repeats_dropped == 0 and summary.lost == 0


def test_the_verdict_rule():
    verdict = Verdict(kept=10, duplicates=10)
    assert verdict.refusal() is None  # half is not most
    verdict.count("empty")
    assert verdict.refusal().startswith("10 of 21 replies repeated a question already in the set and 1 had no words")
    assert verdict.refusal(at_least=22) is None  # not judged before that many replies


# ----------------------------------------------------------------- the label is the quote


@pytest.mark.slow
def test_a_chunk_size_sweep_is_not_biased_toward_the_generating_size(synth_config, server, tmp_path, tmp_path_factory):
    """Questions written from 40-word chunks of the library. Labelled with the whole
    chunk (what synth wrote before), 40-word chunks score MRR 0.975 and 20-word ones
    0.757: a 20-word chunk covers half the label at best. Labelled with the quote,
    both sizes score alike; at 40 words no question loses (the quote is inside the
    chunk that was the whole label)."""
    summary = generate(synth_config("synth.unit=chunk", "chunking.max_words=40", "synth.limit=60"), progress=False)
    records = lines(summary.path)
    assert len(records) == summary.written == 60
    shorter = 0
    for record in records:
        (span,) = record["spans"]
        (source,) = record["provenance"]["source"]["spans"]
        assert source["start"] <= span["start"] < span["end"] <= source["end"]
        shorter += span["end"] - span["start"] < source["end"] - source["start"]
    assert shorter >= 50  # a quote, not the chunk (a chunk with no full stop is quoted whole)
    # one file, one run per size: each question as written, and again (id + "~chunk")
    # labelled as before, with the generating chunk
    both = tmp_path / "both.jsonl"
    whole = [{**r, "id": r["id"] + "~chunk", "spans": r["provenance"]["source"]["spans"]} for r in records]
    both.write_text("".join(json.dumps(r) + "\n" for r in records + whole))
    rr = {}
    for size in (20, 40):
        run_dir = run_of(tmp_path_factory, f"dataset.questions={both}", f"chunking.max_words={size}", "retriever=bm25")
        table = pq.read_table(run_dir / "results.parquet").to_pydict()
        for qid, value in zip(table["question_id"], table["rr"]):
            label = "chunk" if qid.endswith("~chunk") else "quote"
            rr.setdefault((label, size), {})[qid.removesuffix("~chunk")] = value
    mean = {key: sum(values.values()) / len(values) for key, values in rr.items()}
    assert mean["chunk", 40] - mean["chunk", 20] > 0.15  # the bias (0.975 against 0.757)
    assert abs(mean["quote", 40] - mean["quote", 20]) < 0.05  # gone (0.975 against 0.956)
    assert mean["quote", 20] - mean["chunk", 20] > 0.15  # 20 words lost for the label alone
    assert all(rr["quote", 40][q] >= rr["chunk", 40][q] for q in rr["chunk", 40])


# ----------------------------------------------------------------- the report's note


def test_units_per_question_counts_evidence_items_else_graded_sections():
    import pyarrow as pa

    from receval.analysis.units import units_per_question

    relevant = pa.array([["a#x"], ["a#x", "b#y"], ["a#x", "essay:0-40"], ["essay:0-40", "essay:90-120"], [], None])
    grades = pa.array([[1], [2, 0], [1, 1], [1, 1], [], None], pa.list_(pa.int32()))
    assert units_per_question(relevant, grades).tolist() == [1, 1, 1, 2, 0, 0]  # grade 0 is no label


@pytest.mark.slow
def test_a_set_with_one_label_per_question_gets_the_note(synth_config, server, tmp_path_factory):
    from receval.cli.report import report_for
    from receval.render.report import render
    from receval.analysis.units import ONE_LABEL

    summary = generate(synth_config("dataset=folder", f"dataset.path={SITE}"), progress=False)
    run_dir = run_of(tmp_path_factory, "dataset=folder", f"dataset.path={SITE}", f"dataset.questions={summary.path}",
                     "metrics.ks=[1,3]", "depth=3", "chunking.max_words=8")
    report = report_for([str(run_dir), "--metrics", "hit@3,recall@3,precision@3"])
    assert report.questions["notes"] == [ONE_LABEL]
    from receval.render import html

    assert f"note: {ONE_LABEL}" in render(report, "table") and f"note: {ONE_LABEL}" in html.render(report)
    assert report.to_dict()["questions"]["notes"] == [ONE_LABEL]
    table = pq.read_table(run_dir / "results.parquet").to_pydict()
    for k in (1, 3):  # what the note says, on every question
        assert table[f"recall@{k}"] == table[f"hit@{k}"]
        assert max(table[f"precision@{k}"]) <= 1 / k
    # one question with two labels, and the note is gone
    records = lines(summary.path)
    records[0]["spans"].append({**records[1]["spans"][0]})
    two = summary.path.with_name("two.jsonl")
    two.write_text("".join(json.dumps(r) + "\n" for r in records))
    other = run_of(tmp_path_factory, "dataset=folder", f"dataset.path={SITE}", f"dataset.questions={two}",
                   "metrics.ks=[1,3]", "depth=3", "chunking.max_words=8")
    assert report_for([str(other)]).questions["notes"] == []
    assert report_for([str(run_dir), str(other)]).questions["notes"] == []
    assert report_for([str(run_dir), "--where", f"question_id={records[1]['id']}"]).questions["notes"] == [ONE_LABEL]


# ----------------------------------------------------------------- the cached-call layer


def test_a_rerun_replays_every_attempt_from_the_cache_and_writes_the_same_questions(synth_config, server):
    """Synth asks through the cached-call layer: a re-ask (a reply that repeated a kept question)
    is its own entry, so the first run's re-ask is sent and gets a new question, and a rerun
    into a new file sends nothing and writes the same questions, the re-asked one included."""
    def respond(body, attempt):  # two sections get one question until told it is written
        texts = passages_of(body)
        if texts[0].startswith(("Riders must be", "A single ride")) and \
                "Questions already written" not in body["messages"][-1]["content"]:
            return chat_reply(json.dumps({"question": "What does a single ride cost?", "answer": "a",
                                          "quotes": [first_sentence(texts[0])]}))
        return None

    server.respond = respond
    cfg = synth_config("dataset=folder", f"dataset.path={SITE}", "synth.concurrency=1")
    first = generate(cfg, progress=False)
    assert first.written == 8 and first.duplicates == 1 and len(server.requests) == 9 and first.replayed == 0
    written = {r["id"]: r["question"] for r in lines(first.path)}
    assert len(set(written.values())) == 8

    first.path.unlink()
    server.requests.clear()
    again = generate(cfg, progress=False)
    assert not server.requests and again.requests == 0 and again.replayed == 9
    assert again.written == 8 and again.duplicates == 1
    assert {r["id"]: r["question"] for r in lines(again.path)} == written
    assert again.counts.line() == "0 requests sent (9 answers replayed from the cache), 8 of 8 questions usable"


def test_two_servers_with_one_model_name_and_one_cache_are_both_asked(synth_config, server, tmp_path):
    """The cache is keyed by the endpoint: another server serving the same model name is asked,
    and its own questions are written."""
    other = ChatServer()
    other.thread.start()
    try:
        def respond(body, attempt):
            texts = passages_of(body)
            return chat_reply(json.dumps({"question": f"Server B asks: {' '.join(texts[0].split()[:6])}?",
                                          "answer": "a", "quotes": [first_sentence(texts[0])]}))

        other.respond = respond
        site = ("dataset=folder", f"dataset.path={SITE}", "synth.concurrency=1")
        a = generate(synth_config(*site), progress=False)
        b = generate(synth_config(*site, f"synth.base_url={other.url}", f"synth.out={tmp_path / 'b.jsonl'}"),
                     progress=False)
    finally:
        other.httpd.shutdown()
        other.httpd.server_close()
    assert len(server.requests) == 8 and len(other.requests) == 8 and b.replayed == 0
    assert not any(r["question"].startswith("Server B") for r in lines(a.path))
    assert all(r["question"].startswith("Server B asks: ") for r in lines(b.path)) and len(lines(b.path)) == 8
