"""The embedding cache and the HTTP encoder, without torch: a deterministic fake
encoder stands in for the model, and a local ``http.server`` for the embeddings API.

Covers: cache hits across instances, one changed text encoded alone, damaged packs
recomputed, packs merged, several processes writing and reading one cache at once,
an unwritable cache; the HTTP backend's vectors, order, retries, errors, and that
the API key reaches the server but nothing else; config errors; and that importing
receval or running BM25 never imports torch.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import subprocess
import sys
import textwrap
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from receval.encoders import EmbeddingCache, HttpEncoder, embed, resolve_local_model, text_key
from receval.core.errors import ConfigError, RecevalError
from receval.retrievers.dense import Dense
from conftest import loopback

ROOT = Path(__file__).resolve().parent.parent
DIM = 8


def fake_vector(text: str) -> np.ndarray:
    """A deterministic unit vector per text (what the fake model 'means')."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


class FakeEncoder:
    label = "fake"
    identity = {"recipe": 1, "backend": "fake", "model": "fake-8"}
    api_calls = 0
    threads = None

    def load(self):
        pass

    def __init__(self):
        self.seen: list[str] = []

    def encode(self, texts, on_progress=None):
        self.seen.extend(texts)
        if on_progress:
            on_progress(len(texts))
        return np.stack([fake_vector(t) for t in texts]) if texts else np.zeros((0, DIM), np.float32)


TEXTS = [f"chunk number {i} about {'loans fines hours rooms'.split()[i % 4]}" for i in range(12)]


def cache_at(root: Path, **kw) -> EmbeddingCache:
    return EmbeddingCache(root, FakeEncoder.identity, "fake", **kw)


# --------------------------------------------------------------------------- cache


def test_second_fit_encodes_nothing_and_gives_identical_vectors(tmp_path):
    first = Dense(FakeEncoder(), cache_at(tmp_path))
    first.fit(TEXTS)
    assert (first.encoded, first.cache_hits) == (len(TEXTS), 0)
    np.testing.assert_array_equal(first.chunk_vectors, np.stack([fake_vector(t) for t in TEXTS]))

    again = Dense(FakeEncoder(), cache_at(tmp_path))  # new instances, same folder
    again.fit(TEXTS)
    assert (again.encoded, again.cache_hits) == (0, len(TEXTS))
    assert again.encoder.seen == []
    np.testing.assert_array_equal(again.chunk_vectors, first.chunk_vectors)


def test_one_changed_text_is_the_only_one_encoded(tmp_path):
    Dense(FakeEncoder(), cache_at(tmp_path)).fit(TEXTS)
    changed = [*TEXTS[:5], "a brand new chunk", *TEXTS[6:]]
    dense = Dense(FakeEncoder(), cache_at(tmp_path))
    dense.fit(changed)
    assert dense.encoder.seen == ["a brand new chunk"]
    assert (dense.encoded, dense.cache_hits) == (1, len(TEXTS) - 1)
    np.testing.assert_array_equal(dense.chunk_vectors[5], fake_vector("a brand new chunk"))


def test_duplicate_texts_are_encoded_once(tmp_path):
    enc = FakeEncoder()
    result = embed(["a", "b", "a", "a"], enc, cache_at(tmp_path))
    assert enc.seen == ["a", "b"] and (result.encoded, result.cache_hits) == (2, 0)
    np.testing.assert_array_equal(result.vectors[0], result.vectors[3])


def test_models_do_not_share_vectors(tmp_path):
    Dense(FakeEncoder(), cache_at(tmp_path)).fit(TEXTS)
    other = EmbeddingCache(tmp_path, {**FakeEncoder.identity, "model": "fake-other"}, "fake")
    assert other.folder != cache_at(tmp_path).folder
    assert other.get([text_key(t) for t in TEXTS]) == {}
    about = json.loads((cache_at(tmp_path).folder / "model.json").read_text())
    assert about == FakeEncoder.identity


def test_no_cache_dir_means_no_cache(tmp_path):
    dense = Dense(FakeEncoder(), None)
    dense.fit(TEXTS)
    dense.fit(TEXTS)
    assert dense.encoded == 2 * len(TEXTS) and dense.cache_hits == 0


def _damage(pack: Path, how: str) -> None:
    data = bytearray(pack.read_bytes())
    if how == "truncated":
        pack.write_bytes(bytes(data[: len(data) - 7]))
    elif how == "flipped":
        data[-3] ^= 0xFF  # inside the last vector: only the checksum sees it
        pack.write_bytes(bytes(data))
    elif how == "garbage":
        pack.write_bytes(b"not a pack at all" * 10)
    elif how == "empty":
        pack.write_bytes(b"")
    elif how == "grown to 200 MB":  # sparse: what an edit to 200 MB looks like to stat
        with open(pack, "r+b") as handle:
            handle.truncate(200 << 20)
    elif how in ("a NaN vector, resealed", "a negative latency, resealed"):  # forged with care: checksum redone
        from receval.encoders import cache as packs

        magic, dim, n, _ = packs._HEADER.unpack_from(data)
        at = packs._HEADER.size + n * packs._KEY + (n * 4 if how.startswith("a NaN") else 0)
        data[at : at + 4] = np.float32(np.nan if how.startswith("a NaN") else -5.0).tobytes()
        payload = bytes(data[packs._HEADER.size :])
        pack.write_bytes(packs._HEADER.pack(magic, dim, n, hashlib.sha256(payload).digest()) + payload)


@pytest.mark.parametrize("how", ["truncated", "flipped", "garbage", "empty", "grown to 200 MB",
                                 "a NaN vector, resealed", "a negative latency, resealed"])
def test_a_damaged_pack_is_detected_removed_and_recomputed(tmp_path, capsys, how):
    Dense(FakeEncoder(), cache_at(tmp_path)).fit(TEXTS)
    (pack,) = cache_at(tmp_path).packs()
    _damage(pack, how)
    dense = Dense(FakeEncoder(), cache_at(tmp_path))
    dense.fit(TEXTS)
    assert (dense.encoded, dense.cache_hits) == (len(TEXTS), 0)
    np.testing.assert_array_equal(dense.chunk_vectors, np.stack([fake_vector(t) for t in TEXTS]))
    assert "damaged" in capsys.readouterr().err and not pack.exists()
    # the recomputed vectors were saved again, intact
    healed = Dense(FakeEncoder(), cache_at(tmp_path))
    healed.fit(TEXTS)
    assert (healed.encoded, healed.cache_hits) == (0, len(TEXTS))


def test_packs_are_merged_when_there_are_too_many(tmp_path):
    for i in range(5):
        Dense(FakeEncoder(), cache_at(tmp_path, max_packs=3)).fit(TEXTS[2 * i : 2 * i + 3])
    cache = cache_at(tmp_path)
    assert 1 <= len(cache.packs()) <= 3
    found = cache.get([text_key(t) for t in TEXTS[:11]])
    assert len(found) == 11
    for t in TEXTS[:11]:
        np.testing.assert_array_equal(found[text_key(t)], fake_vector(t))
    assert not [p for p in cache.folder.iterdir() if p.name.endswith(".tmp")]


def test_progress_bar_follows_the_encoding(tmp_path):
    ticks = []

    class Counting(FakeEncoder):
        def encode(self, texts, on_progress=None):
            return super().encode(texts, lambda n: (ticks.append(n), on_progress(n)))

    result = embed(TEXTS, Counting(), cache_at(tmp_path), progress=True)
    assert sum(ticks) == len(TEXTS) and result.encoded == len(TEXTS)


def test_an_unwritable_cache_warns_and_the_run_goes_on(tmp_path, capsys):
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache folder should be")
    dense = Dense(FakeEncoder(), cache_at(blocker))
    dense.fit(TEXTS)
    assert dense.encoded == len(TEXTS)
    assert "cannot be saved" in capsys.readouterr().err


WORKER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {tests!r})
    import numpy as np
    from test_embeddings import FakeEncoder, fake_vector, cache_at
    from receval.encoders import embed
    from pathlib import Path

    root, seed, start = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    rng = np.random.default_rng(seed)
    texts = [f"shared text {{i}}" for i in range(300)]
    while time.time() < start:
        time.sleep(0.001)
    for round in range(12):
        pick = sorted(rng.choice(len(texts), size=60, replace=False))
        mine = [texts[i] for i in pick] + [f"only worker {{seed}} round {{round}} text {{j}}" for j in range(5)]
        result = embed(mine, FakeEncoder(), cache_at(root, max_packs=4))
        expected = np.stack([fake_vector(t) for t in mine])
        if not np.array_equal(result.vectors, expected):
            sys.exit("wrong vectors")
    """
)


@pytest.mark.slow
def test_processes_writing_and_reading_one_cache_at_once(tmp_path):
    import time

    script = tmp_path / "worker.py"
    script.write_text(WORKER.format(tests=str(Path(__file__).parent)))
    root = tmp_path / "cache"
    start = time.time() + 1.0  # all start together, after their imports
    workers = [
        subprocess.Popen([sys.executable, str(script), str(root), str(seed), str(start)], stderr=subprocess.PIPE, text=True)
        for seed in range(4)
    ]
    errors = [w.communicate(timeout=120)[1] for w in workers]
    assert [w.returncode for w in workers] == [0, 0, 0, 0], errors
    assert not any("damaged" in e for e in errors), errors
    cache = cache_at(root)
    leftovers = [p.name for p in cache.folder.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []
    for pack in cache.packs():
        cache.read_pack(pack)  # every pack intact
    every = [f"shared text {i}" for i in range(300)]
    every += [f"only worker {s} round {r} text {j}" for s in range(4) for r in range(12) for j in range(5)]
    found = cache.get([text_key(t) for t in every])
    touched = [t for t in every if text_key(t) in found]
    assert len(touched) >= 240 + 4 * 12 * 5  # every worker-only text, most shared ones
    for t in touched:
        np.testing.assert_array_equal(found[text_key(t)], fake_vector(t))


# --------------------------------------------------------------------------- config errors


def cfg(**kw):
    base = dict(model="all-MiniLM-L6-v2", backend="local", base_url=None, api_key_env=None, batch_size=64)
    return SimpleNamespace(**{**base, **kw})


def test_unknown_model_name_is_a_config_error_saying_what_was_tried(tmp_path):
    with pytest.raises(ConfigError) as caught:
        Dense.from_config(cfg(model="no-such-model-xyz"), tmp_path)
    message = str(caught.value)
    assert "no-such-model-xyz" in message and "not a folder" in message
    assert "all-MiniLM-L6-v2" in message and "backend=http" in message


def test_a_folder_that_is_not_a_model_is_a_config_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="modules.json"):
        resolve_local_model(str(tmp_path / "empty"))


def test_missing_dense_extra_says_how_to_install(monkeypatch, tmp_path):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "sentence_transformers" else real(name, *a)
    )
    with pytest.raises(ConfigError, match=r"receval\[dense\]"):
        Dense.from_config(cfg(), tmp_path)


@pytest.mark.parametrize(
    "overrides, match",
    [
        (dict(backend="grpc"), "backend='grpc'"),
        (dict(backend="http"), "base_url"),
        (dict(backend="http", base_url="localhost:11434"), "http:// or https://"),
        (dict(backend="http", base_url="http://u:p@localhost/v1"), "no user, password"),
        (dict(backend="http", base_url="http://localhost/v1?key=abc"), "no user, password"),
        (dict(backend="http", base_url="http://localhost/v1", api_key_env="RECEVAL_TEST_UNSET_VAR"), "RECEVAL_TEST_UNSET_VAR .*is not set"),
        (dict(backend="http", base_url="http://localhost/v1", api_key_env="sk-live-1234"), "NAME of an environment variable"),
        (dict(batch_size=0), "batch_size"),
    ],
)
def test_bad_dense_configs(tmp_path, monkeypatch, overrides, match):
    monkeypatch.delenv("RECEVAL_TEST_UNSET_VAR", raising=False)
    with pytest.raises(ConfigError, match=match) as caught:
        Dense.from_config(cfg(**overrides), tmp_path)
    assert "sk-live-1234" not in str(caught.value)


@pytest.mark.slow
def test_importing_receval_and_running_bm25_never_imports_torch(tmp_path):
    code = textwrap.dedent(
        """
        import sys
        import receval, receval.run.pipeline, receval.encoders, receval.retrievers.dense
        from receval.retrievers.bm25 import BM25
        from receval.retrievers.dense import Dense
        from receval.retrievers.text import Tokenizer
        from types import SimpleNamespace
        bm25 = BM25(Tokenizer(), k1=1.2, b=0.75)
        bm25.fit(["a b c", "b c d"])
        bm25.score(["b"])
        cfg = SimpleNamespace(model="all-MiniLM-L6-v2", backend="local", base_url=None, api_key_env=None, batch_size=8)
        Dense.from_config(cfg, None)  # checks the model, loads nothing
        heavy = [m for m in ("torch", "sentence_transformers", "transformers") if m in sys.modules]
        assert not heavy, heavy
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr


# --------------------------------------------------------------------------- HTTP backend

KEY = "sk-test-Zq8v3LkR0secret"


def http_vector(text: str) -> list[float]:
    """The fake server's embedding: not normalised, so the client must normalise."""
    return [float(len(text)), float(sum(map(ord, text)) % 13), 2.0, -1.0]


class EmbeddingsHandler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        server = self.server
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        server.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        n = len(server.requests)
        mode = server.mode
        if mode == "flaky" and n <= 2:
            return self._send(429, b'{"error": "slow down"}', {"Retry-After": "0"})
        if mode == "down":
            return self._send(500, b"internal error")
        if mode == "malformed":
            return self._send(200, b'{"data": [ {"embedding": [1, 2')
        if mode == "echo-key":
            return self._send(401, f"bad key {self.headers.get('Authorization')}".encode())
        if mode == "short":
            return self._send(200, json.dumps({"data": [{"embedding": [1.0], "index": 0}]}).encode())
        texts = json.loads(body)["input"]
        vector = (lambda t: [-x for x in http_vector(t)]) if mode == "negated" else http_vector  # another server
        data = [{"object": "embedding", "embedding": vector(t), "index": i} for i, t in enumerate(texts)]
        data.reverse()  # out of order on purpose: the client must use "index"
        self._send(200, json.dumps({"object": "list", "data": data, "model": "fake"}).encode())

    def _send(self, status, payload, headers=None):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def api():
    with loopback(EmbeddingsHandler) as server:
        server.mode, server.requests = "ok", []
        server.base_url = f"{server.root}/v1"
        yield server


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("RECEVAL_TEST_API_KEY", KEY)
    return "RECEVAL_TEST_API_KEY"


def http_encoder(api, key, **kw):
    options = dict(batch_size=2, retries=2, backoff=0.01, max_backoff=0.05, timeout=10)
    return HttpEncoder(api.base_url, "fake-embed", key, **{**options, **kw})


def unit(rows):
    rows = np.asarray(rows, np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_http_vectors_in_order_normalised_and_key_sent(api, key):
    enc = http_encoder(api, key)
    texts = ["alpha", "beta beta", "gamma", "delta!", "e"]
    vectors = enc.encode(texts)
    np.testing.assert_allclose(vectors, unit([http_vector(t) for t in texts]), rtol=1e-6)
    assert enc.api_calls == 3 == len(api.requests)  # batches of 2
    assert all(r["path"] == "/v1/embeddings" for r in api.requests)
    assert all(r["auth"] == f"Bearer {KEY}" for r in api.requests)
    sent = [json.loads(r["body"]) for r in api.requests]
    assert sent[0] == {"model": "fake-embed", "input": ["alpha", "beta beta"]}
    assert KEY not in repr(enc) and KEY not in pickle.dumps(enc).decode("latin-1")


def test_http_retries_429_then_succeeds(api, key):
    api.mode = "flaky"
    enc = http_encoder(api, key)
    vectors = enc.encode(["one", "two"])
    np.testing.assert_allclose(vectors, unit([http_vector("one"), http_vector("two")]), rtol=1e-6)
    assert enc.api_calls == 3  # 429, 429, 200


def test_http_gives_up_after_bounded_retries_with_a_clear_error(api, key):
    api.mode = "down"
    enc = http_encoder(api, key, retries=2)
    with pytest.raises(RecevalError) as caught:
        enc.encode(["one"])
    message = str(caught.value)
    assert f"{api.base_url}/embeddings" in message and "after 3 attempts" in message and "HTTP 500" in message
    assert len(api.requests) == 3 == enc.api_calls
    assert KEY not in message and KEY not in repr(caught.value)


def test_http_malformed_json_is_not_retried(api, key):
    api.mode = "malformed"
    enc = http_encoder(api, key)
    with pytest.raises(RecevalError, match="malformed JSON"):
        enc.encode(["one"])
    assert len(api.requests) == 1


def test_http_wrong_number_of_embeddings(api, key):
    api.mode = "short"
    with pytest.raises(RecevalError, match="1 embeddings for 2 texts"):
        http_encoder(api, key).encode(["one", "two"])


def test_http_key_echoed_by_the_server_is_redacted(api, key):
    api.mode = "echo-key"
    with pytest.raises(RecevalError) as caught:
        http_encoder(api, key).encode(["one"])
    message = str(caught.value)
    assert "HTTP 401" in message and "RECEVAL_TEST_API_KEY" in message  # names the variable
    assert KEY not in message and KEY not in repr(caught.value)
    assert api.requests[0]["auth"] == f"Bearer {KEY}"


def test_http_connection_refused_names_the_url(key):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once we leave: nothing listens there
    enc = HttpEncoder(f"http://127.0.0.1:{port}/v1", "m", key, retries=1, backoff=0.01, timeout=5)
    with pytest.raises(RecevalError, match=rf"127\.0\.0\.1:{port}/v1/embeddings failed after 2 attempts"):
        enc.encode(["one"])


def test_dense_over_http_caches_chunks_and_counts_calls(api, key, tmp_path):
    config = cfg(backend="http", base_url=api.base_url, model="fake-embed", api_key_env=key, batch_size=4)
    chunks = ["loan periods are three weeks", "opening hours nine to five", "fines are ten pence", "rooms"]
    dense = Dense.from_config(config, tmp_path / "cache")
    dense.fit(chunks)
    assert dense.encoded == 4 and dense.api_calls == 1
    scores = dense.score(["loan periods are three weeks", "rooms"])
    assert scores.dtype == np.float32 and scores.shape == (2, 4)
    assert dense.api_calls == 2 and dense.questions_encoded == 2
    np.testing.assert_allclose(scores[0, 0], 1.0, atol=1e-6)

    again = Dense.from_config(config, tmp_path / "cache")
    again.fit(chunks)
    assert (again.encoded, again.cache_hits, again.api_calls) == (0, 4, 0)
    np.testing.assert_array_equal(again.chunk_vectors, dense.chunk_vectors)
    # the key is in no saved file and no object
    for path in (tmp_path / "cache").rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes()
    assert KEY not in repr(dense) and KEY.encode() not in pickle.dumps(dense)
    assert KEY not in json.dumps(dense.cache.identity)


def test_two_embedding_servers_with_one_model_name_and_one_cache_are_both_asked(api, key, tmp_path):
    """The packs are keyed by the cached-call layer's key (endpoint, model, fields, text hash):
    a second server serving the same model name is asked, and its own vectors are used; a
    rerun against the first replays its vectors with the latency they took live."""
    chunks = ["loan periods are three weeks", "opening hours nine to five", "fines are ten pence", "rooms"]
    with loopback(EmbeddingsHandler) as other:
        other.mode, other.requests = "negated", []
        first = Dense.from_config(cfg(backend="http", base_url=api.base_url, model="fake-embed", api_key_env=key,
                                      batch_size=4), tmp_path / "cache")
        first.fit(chunks)
        live_ms = list(first.encoder.live_ms)  # one request for the four: its latency shared by them
        second = Dense.from_config(cfg(backend="http", base_url=f"{other.root}/v1", model="fake-embed",
                                       api_key_env=key, batch_size=4), tmp_path / "cache")
        second.fit(chunks)
    assert len(api.requests) == 1 and len(other.requests) == 1
    assert (second.encoded, second.cache_hits, second.api_calls) == (4, 0, 1)
    np.testing.assert_allclose(second.chunk_vectors, -first.chunk_vectors, rtol=1e-6)
    np.testing.assert_allclose(first.chunk_vectors, unit([http_vector(t) for t in chunks]), rtol=1e-6)
    assert first.facts() == {} and second.facts() == {}  # asked live: nothing replayed

    again = Dense.from_config(cfg(backend="http", base_url=api.base_url + "/", model="fake-embed", api_key_env=key,
                                  batch_size=4), tmp_path / "cache")  # another spelling of the first server
    again.fit(chunks)
    assert (again.encoded, again.cache_hits, again.api_calls) == (0, 4, 0) and len(api.requests) == 1
    np.testing.assert_array_equal(again.chunk_vectors, first.chunk_vectors)
    # the replay carries what the vectors cost live (stored as float32 milliseconds per text)
    assert again.replayed_live == 4
    assert again.replayed_live_s * 1000 == pytest.approx(sum(live_ms), rel=1e-5)
    assert again.facts() == {"dense.replayed_embeddings": 4,
                             "dense.replayed_embeddings_live_ms": round(again.replayed_live_s * 1000, 3)}


def test_pack_keys_are_the_cached_call_layers_and_old_packs_still_read(tmp_path):
    """An API's pack key is :func:`receval.clients.calls.call_key` of (endpoint, model, fields,
    text), as 32 bytes; a format-1 pack (no latencies) reads with NaN latencies."""
    from receval.clients.calls import call_key
    from receval.encoders import cache as packs

    encoder = HttpEncoder("HTTP://127.0.0.1:80/v1/", "m")
    assert encoder.keys(["a text"]) == [bytes.fromhex(call_key("http://127.0.0.1/v1/embeddings", "m", {}, "a text"))]
    store = EmbeddingCache(tmp_path, {"model": "x"})
    store.folder.mkdir(parents=True)
    keys, vectors = [text_key("one"), text_key("two")], np.asarray([[1, 0], [0, 1]], np.float32)
    payload = b"".join(keys) + vectors.astype("<f4").tobytes()
    header = packs._HEADER.pack(packs._MAGIC_V1, 2, 2, hashlib.sha256(payload).digest())
    (store.folder / "pack-0-old.emb").write_bytes(header + payload)
    live: dict = {}
    found = store.get(keys, live)
    np.testing.assert_array_equal(found[keys[1]], [0, 1])
    assert len(live) == 2 and all(np.isnan(ms) for ms in live.values())
    assert store.holds(keys).tolist() == [True, True]
    store.put([text_key("three")], np.asarray([[1, 1]], np.float32), [12.5])
    live = {}
    store.get([text_key("three")], live)
    assert live == {text_key("three"): 12.5}


@pytest.mark.parametrize("index", [True, 1.0, "1", -1, 2, 0])
def test_http_embedding_indices_must_be_positions_given_once(index):
    """A boolean is not an index (True read as 1 before); nor a float, a string, one out of range or repeated."""
    encoder = HttpEncoder("http://127.0.0.1:9/v1", "m")
    reply = {"data": [{"embedding": [1.0, 0.0], "index": 0}, {"embedding": [0.0, 1.0], "index": index}]}
    with pytest.raises(RecevalError, match=rf"item 1 has a bad or repeated 'index' {index!r}"):
        encoder._parse(reply, b"", 2)
