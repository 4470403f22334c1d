"""The dense encoders' default backend: onnx where the onnx extra is installed, else torch
(receval.run.config.default_dense_backend), saved as resolved, and never sharing vectors."""

from __future__ import annotations

import importlib.util

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from receval.run import config
from receval.encoders import EmbeddingCache, LocalEncoder, OnnxEncoder

HAS_ONNX = all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "onnx"))


@pytest.mark.parametrize("missing", [(), ("onnxruntime",), ("onnx",)])
def test_onnx_is_the_default_only_where_its_extra_is_installed(monkeypatch, missing):
    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in missing else found(name, *a))
    expected = "local" if missing else ("onnx" if HAS_ONNX else "local")
    assert config.default_dense_backend() == expected


@pytest.mark.slow  # composes three configs
def test_every_dense_default_resolves_to_it_and_an_explicit_backend_stays():
    config.register()
    backend = config.default_dense_backend()
    with initialize_config_dir(config_dir=config.config_dir(), version_base="1.3"):
        stages = compose("config", overrides=["+stage=hybrid_rerank"])
        vector = compose("config", overrides=["+stage=vector"])
        local = compose("config", overrides=["retriever=dense", "retriever.backend=local"])
    resolved = OmegaConf.to_container(stages, resolve=True)
    assert resolved["retriever"]["members"][1]["backend"] == backend  # the hybrid's dense member
    assert resolved["rerank"]["backend"] == "wordllama"  # the stages' re-ranker says its own
    assert str(OmegaConf.to_container(vector, resolve=True)["retriever"]["backend"]) == backend
    assert str(local.retriever.backend) == "local"
    # run.json saves the backend chosen, never the default's name: a re-run elsewhere encodes the same way
    from receval.run.pipeline import as_written

    assert as_written(stages)["retriever"]["members"][1]["backend"] == backend
    assert OmegaConf.to_container(stages)["retriever"]["members"][1]["backend"] == config.DENSE_BACKEND


def test_onnx_and_torch_vectors_never_share_a_cache_folder(tmp_path):
    torch_cache = EmbeddingCache(tmp_path, LocalEncoder("all-MiniLM-L6-v2").identity)
    onnx_cache = EmbeddingCache(tmp_path, OnnxEncoder("all-MiniLM-L6-v2", tmp_path).identity)
    assert torch_cache.folder != onnx_cache.folder
