"""Long runs say what they do and lose nothing (issue 22, section 5).

Progress lines when stderr is not a terminal (in-process, with a tiny interval),
embeddings saved group by group and a run killed mid-encode resumed from the last
group saved (a real SIGKILL of ``receval`` against a loopback embeddings
API), the warning about chunks a model cut, the machine facts in ``run.json``, the
warm-up before timing, and the report's warning about latencies measured under very
different load.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import warnings
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow.parquet as pq
import pytest

from receval.core import machine, progress
from receval.encoders import EmbeddingCache, embed, text_key
from receval.encoders import base
from receval.core.errors import RecevalError, RecevalWarning
from receval.run.facts import stage_facts
from receval.retrievers.dense import Dense
from receval.results.format import RESULTS, RUN_JSON
from conftest import loopback, run_cli, run_of
from forge import forged

DIM = 8


def vector(text: str) -> list[float]:
    """The fake model's embedding of a text: deterministic, from its hash."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(DIM).astype(np.float32).tolist()


class Fake:
    """An encoder that records what it encodes; ``stop_after`` groups, it raises (a crash)."""

    label = "fake"
    identity = {"recipe": 1, "backend": "fake", "model": "fake-8"}
    api_calls = 0
    threads = None

    def load(self):
        pass

    def __init__(self, batch_size: int = 2, stop_after: int | None = None, model_info=None):
        self.batch_size, self.stop_after, self.calls = batch_size, stop_after, 0
        self.seen: list[str] = []
        if model_info is not None:
            self.model_info = model_info

    def encode(self, texts, on_progress=None):
        if self.stop_after is not None and self.calls >= self.stop_after:
            raise KeyboardInterrupt  # what a kill looks like from inside
        self.calls += 1
        self.seen.extend(texts)
        for start in range(0, len(texts), self.batch_size):
            if on_progress:
                on_progress(len(texts[start : start + self.batch_size]))
        return np.asarray([vector(t) for t in texts], np.float32).reshape(len(texts), DIM)


TEXTS = [f"text number {i} about {'loans fines hours rooms'.split()[i % 4]}" for i in range(70)]


# --------------------------------------------------------------------------- progress


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_plain_lines_off_a_terminal_at_most_every_interval_with_rate_and_time_left(monkeypatch, capsys):
    clock = Clock()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    with progress.Progress("encoding with fake", 10, unit="texts", every=10) as line:
        for _ in range(10):  # one text every 3 s
            clock.now += 3
            line.advance()
    lines = capsys.readouterr().err.splitlines()
    # lines at 12 s (4 done) and 24 s (8 done): never two within 10 s; then the total
    assert lines == [
        "receval: encoding with fake: 4/10 texts (40%), 0.333/s, 18s left",
        "receval: encoding with fake: 8/10 texts (80%), 0.333/s, 6s left",
        "receval: encoding with fake: 10/10 texts in 30s (0.333/s)",
    ]


def test_rates_and_durations_read_plainly():
    assert [progress.per_second(r) for r in (1234.4, 16.23, 0.3333, 0.0)] == ["1234/s", "16.2/s", "0.333/s", "0.0000/s"]
    assert [progress.duration(s) for s in (0.4, 42, 185, 7805)] == ["0s", "42s", "3m 05s", "2h 10m"]


def test_short_work_prints_nothing_off_a_terminal(monkeypatch, capsys):
    clock = Clock()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    with progress.Progress("searching", 5, unit="questions", every=10) as line:
        clock.now += 9
        line.advance(5)
    assert capsys.readouterr().err == ""


def test_a_long_status_step_says_how_long_it_took(monkeypatch, capsys):
    clock = Clock()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    with progress.Progress("loading all-MiniLM-L6-v2", every=10):
        clock.now += 75
    assert capsys.readouterr().err == "receval: loading all-MiniLM-L6-v2: done in 1m 15s\n"


def test_the_interval_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(progress.EVERY_ENV, "0.5")
    assert progress.Progress("x", 3).every == 0.5
    monkeypatch.delenv(progress.EVERY_ENV)
    assert progress.Progress("x", 3).every == 10.0
    for bad in ("soon", "-1", "nan"):
        monkeypatch.setenv(progress.EVERY_ENV, bad)
        with pytest.raises(RecevalError, match=f"RECEVAL_PROGRESS_SECONDS='{bad}': use a number of seconds >= 0"):
            progress.Progress("x", 3)


def test_a_run_off_a_terminal_prints_search_progress_lines(tmp_path_factory, monkeypatch, capsys):
    monkeypatch.setenv(progress.EVERY_ENV, "0")
    run_dir = run_of(tmp_path_factory, "retriever=bm25")
    n = pq.read_metadata(run_dir / RESULTS).num_rows
    err = capsys.readouterr().err
    counts = [int(m) for m in re.findall(rf"receval: searching \(bm25\): (\d+)/{n} questions \(", err)]
    assert counts == list(range(1, n + 1))  # one line per question at interval 0, in order
    assert re.search(rf"receval: searching \(bm25\): {n}/{n} questions in \d+s \([\d.]+/s\)\n", err)


def test_embedding_progress_lines_off_a_terminal(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(progress.EVERY_ENV, "0")
    embed(TEXTS[:6], Fake(batch_size=2), None)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" (")[0] for line in lines[:3]] == [
        f"receval: encoding with fake: {n}/6 texts" for n in (2, 4, 6)
    ]
    assert lines[3].startswith("receval: encoding with fake: 6/6 texts in ")


# --------------------------------------------------------------------------- warnings


def test_warnings_are_python_warnings_a_caller_can_filter(capsys):
    with pytest.warns(RecevalWarning, match="careful"):
        progress.warn("careful")
    assert capsys.readouterr().err == ""  # recorded, not printed
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=RecevalWarning)
        progress.warn("careful")
    assert capsys.readouterr().err == ""
    progress.warn("careful")
    progress.warn("careful")  # every time, not once per place
    assert capsys.readouterr().err == "receval: warning: careful\n" * 2


# --------------------------------------------------------------------------- saved as computed


class Watching(Fake):
    """A fake encoder that notes how many packs the cache holds when each call starts."""

    def __init__(self, cache, clock=None, **kw):
        super().__init__(**kw)
        self.cache, self.clock, self.packs_seen = cache, clock, []

    def encode(self, texts, on_progress=None):
        self.packs_seen.append(len(self.cache.packs()))
        if self.clock is not None:
            self.clock.now += 10  # each call takes 10 s
        return super().encode(texts, on_progress)


def test_vectors_are_saved_every_16_batches_while_encoding(tmp_path, monkeypatch):
    monkeypatch.setattr(base, "SAVE_SECONDS", float("inf"))
    cache = EmbeddingCache(tmp_path, Fake.identity, "fake")
    watching = Watching(cache, batch_size=2)
    embed(TEXTS, watching, cache)
    # 70 texts in calls of 4 batches of 2 (8 texts): a pack after every 4 calls (32 texts), the rest at the end
    assert watching.packs_seen == [0, 0, 0, 0, 1, 1, 1, 1, 2]
    assert sorted(len(EmbeddingCache.read_pack(p)[0]) for p in cache.packs()) == [6, 32, 32]


def test_slow_encoding_is_saved_every_15_seconds(tmp_path, monkeypatch):
    clock = Clock()
    monkeypatch.setattr(base, "time", SimpleNamespace(monotonic=clock))
    cache = EmbeddingCache(tmp_path, Fake.identity, "fake")
    watching = Watching(cache, clock, batch_size=2)
    embed(TEXTS, watching, cache)
    # 10 s a call: saved after every second call (20 s >= 15 s), long before 16 batches
    assert watching.packs_seen == [0, 0, 1, 1, 2, 2, 3, 3, 4]
    assert len(cache.packs()) == 5


def test_a_crash_keeps_what_was_encoded_and_the_next_run_encodes_only_the_rest(tmp_path):
    cache = EmbeddingCache(tmp_path, Fake.identity, "fake")
    with pytest.raises(KeyboardInterrupt):
        embed(TEXTS, Fake(batch_size=2, stop_after=3), cache)  # Ctrl-C in the fourth call
    saved = cache.get([text_key(t) for t in TEXTS])
    assert len(saved) == 3 * 8  # three calls of 8 texts, saved on the way out
    again = Fake(batch_size=2)
    result = embed(TEXTS, again, cache)
    assert (result.encoded, result.cache_hits) == (len(TEXTS) - 24, 24)
    assert not {text_key(t) for t in again.seen} & set(saved)  # nothing saved is encoded again
    np.testing.assert_array_equal(result.vectors, np.asarray([vector(t) for t in TEXTS], np.float32))


# --------------------------------------------------------------------------- truncation


def word_tokenizer(folder: Path, limit: int) -> Path:
    """A model folder with a whitespace word tokenizer and a token limit of ``limit``."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    words = sorted({w for t in TEXTS + ["one two three four five six seven eight nine ten"] for w in t.split()})
    tokenizer = Tokenizer(WordLevel({w: i + 1 for i, w in enumerate(words)} | {"[UNK]": 0}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": limit}))
    return folder


def test_chunks_the_model_cuts_are_counted_and_warned_about_at_run_time(tmp_path, capsys):
    folder = word_tokenizer(tmp_path / "model", limit=6)
    texts = ["one two three", "one two three four five six seven", "one two", "one two three four five six"]
    texts.append("one two three four five six seven eight nine ten")
    dense = Dense(Fake(model_info=SimpleNamespace(path=folder)))
    dense.fit(texts)
    assert dense.truncated == 2  # 7 and 10 words; 6 fit exactly
    assert capsys.readouterr().err == (
        "receval: warning: fake reads at most 6 tokens: 2 of 5 chunks (40%) are longer and were cut, so "
        "their vectors miss the rest of the text; use chunking=tokens (windows that fit the model) or a "
        "smaller chunking.max_words\n"
    )
    Dense(Fake(model_info=SimpleNamespace(path=folder))).fit(texts[:1] + texts[2:4])
    assert capsys.readouterr().err == ""  # nothing cut, nothing said


# --------------------------------------------------------------------------- machine facts and warm-up

COLD = '''
import time


class ColdStart:
    """Answers every question with its first chunk; the first call takes a second."""

    def __init__(self):
        self.calls = 0

    def fit(self, chunks):
        self.first = chunks[0].id

    def search(self, questions, k):
        self.calls += 1
        if self.calls == 1:
            time.sleep(1.0)
        return [[(self.first, 1.0)] for _ in questions]
'''


@pytest.mark.slow
def test_run_json_holds_the_machine_and_the_warm_up_is_timed_apart(tmp_path, tmp_path_factory, monkeypatch):
    (tmp_path / "cold.py").write_text(COLD, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    loads = iter([(3.5, 2.0, 1.0), (0.25, 0.5, 0.75)] + [(9.0, 9.0, 9.0)] * 10)
    monkeypatch.setattr(machine.os, "getloadavg", lambda: next(loads))
    run_dir = run_of(tmp_path_factory, "retriever=python", "retriever.target=cold:ColdStart")
    info = json.loads((run_dir / RUN_JSON).read_text())
    facts = info["machine"]
    assert facts["load_start"] == [3.5, 2.0, 1.0]  # read when the run started
    assert facts["load_end"] == [0.25, 0.5, 0.75]  # and once more when it ended
    assert facts["cores"] == os.cpu_count() and 1 <= facts["usable_cores"] <= facts["cores"]
    assert isinstance(facts["cpu"], str) and facts["cpu"]
    assert isinstance(facts["threads"], dict)
    # the slow first call was the warm-up, timed apart: no question's latency holds it
    latency = pq.read_table(run_dir / RESULTS, columns=["latency_ms"]).column(0).to_numpy()
    assert info["timings"]["warmup_s"] >= 1.0 and latency.max() < 1000.0


def test_an_encoders_own_threads_are_recorded_per_stage():
    from receval.run.stages import Reranked, encoder_threads
    from receval.rerankers.dense import DenseReranker

    onnx_like = Fake()
    onnx_like.threads = 3
    dense = Dense(onnx_like)
    assert encoder_threads(dense) == {"dense.encoder": 3}
    assert encoder_threads(Reranked(dense, DenseReranker(dense), 5)) == {"dense.encoder": 3}  # one stage, once
    assert encoder_threads(Dense(Fake())) == {}  # torch's threads are read from torch


def test_warm_up_calls_are_counted_apart_from_the_search():
    facts = stage_facts(["http", "select"], {"http": 2}, {"http": 12}, {"http": 3})
    assert facts == {
        "http": {"index_api_calls": 2, "search_api_calls": 9, "warmup_api_calls": 1},
        "select": {"index_api_calls": 0, "search_api_calls": 0},
    }


# --------------------------------------------------------------------------- the report's load warning


@pytest.mark.parametrize(
    "loads, cores, warned",
    [
        ((0.2, 2.1), 2, False),  # 0.10 and 1.05 per core: 0.95 apart
        ((0.1, 2.2), 2, True),  # 0.05 and 1.10: 1.05 apart
        ((0.0, 2.0), 2, False),  # 0 and 1.0: exactly 1.0 apart is not more than 1.0
        ((0.2, 2.4), 1, True),  # one core: 0.2 and 2.4
        ((0.05, 0.6), 2, False),  # a factor 12, but both near idle
    ],
)
def test_load_warning_rule(loads, cores, warned):
    runs = [(f"#{i}", {"load_start": [load, 0, 0], "usable_cores": cores}) for i, load in enumerate(loads)]
    assert (machine.load_warning(runs) is not None) == warned


def test_load_per_core_uses_a_container_quota_and_skips_unknowns():
    assert machine.load_per_core({"load_start": [3.0, 0, 0], "usable_cores": 8, "cpu_quota": 1.5}) == 2.0
    assert machine.load_per_core({"load_start": None, "usable_cores": 8}) is None
    assert machine.load_per_core(None) is None
    assert machine.load_warning([("#0", None), ("#1", {"load_start": [9.0, 0, 0], "usable_cores": 1})]) is None


def test_the_report_warns_when_latencies_were_measured_under_very_different_load(tmp_path, tmp_path_factory):
    from receval.cli.report import report_for
    from receval.render.report import header_lines

    run_dir = run_of(tmp_path_factory, "retriever=bm25")
    copies = []
    for name, load in (("quiet", 0.1), ("busy", 7.9)):
        copy = tmp_path / name
        shutil.copytree(run_dir, copy)
        info = json.loads((copy / RUN_JSON).read_text())
        info["machine"].update(load_start=[load, load, load], usable_cores=2)
        info["machine"].pop("cpu_quota", None)
        (copy / RUN_JSON).write_text(json.dumps(info))
        forged(copy)
        copies.append(copy)
    report = report_for([str(c) for c in copies])
    # the built-in questions label one section each, so judged@k is low too (receval.analysis.holes)
    (caution,) = [c for c in report.cautions if not c.startswith("judged@")]
    assert re.search(r"#1 [^,]*, 120 words, headings #1 started at 3\.95 per core, #0 .* at 0\.05 ", caution), caution
    assert f"warning: {caution}" in header_lines(report)
    assert caution in report.to_dict()["warnings"]
    assert [c for c in report_for([str(copies[0])]).cautions if not c.startswith("judged@")] == []  # one run: nothing compared


# --------------------------------------------------------------------------- a real kill


class Embeddings(BaseHTTPRequestHandler):
    """An embeddings API that records the texts of every request; from request
    ``block_at`` on it hangs (until ``release``), so the client is stuck mid-encode."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        server = self.server
        texts = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["input"]
        with server.lock:
            server.requests.append(texts)
            n = len(server.requests)
        if server.block_at is not None and n >= server.block_at:
            server.stuck.set()
            server.release.wait(120)
            return
        data = [{"embedding": vector(t), "index": i} for i, t in enumerate(texts)]
        raw = json.dumps({"data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


def _library_chunk_texts() -> list[str]:
    from hydra import compose, initialize_config_dir

    from receval.chunking import cut
    from receval.run.config import config_dir
    from receval.datasets import load_dataset

    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        cfg = compose("config")
    return [chunk.text for chunk in cut(cfg.chunking, load_dataset(cfg.dataset).sections)]


@pytest.mark.slow
def test_a_dense_run_killed_mid_encode_resumes_without_re_encoding_what_it_saved(tmp_path):
    chunk_texts = set(_library_chunk_texts())
    with loopback(Embeddings) as server:
        server.lock, server.requests = threading.Lock(), []
        server.stuck, server.release = threading.Event(), threading.Event()
        server.block_at = 20  # 4 texts a request, saved every 16 requests: hangs after the first save
        cache = tmp_path / "cache"
        from receval.encoders.http import HttpEncoder

        key = HttpEncoder(base_url=f"{server.root}/v1", model="fake-embed").keys  # the cache's key per text
        args = [
            "retriever=dense", "retriever.backend=http", f"retriever.base_url={server.root}/v1",
            "retriever.model=fake-embed", "retriever.batch_size=4", f"cache_dir={cache}",
        ]
        env = {**os.environ, progress.EVERY_ENV: "0"}
        with open(tmp_path / "first.err", "w") as err:
            first = subprocess.Popen(
                [sys.executable, "-m", "receval", *args, f"hydra.run.dir={tmp_path / 'first'}"],
                cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=err, env=env,
            )
            try:
                assert server.stuck.wait(120), "the run never reached request 20"
            finally:
                first.send_signal(signal.SIGKILL)
                first.wait(30)
        assert first.returncode == -signal.SIGKILL
        # stderr was a file: the progress lines were there, up to the group under way
        assert "receval: encoding with fake-embed: 64/99 texts (65%)" in (tmp_path / "first.err").read_text()
        packs = list((cache / "embeddings").glob("*/pack-*.emb"))
        saved = {key for pack in packs for key in EmbeddingCache.read_pack(pack)[0]}
        # saved every 16 requests (64 texts), or sooner on a slow machine (every 15 s), in calls
        # of 4 requests: the 64 texts of the first 16 requests at most, the call under way lost
        assert packs and 0 < len(saved) <= 64 and len(saved) % 16 == 0
        assert saved <= set(key(sorted(chunk_texts)))
        pack = packs[0]
        (pack.parent / f".{pack.name}.half.tmp").write_bytes(pack.read_bytes()[:100])  # a write cut short

        server.block_at, before = None, len(server.requests)
        server.release.set()
        done = run_cli(*args, f"hydra.run.dir={tmp_path / 'second'}", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "damaged" not in done.stderr  # the unfinished temporary file is never read
        sent = [t for request in server.requests[before:] for t in request]
        encoded_chunks = [t for t in sent if t in chunk_texts]
        assert not set(key(encoded_chunks)) & set(saved)  # nothing saved is sent again
        assert len(encoded_chunks) == len(chunk_texts) - len(saved)
        assert set(key(encoded_chunks)) | set(saved) == set(key(sorted(chunk_texts)))

        fresh = run_cli(*args[:-1], f"cache_dir={tmp_path / 'fresh'}", f"hydra.run.dir={tmp_path / 'fresh-run'}",
                        cwd=tmp_path)
        assert fresh.returncode == 0, fresh.stderr
    keep = ["question_id", "retrieved", "scores", "rr"]
    resumed = pq.read_table(tmp_path / "second" / RESULTS, columns=keep).to_pylist()
    assert resumed == pq.read_table(tmp_path / "fresh-run" / RESULTS, columns=keep).to_pylist()
