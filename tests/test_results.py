"""receval.analysis, the Python API (typed arguments; errors name parameters, never flags);
receval.results: discovery of folders of sweeps, imported TREC
runs taking kind and split from the stored questions, the saved-config loader."""

from __future__ import annotations

import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import run_of
from omegaconf import OmegaConf

from receval import analysis, results
from receval.core.errors import RecevalError
from receval.results.external import export
from receval.results.door import read_config_yaml
from receval.results.stored import Run
from receval.cli.report import report_for


@pytest.fixture(scope="module")
def tfidf(tmp_path_factory):
    return run_of(tmp_path_factory, "retriever=tfidf")


@pytest.fixture(scope="module")
def bm25(tmp_path_factory):
    return run_of(tmp_path_factory, "retriever=bm25")


def column(run_dir, name, split=None):
    table = pq.read_table(run_dir / "results.parquet").to_pydict()
    return np.array(
        [v for v, s in zip(table[name], table["split"]) if v is not None and (split is None or s == split)],
        dtype=float,
    )


def test_summary_means_are_the_stored_columns(tfidf, bm25):
    runs = analysis.load(tfidf, bm25)
    rows = analysis.summary(runs, ["hit@3", "rr"])
    assert [r["run_dir"] for r in rows] == [str(tfidf), str(bm25)]
    assert [r["retriever"] for r in rows] == ["tfidf", "bm25"]
    for row, run_dir in zip(rows, (tfidf, bm25)):
        for name in ("hit@3", "rr"):
            assert row[name] == pytest.approx(column(run_dir, name).mean(), abs=1e-12)
            assert row[f"{name}_lo"] <= row[name] <= row[f"{name}_hi"]
        assert row["n_questions"] == len(column(run_dir, "rr"))
    test = analysis.summary(runs, ["rr"], where={"split": "test"})
    assert test[0]["rr"] == pytest.approx(column(tfidf, "rr", "test").mean(), abs=1e-12)
    # the same numbers as the report command's
    assert rows[1]["rr_lo"] == report_for([str(tfidf), str(bm25)]).to_dict()["runs"][1]["metrics"]["rr"]["ci"][0]


def test_pairs_and_floor(tfidf, bm25):
    runs = analysis.load(tfidf, bm25)
    (pair,) = analysis.pairs(runs, baseline="retriever=tfidf", metric="hit@3")
    diff = column(bm25, "hit@3") - column(tfidf, "hit@3")
    assert pair["baseline"] == str(tfidf) and pair["run_dir"] == str(bm25)
    assert pair["diff"] == pytest.approx(diff.mean(), abs=1e-12)
    assert pair["up"] == int((diff > 0).sum()) and pair["down"] == int((diff < 0).sum())
    low = min(column(tfidf, "hit@3").mean(), column(bm25, "hit@3").mean())
    assert analysis.floor(runs, {"hit@3": low - 0.01}) == []
    failures = analysis.floor(runs, {"hit@3": low + 0.01})
    assert len(failures) >= 1 and all("hit@3" in line for line in failures)
    with pytest.raises(RecevalError, match="matches none"):
        analysis.pairs(runs, baseline="retriever=dense")
    with pytest.raises(RecevalError, match="not a number"):
        analysis.floor(runs, {"hit@3": "high"})


def test_a_floor_line_names_the_run_and_no_command_line_flag(tfidf, bm25):
    runs = analysis.load(tfidf, bm25)
    mean = column(tfidf, "hit@3").mean()
    label = analysis.summary(runs, ["hit@3"])[0]["label"]
    assert analysis.floor(runs, {"hit@3": 1.0})[0] == f"#0 {label}: hit@3 {mean:.3f} < 1 ({tfidf})"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda runs: analysis.summary(runs, ["nope"]), r"^metrics: unknown measure 'nope'"),
        (lambda runs: analysis.summary(runs, where={"split": "nope"}), r"no questions with split=nope"),
        (lambda runs: analysis.floor(runs, {"hit@3": 7.0}), r"^floors hit@3=7.0: floors are means between 0 and 1"),
        (lambda runs: analysis.floor(runs, {"hit@3": "x"}), r"^floors hit@3='x': not a number"),
        (lambda runs: analysis.pairs(runs, baseline="retriever=dense"), r"^baseline retriever=dense: matches none"),
        (lambda runs: analysis.pairs(runs, baseline="retriever=tfidf", metric="foo"), r"^metric: unknown measure 'foo'"),
        (lambda runs: analysis.gate(runs[1].run_dir, runs[0].run_dir, margin=-1), r"^margin -1: use a difference >= 0"),
    ],
    ids=["metrics", "where", "floor-range", "floor-type", "baseline", "metric", "margin"],
)
def test_python_api_errors_name_the_parameter_not_a_flag(tfidf, bm25, call, message):
    with pytest.raises(RecevalError, match=message) as caught:
        call(analysis.load(tfidf, bm25))
    assert "--" not in str(caught.value)


def test_a_folder_of_sweeps_is_searched_in_name_order(tfidf, bm25, tmp_path):
    shutil.copytree(tfidf, tmp_path / "day2" / "sweep" / "0")
    shutil.copytree(bm25, tmp_path / "day2" / "sweep" / "1")
    shutil.copytree(bm25, tmp_path / "day1" / "single")
    (tmp_path / "notes").mkdir()
    found = [run.run_dir for run in results.load_runs([tmp_path], headers=True)]
    assert found == [tmp_path / "day1" / "single", tmp_path / "day2" / "sweep" / "0", tmp_path / "day2" / "sweep" / "1"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(RecevalError, match="no run below it"):
        results.load_runs([tmp_path / "empty"], headers=True)


def test_an_imported_trec_run_takes_kind_and_split_from_the_stored_questions(tfidf, tmp_path):
    run_file, qrels = export(tfidf, tmp_path / "run.trec", tmp_path / "qrels.txt", tag="theirs")
    stored, imported = results.load_runs([tfidf, run_file], qrels=qrels)
    assert isinstance(imported, Run)
    assert list(imported.ids) == list(stored.ids)
    assert imported.strings("kind") == stored.strings("kind")
    assert imported.strings("split") == stored.strings("split")
    by = report_for([str(tfidf), str(run_file), "--qrels", str(qrels), "--by", "kind"]).to_dict()["by"]
    assert "external" not in [v["value"] for v in by["values"]]
    assert by["runs"][0]["values"] == by["runs"][1]["values"]
    test = report_for([str(tfidf), str(run_file), "--qrels", str(qrels), "--split", "test"]).to_dict()["runs"]
    assert test[1]["n_questions"] == test[0]["n_questions"] == len(column(tfidf, "rr", "test"))
    assert test[1]["metrics"]["rr"]["mean"] == pytest.approx(column(tfidf, "rr", "test").mean(), abs=1e-12)


def test_unknown_ids_are_external_questions(tfidf, tmp_path):
    run_file = tmp_path / "other.trec"
    run_file.write_text("new1 Q0 d1 1 2.0 x\nnew1 Q0 d2 2 1.0 x\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("new1 0 d2 1\n")
    (imported,) = results.load_runs([run_file], qrels=qrels)
    row = imported.table.to_pylist()[0]
    assert (row["kind"], row["split"], row["rr"], row["first_relevant_rank"]) == ("external", "all", 0.5, 2)


@pytest.mark.parametrize(
    "text",
    ["a: 1e-3\nb: 2026-11-29\nc: .5\nd: 1_000\ne: [1, 3]\nf: null\ng: -.inf\nh: 10:00\ni: yes\n"],
)
def test_saved_configs_read_as_omegaconf_reads_them(tmp_path, text):
    (tmp_path / ".hydra").mkdir()
    (tmp_path / ".hydra" / "config.yaml").write_text(text)
    assert read_config_yaml(tmp_path / ".hydra" / "config.yaml") == OmegaConf.to_container(OmegaConf.create(text))


def test_the_door_has_two_public_names():
    assert sorted(results.__all__) == ["load_runs", "open_run"]


def test_the_python_api_report_is_the_commands(tfidf, bm25):
    """analysis.report_for and `receval report` compose the one report (receval.analysis.compose)."""
    argv = [str(tfidf), str(bm25), "--baseline", "retriever=tfidf", "--metrics", "hit@3,rr", "--by", "kind", "--chain"]
    from_api = analysis.report_for(tfidf, bm25, baseline="retriever=tfidf", metrics=["hit@3", "rr"], by="kind",
                                   chain=True)
    assert from_api.to_dict() == report_for(argv).to_dict()
    assert from_api.pairs[0].diff.mean == pytest.approx(column(bm25, "rr").mean() - column(tfidf, "rr").mean())
