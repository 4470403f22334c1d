"""retriever=lancedb: exact vector search ranks as dense; fts and hybrid run; an ANN
index reports its recall against exact search; a missing extra is one message."""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import numpy as np
import pyarrow.parquet as pq
import pytest

from conftest import SHARED, run_of
from receval.core.errors import ConfigError
from receval.retrievers.lancedb import LanceRetriever


def stored(run_dir):
    return pq.read_table(run_dir / "results.parquet", columns=["retrieved", "scores"]).to_pylist()


def test_ann_recall_is_the_share_of_the_exact_top_k_the_index_found():
    me = LanceRetriever.__new__(LanceRetriever)
    me.dense = SimpleNamespace(chunk_vectors=np.eye(3, dtype=np.float32))
    me.tie_rank = np.arange(3)
    questions = np.array([[1.0, 0.5, 0.0], [0.0, 0.0, 1.0]], dtype=np.float32)  # exact top 2: [0, 1], [2, 0]
    found = np.array([[0, 2], [2, 0]], dtype=np.int32)  # half of the first, all of the second
    me.asked = [(questions, found)]
    assert me.facts() == {"ann_recall@2": 0.75}


def test_without_the_extra_one_message_names_the_pip_command(monkeypatch, make_config):
    from receval import retrievers

    monkeypatch.setitem(sys.modules, "lancedb", None)
    expected = r"needs the lancedb package, which is not installed: pip install 'receval\[lancedb\]'"
    with pytest.raises(ConfigError, match=expected):
        retrievers.build(make_config("retriever=lancedb").retriever, retrievers.Context())


@pytest.mark.dense
def test_exact_vector_search_ranks_exactly_as_dense_and_fts_and_hybrid_run(tmp_path_factory):
    pytest.importorskip("lancedb")
    dense = stored(run_of(tmp_path_factory, "retriever=dense"))
    exact = stored(run_of(tmp_path_factory, "retriever=lancedb"))
    assert [row["retrieved"] for row in exact] == [row["retrieved"] for row in dense]
    for ours, theirs in zip(exact, dense):
        np.testing.assert_allclose(ours["scores"], theirs["scores"], atol=1e-6)
    for search in ("fts", "hybrid"):
        run_dir = run_of(tmp_path_factory, "retriever=lancedb", f"retriever.search={search}")
        means = json.loads((run_dir / "run.json").read_text())["means"]
        assert 0.5 < means["hit@3"] <= 1.0, (search, means)


@pytest.mark.dense
def test_an_ivf_pq_index_reports_its_recall_against_exact_search(tmp_path_factory):
    pytest.importorskip("lancedb")
    for index in ("ivf_pq", "ivf_hnsw_sq"):
        run_dir = run_of(tmp_path_factory, "retriever=lancedb", f"retriever.index={index}", "retriever.nprobes=1")
        info = json.loads((run_dir / "run.json").read_text())
        # 99 chunks: one partition, 256 PQ centroids: (nearly) lossless; cranfield shows the loss
        assert 0.9 <= info["ann_recall@10"] <= 1.0, (index, info["ann_recall@10"])
    exact = json.loads((run_of(tmp_path_factory, "retriever=lancedb") / "run.json").read_text())
    assert not any(key.startswith("ann_recall") for key in exact)  # exact search has no price to report


@pytest.mark.slow
@pytest.mark.dense
def test_cranfield_ivf_pq(tmp_path_factory):
    pytest.importorskip("lancedb")
    cranfield = SHARED / "datasets" / "cranfield"
    if not (cranfield / "corpus.jsonl").exists():
        pytest.skip(f"{cranfield} is absent")
    run_dir = run_of(tmp_path_factory, "dataset=beir", f"dataset.path={cranfield}", "chunking.max_words=null",
                     "retriever=lancedb", "retriever.index=ivf_pq", "retriever.nprobes=2")
    info = json.loads((run_dir / "run.json").read_text())
    assert info["n_chunks"] == 1400 and 0.0 < info["ann_recall@10"] < 1.0
