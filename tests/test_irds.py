"""dataset=ir_datasets: a collection registered with ir_datasets' own API and read from
its local store gives the same runs as the same files read as dataset=beir; a file not in
the store is one message, and nothing is downloaded."""

from __future__ import annotations

import shutil
import uuid

import pytest

ir_datasets = pytest.importorskip("ir_datasets")

from ir_datasets.datasets.base import Dataset as IrDataset  # noqa: E402
from ir_datasets.datasets.beir import BeirDocs, BeirQrels, BeirQueries, BeirTitleDoc  # noqa: E402
from ir_datasets.formats import GenericQuery  # noqa: E402
from ir_datasets.util import Download, LocalDownload, RequestsDownload  # noqa: E402

from receval.core.errors import DatasetError  # noqa: E402
from receval.datasets import load_dataset  # noqa: E402
from conftest import FIXTURES, results_without_timings, run_of  # noqa: E402


@pytest.fixture
def store(tmp_path, monkeypatch):
    """An empty ir_datasets store ($IR_DATASETS_HOME) for this test."""
    home = tmp_path / "ir_datasets_home"
    home.mkdir()
    monkeypatch.setenv("IR_DATASETS_HOME", str(home))
    return home


def register_tiny(home) -> str:
    """The beir-splits fixture's test split placed in the store and registered under a
    fresh id with ir_datasets' own classes (as the package registers BEIR collections)."""
    name = f"receval-test-{uuid.uuid4().hex[:8]}"
    folder = home / name
    shutil.copytree(FIXTURES / "beir-splits", folder)
    dataset_id = f"{name}/test"
    ir_datasets.registry.register(dataset_id, IrDataset(
        BeirDocs(name, LocalDownload(folder / "corpus.jsonl"), BeirTitleDoc),
        BeirQueries(name, LocalDownload(folder / "queries.jsonl"), GenericQuery),
        BeirQrels(LocalDownload(folder / "qrels" / "test.tsv"), qrels_defs={}),
    ))
    return dataset_id


@pytest.mark.slow
def test_a_registered_dataset_gives_the_runs_of_the_same_files_read_as_beir(store, tmp_path_factory):
    dataset_id = register_tiny(store)
    common = ["chunking.max_words=null", "retriever=bm25"]
    via_store = run_of(tmp_path_factory, "dataset=ir_datasets", f"dataset.id={dataset_id}", *common)
    via_beir = run_of(tmp_path_factory, "dataset=beir", f"dataset.path={FIXTURES / 'beir-splits'}",
                      "dataset.split=test", *common)
    a, b = results_without_timings(via_store), results_without_timings(via_beir)
    assert a["question_id"] and a == b
    assert set(a["split"]) == {"test"}
    assert (store / "beir" / dataset_id.split("/")[0] / "docs.pklz4").exists()  # ir_datasets' own store was used


def test_the_loader_reads_the_same_sections_and_questions_as_beir(store):
    from omegaconf import OmegaConf

    dataset_id = register_tiny(store)
    ours = load_dataset(OmegaConf.create({"name": "x", "format": "ir_datasets", "id": dataset_id, "title": True}))
    beir = load_dataset(OmegaConf.create({"name": "x", "format": "beir", "path": str(FIXTURES / "beir-splits"),
                                          "questions": None, "split": "test", "title": True}))
    assert ours.sections == beir.sections and ours.questions == beir.questions
    assert len(ours.fingerprint) == 64


def test_a_file_missing_from_the_store_is_one_message_and_no_download(store, monkeypatch):
    from omegaconf import OmegaConf

    def no_network(self):
        raise AssertionError("a download was started")

    monkeypatch.setattr(RequestsDownload, "stream", no_network)
    dataset_id = f"receval-test-{uuid.uuid4().hex[:8]}/test"
    missing = store / "not-here" / "queries.json"
    ir_datasets.registry.register(dataset_id, IrDataset(
        BeirDocs("x", Download([RequestsDownload("http://192.0.2.1/corpus.jsonl")], cache_path=str(store / "c.jsonl")),
                 BeirTitleDoc),
        BeirQueries("x", Download([RequestsDownload("http://192.0.2.1/q")], cache_path=str(missing)), GenericQuery),
        BeirQrels(LocalDownload(store / "qrels.tsv"), qrels_defs={}),
    ))
    cfg = OmegaConf.create({"name": "x", "format": "ir_datasets", "id": dataset_id, "title": True})
    with pytest.raises(DatasetError, match=r"is not in the ir_datasets store \(IR_DATASETS_HOME=.*receval never downloads"):
        load_dataset(cfg)
    with pytest.raises(DatasetError, match="is not an ir_datasets id"):
        load_dataset(OmegaConf.create({"name": "x", "format": "ir_datasets", "id": "no/such/id", "title": True}))
    with pytest.raises(DatasetError, match="has no qrels"):
        load_dataset(OmegaConf.create({"name": "x", "format": "ir_datasets", "id": "beir/scifact", "title": True}))
    # a package dataset with an empty store: refused before any request
    with pytest.raises(DatasetError, match="beir/scifact/test.*never downloads"):
        load_dataset(OmegaConf.create({"name": "x", "format": "ir_datasets", "id": "beir/scifact/test", "title": True}))


@pytest.mark.slow
def test_the_config_is_typed_and_the_id_required(make_config):
    from receval.run.config import check
    from receval.core.errors import ConfigError

    cfg = make_config("dataset=ir_datasets", "dataset.id=beir/scifact/test")
    assert cfg.dataset.id == "beir/scifact/test" and cfg.dataset.format == "ir_datasets"
    check(cfg)
    with pytest.raises(ConfigError, match="dataset.id"):
        check(make_config("dataset=ir_datasets"))
    assert "id" not in make_config("dataset=beir", "dataset.path=/x").dataset  # other formats: no new key
