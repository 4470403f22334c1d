"""A run stores its config once (run.json's ``config``, with ``filled``: what receval's
schemas fill in that it leaves out); the flat ``params`` and the label's filled component
``nodes`` that runs wrote beside it before are derived when read, and read the same.

``tests/fixtures/old-layout/`` holds two runs written by receval before the change (commit
1cce2af): a fused retriever (``retriever=fused dataset=folder
dataset.path=tests/fixtures/site cache_dir=null``, its members written short, ``[tfidf,
bm25]``, and filled in ``label.nodes``) and the traces import of its spans (whose saved
config leaves most of the schema out, filled in ``params``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from receval.core.errors import RunError
from receval.results import labels
from receval.results.door import open_run
from receval.results.format import RUN_JSON
from receval.results.record import derived_facts
from receval.run.config import config_dir

from forge import forged

ROOT = Path(__file__).resolve().parent.parent
OLD = ROOT / "tests" / "fixtures" / "old-layout"
MEMBERS = [{"kind": "tfidf"}, {"b": 0.75, "k1": 1.2, "kind": "bm25"}]  # as the schemas fill [tfidf, bm25]


def stored(run_dir: Path) -> dict:
    return json.loads((run_dir / RUN_JSON).read_text(encoding="utf-8"))


def read_as_before(run_dir: Path) -> tuple:
    """What readers take from a run's config: run.json's params and label as readers take
    them (:attr:`Run.facts`), the flat config, the component nodes and the run's name."""
    run = open_run(run_dir)
    return (run.facts["params"], run.facts["label"], list(run.flat.items()), labels.nodes_of(run),
            labels.naming_of([run]).labels)


def test_a_run_written_before_reads_its_stored_params_and_nodes():
    fused, traces = stored(OLD / "fused"), stored(OLD / "traces")
    assert "filled" not in fused and "params" in fused and "nodes" in fused["label"]
    run = open_run(OLD / "fused")
    assert run.info == run.facts == fused  # as stored
    assert run.facts["label"]["nodes"]["retriever"]["members"] == MEMBERS
    assert run.flat["retriever.members"] == ("tfidf", "bm25") and run.flat["chunking.max_words"] == 120
    assert labels.naming_of([run]).labels == ["rrf(tfidf+bm25), 120 words, headings"]
    imported = open_run(OLD / "traces")
    assert imported.facts == traces and imported.flat["tokenizer.stem"] is False
    assert imported.flat["retriever"] == "???" and labels.naming_of([imported]).labels == ["traces"]


def test_derived_params_and_nodes_are_those_a_run_stored_before():
    """The old runs' run.json with params and label.nodes taken out and ``filled`` (what
    the schemas filled) put in reads exactly as the old run.json did."""
    fused, traces = stored(OLD / "fused"), stored(OLD / "traces")
    once = {k: v for k, v in fused.items() if k != "params"}
    once["label"] = {k: v for k, v in fused["label"].items() if k != "nodes"}
    once["filled"] = {"retriever.members": MEMBERS}
    derived = {k: v for k, v in derived_facts(once).items() if k != "filled"}
    assert derived == fused and list(derived) == list(fused)  # keys in run.json's order too
    once = {k: v for k, v in traces.items() if k != "params"}
    once["label"] = {k: v for k, v in traces["label"].items() if k != "nodes"}
    saved = {k for k, _ in _flat(traces["config"])}
    once["filled"] = {k: v for k, v in traces["params"].items() if k not in saved}
    assert {k: v for k, v in derived_facts(once).items() if k != "filled"} == traces
    assert derived_facts(stored(OLD / "fused")) == fused  # a run that stored them: as stored


def _flat(config: dict):
    from receval.results.record import flatten

    return flatten(config).items()


@pytest.mark.slow
def test_a_run_written_now_stores_the_config_once_and_reads_as_the_old_run(tmp_path, monkeypatch):
    """The fixture's run made again: run.json holds no params and no label nodes, only
    ``config`` and what the schemas filled (the fused members); read, it gives the old
    run's params, label, flat config, nodes and name."""
    from receval.run.pipeline import run

    monkeypatch.chdir(ROOT)  # the fixture's dataset.path is relative to the repository
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        cfg = compose("config", overrides=["retriever=fused", "dataset=folder", "dataset.path=tests/fixtures/site",
                                           "cache_dir=null"])
    run(cfg, tmp_path / "new")
    new = stored(tmp_path / "new")
    assert "params" not in new and "nodes" not in new["label"] and new["filled"] == {"retriever.members": MEMBERS}
    assert new["config"] == stored(OLD / "fused")["config"]
    assert open_run(tmp_path / "new").info == new  # Run.info: run.json as stored (the tracker uploads it)
    assert read_as_before(tmp_path / "new") == read_as_before(OLD / "fused")


def test_a_filled_that_is_not_a_mapping_is_refused_naming_it(tmp_path):
    folder = shutil.copytree(OLD / "fused", tmp_path / "run")
    info = stored(folder)
    info["filled"] = ["retriever.members"]
    (folder / RUN_JSON).write_text(json.dumps(info), encoding="utf-8")
    forged(folder)
    with pytest.raises(RunError, match=r"run\.json: filled is \['retriever\.members'\], not a mapping"):
        open_run(folder)
