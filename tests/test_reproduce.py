"""receval reproduce: re-run stored runs from their saved configs, compare exactly."""

import json
import os
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import FIXTURES, one_error_line, run_cli, sweep_of
from forge import forged
from conftest import exit_code as command_exit_code

from receval.cli.reproduce import compare_tables, main, reproduce
from receval.results.format import META_KEY
from receval.results import open_run


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    """4 runs, non-default values (tfidf, whole sections) so defaults cannot pass for them."""
    return sweep_of(tmp_path_factory, "retriever=bm25,tfidf", "chunking.max_words=20,null")


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    """Re-runs write the index cache (cache_dir, relative) under the test's folder."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def scratch(tmp_path, monkeypatch) -> Path:
    """Temporary re-runs go here, so a test sees whether they were kept or deleted."""
    target = tmp_path / "tmp"
    target.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(target))
    return target


def exit_code(argv) -> int:
    return command_exit_code(main, argv)


def copy_run(run_dir: Path, target: Path) -> Path:
    shutil.copytree(run_dir, target)
    return target


def edit_config(run_dir: Path, change) -> None:
    path = run_dir / ".hydra" / "config.yaml"
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data))
    forged(run_dir)


@pytest.mark.slow
def test_every_run_of_a_sweep_is_identical(sweep, scratch, capsys):
    assert main([str(sweep)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 5
    for job, line in enumerate(lines[:4]):
        assert line.startswith(f"{sweep / str(job)}: identical (49 questions, ")
        assert "timings excepted; re-run deleted)" in line
    assert lines[4] == "4 of 4 runs identical"
    assert list(scratch.iterdir()) == []  # identical re-runs are not kept


@pytest.mark.slow
def test_out_keeps_a_complete_run(sweep, tmp_path, capsys):
    out = tmp_path / "again"
    assert main([str(sweep / "3"), "--out", str(out), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["identical"] is True
    assert data["runs"][0]["out_dir"] == str(out)
    kept = yaml.safe_load((out / ".hydra" / "config.yaml").read_text())  # the values used, as data
    stored = yaml.safe_load((sweep / "3" / ".hydra" / "config.yaml").read_text())
    assert "${" not in json.dumps(kept) and kept.pop("cache_dir") == os.environ["RECEVAL_CACHE_DIR"]
    assert kept == {k: v for k, v in stored.items() if k != "cache_dir"}
    found = compare_tables(open_run(sweep / "3", skip=frozenset()).table, open_run(out, skip=frozenset()).table)
    assert found["differences"] == {} and found["only_stored"] == found["only_reproduced"] == []
    assert main([str(out)]) == 0  # a reproduction reproduces too
    capsys.readouterr()
    assert exit_code([sweep / "3", "--out", out]) == 2
    assert "already holds a run" in one_error_line(capsys)


@pytest.mark.slow
def test_several_runs_with_out_go_to_numbered_folders(sweep, tmp_path, capsys):
    out = tmp_path / "all"
    assert main([str(sweep / "0"), str(sweep / "1"), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["0", "1"]
    assert (out / "1" / "results.parquet").is_file()


@pytest.mark.slow
def test_a_tampered_results_file_differs(sweep, tmp_path, scratch, capsys):
    run = copy_run(sweep / "1", tmp_path / "run")
    table = pq.read_table(run / "results.parquet")
    rr = table.column("rr").to_pylist()
    rr[4] = 0.125
    retrieved = table.column("retrieved").to_pylist()
    retrieved[6] = list(reversed(retrieved[6]))
    table = table.set_column(table.column_names.index("rr"), "rr", pa.array(rr, pa.float64()))
    table = table.set_column(
        table.column_names.index("retrieved"), "retrieved", pa.array(retrieved, pa.list_(pa.string()))
    )
    pq.write_table(table, run / "results.parquet")
    forged(run)
    assert main([str(run)]) == 1
    lines = capsys.readouterr().out.splitlines()
    (kept,) = scratch.iterdir()  # a differing re-run is kept for inspection
    assert lines == [
        f"{run}: DIFFERS (re-run in {kept})",
        "  2 of 49 questions differ:",
        "  q05: rr",
        "  q07: retrieved",
    ]
    assert main([str(run), "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["identical"] is False
    assert data["runs"][0]["differences"] == [
        {"question_id": "q05", "columns": ["rr"]},
        {"question_id": "q07", "columns": ["retrieved"]},
    ]


@pytest.mark.slow
def test_missing_questions_and_columns_are_differences(sweep, tmp_path, capsys):
    run = copy_run(sweep / "0", tmp_path / "run")
    table = pq.read_table(run / "results.parquet")
    pq.write_table(table.slice(1).drop_columns(["ndcg@10"]), run / "results.parquet")
    forged(run)
    result = reproduce(run, tmp_path / "out")
    assert not result.identical
    assert result.only_reproduced == ["q01"]
    assert result.columns_only_reproduced == ["ndcg@10"]
    assert result.differences == {}


@pytest.mark.slow
def test_latency_is_not_compared(sweep, tmp_path):
    run = copy_run(sweep / "2", tmp_path / "run")
    table = pq.read_table(run / "results.parquet")
    slow = pa.array([v * 7 + 1 for v in table.column("latency_ms").to_pylist()], pa.float64())
    pq.write_table(table.set_column(table.column_names.index("latency_ms"), "latency_ms", slow), run / "results.parquet")
    forged(run)
    assert reproduce(run).identical


@pytest.mark.slow
def test_newer_schema_is_refused(sweep, tmp_path, capsys):
    run = copy_run(sweep / "0", tmp_path / "run")
    table = pq.read_table(run / "results.parquet")
    meta = json.loads(table.schema.metadata[META_KEY])
    meta["schema_version"] = 99
    pq.write_table(table.replace_schema_metadata({META_KEY: json.dumps(meta)}), run / "results.parquet")
    forged(run)
    assert exit_code([run]) == 2
    line = one_error_line(capsys)
    assert "written with results schema 99" in line and "upgrade receval" in line


@pytest.mark.slow
def test_saved_config_is_used_not_conf(sweep, tmp_path, capsys):
    """The saved tfidf / whole-section values are what runs (defaults would differ)."""
    run = copy_run(sweep / "3", tmp_path / "run")
    edit_config(run, lambda c: c["chunking"].update(max_words=40))
    assert main([str(run)]) == 1  # the edited config retrieves differently
    assert "DIFFERS" in capsys.readouterr().out


@pytest.mark.slow
def test_run_json_config_when_hydra_folder_is_missing(sweep, tmp_path, capsys):
    run = copy_run(sweep / "3", tmp_path / "run")
    shutil.rmtree(run / ".hydra")
    forged(run)  # without it, the folder is incomplete (tests/test_door.py)
    assert main([str(run)]) == 0
    assert "identical" in capsys.readouterr().out


@pytest.mark.slow
def test_saved_config_this_receval_cannot_use(sweep, tmp_path, capsys):
    run = copy_run(sweep / "0", tmp_path / "run")
    edit_config(run, lambda c: c["chunking"].update(max_word=40))
    assert exit_code([run]) == 2
    line = one_error_line(capsys)  # the chunker's own schema names the key
    assert "its saved config is not valid in this receval" in line and "max_word" in line
    run = copy_run(sweep / "0", tmp_path / "run2")
    edit_config(run, lambda c: c.update(depth=0))
    assert exit_code([run]) == 2
    assert "its saved config is not valid in this receval: depth=0" in one_error_line(capsys)


@pytest.mark.slow
def test_relative_dataset_path_resolves_against_the_current_directory(tmp_path, monkeypatch, capsys):
    shutil.copytree(FIXTURES / "site", tmp_path / "site")
    done = run_cli("dataset=folder", "dataset.path=site", "hydra.run.dir=run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    saved = yaml.safe_load((tmp_path / "run" / ".hydra" / "config.yaml").read_text())
    assert saved["dataset"]["path"] == "site"
    monkeypatch.chdir(tmp_path)
    assert main(["run"]) == 0
    assert "identical" in capsys.readouterr().out
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert exit_code([tmp_path / "run"]) == 2
    line = one_error_line(capsys)
    assert "saved dataset.path=site is relative and does not exist under the current directory" in line
    assert str(elsewhere) in line


def test_missing_or_non_run_directories(tmp_path, capsys):
    assert exit_code([tmp_path / "nope"]) == 2
    assert "no such directory" in one_error_line(capsys)
    assert exit_code([tmp_path]) == 2
    assert "not a run directory" in one_error_line(capsys)


@pytest.mark.slow
def test_plain_hydra_form_reproduces_and_config_dir_does_not(sweep, tmp_path):
    """The module docstring's command works; --config-dir silently composes the defaults."""
    saved = (sweep / "3" / ".hydra").resolve()
    done = run_cli("-cp", str(saved), "-cn", "config", "hydra.run.dir=plain", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    found = compare_tables(open_run(sweep / "3", skip=frozenset()).table, open_run(tmp_path / "plain", skip=frozenset()).table)
    assert found["differences"] == {} and not found["only_stored"]
    done = run_cli("--config-dir", str(saved), "hydra.run.dir=wrong", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    found = compare_tables(open_run(sweep / "3", skip=frozenset()).table, open_run(tmp_path / "wrong", skip=frozenset()).table)
    assert found["differences"]  # bm25 over 120-word chunks, not the saved tfidf run
