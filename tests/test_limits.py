"""Out-of-range input and a failing disk give one message, never a traceback: grades
beyond int32, an output folder that is a file, a full disk (no half-written file), a
depth beyond the chunks, an absurd resample count, an unset variable in a stored path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, results_without_timings, run_cli
from forge import forged

from receval.run.pipeline import run
from receval.results.format import RESULTS, RUN_JSON


def test_grade_above_int32_is_refused_at_load_naming_the_line(tmp_path):
    from receval.datasets.folder import read_pages
    from receval.datasets.questions import read_questions
    from receval.core.errors import RecevalError

    sections, _ = read_pages(FIXTURES / "site" / "pages")
    path = tmp_path / "questions.jsonl"
    good = {"id": "a", "question": "day pass?", "relevant": {"bikes#prices": 1000}}
    bad = {"id": "b", "question": "day pass?", "relevant": {"bikes#prices": 2**31}}
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(RecevalError) as raised:
        read_questions(path, sections)
    assert raised.value.problems == [
        f"{path}:2: grade of 'bikes#prices' is 2147483648; use an integer from 1 to 1000"
    ]
    path.write_text(json.dumps(good) + "\n", encoding="utf-8")
    (question,) = read_questions(path, sections)
    assert question.relevant == {"bikes#prices": 1000}


def test_qrels_grade_above_int32_is_refused(tmp_path):
    from receval.core.errors import RecevalError
    from receval.results.trec import read_qrels

    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 1\nq1 0 d2 99999999999\n", encoding="utf-8")
    with pytest.raises(RecevalError, match=r"qrels.txt:2: grade of 'd2' is 99999999999; use an integer from 1 to 1000"):
        read_qrels(path)


@pytest.mark.slow
@pytest.mark.parametrize("args", [
    ["hydra.run.dir={file}"],
    ["hydra.run.dir={file}/run"],
    ["hydra.sweep.dir={file}/sweep", "retriever=bm25,tfidf", "-m"],
])
def test_output_folder_occupied_by_a_file(tmp_path, args):
    occupied = tmp_path / "occupied"
    occupied.write_text("not a folder")
    done = run_cli(*(a.format(file=occupied) for a in args), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    key = "sweep" if "-m" in args else "run"
    assert done.stderr.splitlines() == [
        f"receval: error: hydra.{key}.dir={args[0].split('=', 1)[1].format(file=occupied)}: cannot "
        f"write the {key} there ({occupied} is a file, not a folder); choose another folder with "
        f"hydra.{key}.dir=..."
    ]
    assert occupied.read_text() == "not a folder"


@pytest.mark.parametrize("errno_name", ["ENOSPC", "EFBIG"])
@pytest.mark.parametrize("which", ["results", "run.json"])
def test_full_disk_names_the_path_and_leaves_no_half_files(
    make_config, tmp_path, monkeypatch, capsys, errno_name, which
):
    import errno
    import os

    from receval.results import write
    from receval.core.errors import exit_on_error

    name = RESULTS if which == "results" else RUN_JSON

    def failing(write):
        def full(self_or_table, where, *args, **kwargs):
            path = where if which == "results" else self_or_table
            if Path(path).name.startswith(f".{name}."):  # the writer of this file only
                Path(path).write_bytes(b"half")
                code = getattr(errno, errno_name)
                raise OSError(code, os.strerror(code))
            return write(self_or_table, where, *args, **kwargs)
        return full

    if which == "results":  # results.parquet is written by a ParquetWriter, a row group at a time
        opened = write.pq.ParquetWriter
        monkeypatch.setattr(write.pq, "ParquetWriter", lambda where, schema, **kw: failing(
            lambda _, path: opened(path, schema, **kw))(None, where))
    else:
        monkeypatch.setattr(Path, "write_text", failing(Path.write_text))
    target = tmp_path / "run"
    with pytest.raises(SystemExit) as stop, exit_on_error():
        run(make_config(), target)
    assert stop.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"receval: error: {target / name}: cannot write it, ")
    assert sorted(p.name for p in target.iterdir()) == []  # no results without run.json, no temp files


@pytest.mark.slow
def test_huge_depth_is_capped_at_the_chunks_with_a_note(site, make_config, tmp_path, capsys):
    base = ["dataset=folder", f"dataset.path={site}"]
    usual, deep = tmp_path / "usual", tmp_path / "deep"
    run(make_config(*base, "depth=10"), usual)  # 8 chunks: 10 already keeps every one
    capsys.readouterr()
    run(make_config(*base, "depth=100000000"), deep)
    assert capsys.readouterr().err.splitlines() == [
        "receval: note: depth=100000000 is more than the 8 chunks; each question keeps at most 10"
    ]
    assert results_without_timings(deep) == results_without_timings(usual)


def test_huge_n_resamples_is_one_message(site, make_config, tmp_path, capsys):
    from receval.cli.report import main

    run(make_config("dataset=folder", f"dataset.path={site}"), tmp_path / "r")
    capsys.readouterr()
    try:
        code = main([str(tmp_path / "r"), "--n-resamples", "100000000000"])
    except SystemExit as stop:
        code = stop.code
    assert code == 2
    assert capsys.readouterr().err.splitlines() == [
        "receval: error: bootstrap n_resamples=100000000000: use at most 1,000,000 (2000 to 10000 "
        "is usual; every resample is held in memory)"
    ]


def test_unset_env_variable_in_a_saved_dataset_path_under_reproduce(
    site, make_config, tmp_path, capsys, monkeypatch
):
    from receval.cli.reproduce import main

    run_dir = tmp_path / "r"
    run(make_config("dataset=folder", f"dataset.path={site}"), run_dir)
    info = json.loads((run_dir / RUN_JSON).read_text())  # no .hydra: run.json's config is used
    assert info["config"]["dataset"]["path"] == str(site)
    info["config"]["dataset"]["path"] = "${oc.env:RECEVAL_TEST_UNSET}/site"
    (run_dir / RUN_JSON).write_text(json.dumps(info))
    forged(run_dir)
    monkeypatch.delenv("RECEVAL_TEST_UNSET", raising=False)
    capsys.readouterr()
    try:
        code = main([str(run_dir)])
    except SystemExit as stop:
        code = stop.code
    assert code == 2
    (line,) = capsys.readouterr().err.splitlines()  # trust's rule: a stored run is data
    assert line.startswith("receval: error: ") and "dataset.path" in line
    assert "${oc.env:RECEVAL_TEST_UNSET}/site" in line
