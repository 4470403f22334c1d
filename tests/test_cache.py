"""The content-addressed cache: sweeps build each chunking once, results never change."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import results_without_timings, run_cli

from receval.chunking import cache as cache_module
from receval.chunking.cache import IndexCache, key_of
from receval.chunking import Chunk
from receval.run.pipeline import run
from receval.retrievers.lexical import Vocabulary
from receval.results.format import RESULTS, RUN_JSON
from receval.retrievers.text import Tokenizer


@pytest.fixture(autouse=True)
def empty_memory():
    cache_module._MEMORY.clear()
    yield
    cache_module._MEMORY.clear()


def ranked(run_dir):
    return [r["retrieved"] for r in pq.read_table(run_dir / RESULTS).to_pylist()]


def test_postings_can_be_derived_twice_from_one_vocabulary():
    vocabulary = Vocabulary.from_texts(["b a b", "c a", "a a a d"], Tokenizer())
    first, second = (
        [np.concatenate(part).tolist() for part in zip(*vocabulary.postings())] for _ in range(2)
    )
    assert first == second
    # (chunk, term, count) of each distinct pair, term then chunk order: b=0 a=1 c=2 d=3
    assert list(zip(*first)) == [(0, 0, 2), (0, 1, 1), (1, 1, 1), (2, 1, 3), (1, 2, 1), (2, 3, 1)]


@pytest.mark.parametrize("block", [1, 4])
def test_postings_in_small_blocks_give_the_same_index(monkeypatch, block):
    """The term-major weights are written a block of chunks at a time; blocks of one
    chunk, or a few, must give the index one block gives, to the bit."""
    from receval.retrievers.bm25 import BM25
    from receval.retrievers.tfidf import TfIdf

    texts = ["b a b", "", "c a", "a a a d", "d e f f", "a", "e e c b"]
    for make in (lambda: BM25(Tokenizer()), lambda: TfIdf(Tokenizer())):
        whole = make()
        whole.fit(texts)
        monkeypatch.setattr(Vocabulary, "POSTINGS", block)
        blocked = make()
        blocked.fit(texts)
        monkeypatch.undo()
        assert (whole.weights_t != blocked.weights_t).nnz == 0
        for table in (whole.weights_t, blocked.weights_t):  # a term's chunks in chunk order
            assert all((np.diff(row.indices) > 0).all() for row in table)
        np.testing.assert_array_equal(whole.term_max, blocked.term_max)


def test_vocabulary_round_trips_through_npz(tmp_path):
    vocabulary = Vocabulary.from_texts(["Fines for late returns", "late opening"], Tokenizer())
    with open(tmp_path / "v.npz", "wb") as handle:
        vocabulary.save(handle)
    loaded = Vocabulary.load(tmp_path / "v.npz")
    assert loaded.ids == vocabulary.ids
    np.testing.assert_array_equal(loaded.doc_term_ids, vocabulary.doc_term_ids)


@pytest.mark.slow
def test_cached_and_uncached_runs_rank_identically(make_config, tmp_path):
    cache = tmp_path / "cache"
    for name in ("bm25", "tfidf", "fused"):
        run(make_config(f"retriever={name}", f"cache_dir={cache}"), tmp_path / f"{name}-cached")
        cache_module._MEMORY.clear()
        run(make_config(f"retriever={name}", "cache_dir=null"), tmp_path / f"{name}-plain")
        assert ranked(tmp_path / f"{name}-cached") == ranked(tmp_path / f"{name}-plain")


@pytest.mark.slow
def test_a_sweep_builds_each_chunking_once(tmp_path):
    done = run_cli(
        "retriever=bm25,tfidf,fused", "chunking.max_words=20,40,120", f"cache_dir={tmp_path}/cache",
        f"hydra.sweep.dir={tmp_path}/s", "-m", cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads((tmp_path / "s" / str(job) / RUN_JSON).read_text())["cache"] for job in range(9)]
    assert events[:3] == [{"chunks": "built", "vocabulary": "built"}] * 3  # bm25 x 20, 40, 120
    assert events[3:] == [{"chunks": "hit", "vocabulary": "hit"}] * 6
    assert len(list((tmp_path / "cache" / "chunks").iterdir())) == 3
    # a second sweep in a new process reads every entry from disk
    again = run_cli("chunking.max_words=20", f"cache_dir={tmp_path}/cache", "hydra.run.dir=again", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert json.loads((tmp_path / "again" / RUN_JSON).read_text())["cache"]["vocabulary"] == "hit"


def test_a_damaged_entry_is_rebuilt(tmp_path):
    chunks = [Chunk("a#b", 0, "text")]
    IndexCache(tmp_path).chunks("k", lambda: chunks)
    (entry,) = (tmp_path / "chunks").iterdir()
    entry.write_bytes(b"PAR1 truncated")
    cache_module._MEMORY.clear()
    fresh = IndexCache(tmp_path)
    assert fresh.chunks("k", lambda: chunks) == chunks and fresh.events["chunks"] == "built"
    cache_module._MEMORY.clear()
    assert IndexCache(tmp_path).chunks("k", lambda: []) == chunks  # rewritten whole


@pytest.mark.slow
def test_parallel_writers_leave_a_valid_entry(tmp_path):
    script = (
        "import sys; from receval.chunking.cache import IndexCache; from receval.chunking import Chunk\n"
        "chunks = [Chunk(f's#{i}', 0, 'word ' * 50) for i in range(20000)]\n"
        "IndexCache(sys.argv[1]).chunks('same', lambda: chunks)\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path)]) for _ in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    files = list((tmp_path / "chunks").iterdir())
    assert [f.name for f in files] == ["same.parquet"]  # no temporary files left behind
    loaded = IndexCache(tmp_path).chunks("same", lambda: [])
    assert len(loaded) == 20000 and loaded[-1].section_id == "s#19999"


def test_keys_depend_on_every_part():
    base = dict(dataset="f" * 64, max_words=120, overlap=0, headings=True)
    keys = {key_of(**base), key_of(**{**base, "max_words": 40}), key_of(**{**base, "headings": False}),
            key_of(**{**base, "dataset": "e" * 64}), key_of(**{**base, "overlap": 5})}
    assert len(keys) == 5


@pytest.mark.slow
def test_a_cached_chunk_set_loads_without_importing_pyarrow_dataset(tmp_path):
    """A sweep job's cache hit stays cheap: no pyarrow.dataset import (about 0.2 s of CPU)."""
    code = f"""
import sys
from receval.chunking import cache
from receval.chunking import Chunk
chunks = [Chunk("a#b", 0, "one two"), Chunk("a#b", 1, "three"), Chunk("c#d", 0, "four")]
store = cache.IndexCache({str(tmp_path)!r})
assert store.chunks("k", lambda: chunks) == chunks and store.events["chunks"] == "built"
cache._MEMORY.clear()
assert store.chunks("k", lambda: 1 / 0) == chunks and store.events["chunks"] == "hit"
assert "pyarrow.dataset" not in sys.modules
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


# ------------------------------------------------- entries carry a checksum


def _edit_chunks(path: Path) -> None:
    """Change one chunk's text and rewrite a valid file, metadata kept as tools keep it."""
    table = pq.read_table(path)
    texts = table.column("text").to_pylist()
    texts[0] = "bikes prices day pass cost annual membership " * 5
    table = table.set_column(table.column_names.index("text"), "text", pa.array(texts))
    pq.write_table(table, path)


def _swap_rows(path: Path) -> None:
    """Swap two chunks' token lengths in the vocabulary entry; every array kept."""
    with np.load(path) as data:
        arrays = {name: data[name] for name in data.files}
    lengths = arrays["lengths"].copy()
    first = int(np.flatnonzero(lengths != lengths[0])[0])
    lengths[[0, first]] = lengths[[first, 0]]
    arrays["lengths"] = lengths
    with open(path, "wb") as handle:
        np.savez(handle, **arrays)


@pytest.mark.parametrize("kind, edit", [("chunks", _edit_chunks), ("vocabulary", _swap_rows)])
@pytest.mark.slow
def test_edited_cache_entry_is_rebuilt_with_a_warning(site, make_config, tmp_path, capsys, kind, edit):
    from receval.chunking import cache as cache_module

    cfg = make_config("dataset=folder", f"dataset.path={site}", f"cache_dir={tmp_path / 'cache'}")
    cold, warm = tmp_path / "cold", tmp_path / "warm"
    cache_module._MEMORY.clear()
    run(cfg, cold)
    (entry,) = (tmp_path / "cache" / kind).iterdir()
    edit(entry)
    cache_module._MEMORY.clear()
    capsys.readouterr()
    run(cfg, warm)
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"receval: warning: cache entry {entry} does not match its checksum (edited or damaged); "
        "rebuilding it"
    ]
    assert results_without_timings(warm) == results_without_timings(cold)
    cache_module._MEMORY.clear()
    run(cfg, tmp_path / "again")  # the rebuilt entry is trusted again, silently
    assert capsys.readouterr().err == ""



@pytest.mark.slow
def test_a_sweep_never_imports_pandas(tmp_path):
    """pyarrow imports pandas (0.5 s of a 6-run sweep) on ``pa.array`` when it is installed;
    the results writer and the chunk cache build Arrow columns from numpy buffers instead."""
    import os
    import subprocess
    import sys

    script = (
        "import runpy, sys\n"
        f"sys.argv = ['receval', 'retriever=bm25', 'chunking.max_words=20,40', 'hydra.sweep.dir={tmp_path}/s', '-m']\n"
        "try:\n    runpy.run_module('receval', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "print('pandas imported' if 'pandas' in sys.modules else 'no pandas')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "RECEVAL_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "no pandas"
    assert (tmp_path / "s" / "1" / "results.parquet").is_file()
