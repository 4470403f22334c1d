"""Issue 10, "numbers that are silently wrong or stale" and tracebacks: items 5, 6, 8, 9, 11.

Each test names its item; each failed on the code before the fix.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import FIXTURES, run_cli

from receval.results.configs import differing_params
from receval.pipeline import config_hash_of, run
from receval.results.format import RESULTS, RUN_JSON


def _relabel(site: Path) -> None:
    """Point question b1 at another section: one label changed, nothing else."""
    path = site / "questions.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    assert first["relevant"] == ["bikes#prices"]
    first["relevant"] = ["bikes#returning-a-bike"]
    lines[0] = json.dumps(first)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _relevant_of(run_dir: Path, qid: str) -> list[str]:
    table = pq.read_table(run_dir / RESULTS, columns=["question_id", "relevant"]).to_pydict()
    return table["relevant"][table["question_id"].index(qid)]


# ------------------------------------------------- 5, 6: resume compares data and identity


@pytest.mark.slow
def test_item5_resume_reruns_when_a_label_changed_item6_not_for_non_result_settings(site, tmp_path):
    out = tmp_path / "run"
    base = ["dataset=folder", f"dataset.path={site}", f"hydra.run.dir={out}"]
    first = run_cli(*base, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert _relevant_of(out, "b1") == ["bikes#prices"]
    fingerprint = json.loads((out / RUN_JSON).read_text())["dataset_fingerprint"]

    # item 6: cache, batching and bootstrap settings do not change results: skipped
    same = run_cli(
        *base, "search_batch=4", f"cache_dir={tmp_path / 'other-cache'}",
        "bootstrap.n_resamples=50", "bootstrap.seed=3", cwd=tmp_path,
    )
    assert same.returncode == 0, same.stderr
    assert "skipped:" in same.stdout

    # item 5: one label edited -> the job runs again and stores the new label
    _relabel(site)
    again = run_cli(*base, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "skipped:" not in again.stdout
    assert _relevant_of(out, "b1") == ["bikes#returning-a-bike"]
    assert json.loads((out / RUN_JSON).read_text())["dataset_fingerprint"] != fingerprint


def test_item5_report_warns_once_naming_runs_over_different_datasets(site, make_config, tmp_path, capsys):
    from receval.cli.report import main

    cfg = make_config("dataset=folder", f"dataset.path={site}")
    old, new, twin = tmp_path / "old", tmp_path / "new", tmp_path / "twin"
    run(cfg, old)
    run(cfg, twin)
    capsys.readouterr()
    assert main([str(old), str(twin)]) == 0
    assert "fingerprints differ" not in capsys.readouterr().err
    _relabel(site)
    run(cfg, new)
    capsys.readouterr()
    assert main([str(old), str(new)]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "fingerprints differ" in line]
    assert len(warnings) == 1
    assert str(old) in warnings[0] and str(new) in warnings[0]


def test_item6_identity_ignores_non_result_settings(make_config):
    plain = make_config()
    for override in ("cache_dir=/elsewhere", "search_batch=8", "bootstrap.n_resamples=100",
                     "bootstrap.level=0.9", "bootstrap.method=bca", "bootstrap.seed=5",
                     "objective.metric=hit@3", "objective.split=null"):
        assert config_hash_of(make_config(override)) == config_hash_of(plain), override
    assert config_hash_of(make_config("chunking.max_words=40")) != config_hash_of(plain)
    assert config_hash_of(make_config("depth=20")) != config_hash_of(plain)


def test_item6_non_result_settings_are_no_differing_parameter():
    flats = [
        {"retriever.name": "bm25", "cache_dir": "a", "search_batch": 1, "bootstrap.seed": 0,
         "objective.metric": "rr"},
        {"retriever.name": "tfidf", "cache_dir": "b", "search_batch": 8, "bootstrap.seed": 1,
         "objective.metric": "hit@3"},
    ]
    assert differing_params(flats) == ["retriever.name"]


# ------------------------------------------------- 8: duplicate cutoffs, sweeps checked up front


def test_item8_repeated_cutoff_is_a_config_error(make_config):
    from receval.config import check
    from receval.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"metrics.ks=\[1, 1, 3\] names a cutoff twice") as error:
        check(make_config("metrics.ks=[1,1,3]"))
    assert sum("cutoff" in p for p in error.value.problems) == 1  # one rule, one message


@pytest.mark.slow
def test_item8_repeated_cutoff_on_the_command_line(tmp_path):
    done = run_cli("metrics.ks=[1,1,3]", f"hydra.run.dir={tmp_path / 'r'}", cwd=tmp_path)
    assert done.returncode == 2
    assert "names a cutoff twice" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "r" / RESULTS).exists()


@pytest.mark.slow
def test_item8_every_sweep_value_is_checked_before_job_0(tmp_path):
    sweep = tmp_path / "s"
    done = run_cli("chunking.max_words=20,0,40", f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "chunking.max_words=0" in lines[0] and "sweep job 1" in lines[0], lines
    assert not sweep.exists()  # job 0 did not run


@pytest.fixture
def sweep_in_process(monkeypatch, tmp_path):
    """Run ``python -m receval ARGS -m`` in this process with a recording task and
    check; returns (exit code, checked, ran, folder)."""
    import sys

    from hydra.core.global_hydra import GlobalHydra

    from receval.cli.run import hydra_command
    from receval.core.errors import ConfigError

    # Hydra's logging setup (logging.config.dictConfig) closes every handler, pytest's own
    # log capture too: left out here, after the plugin scan that re-executes the launcher
    import hydra._internal.core_plugins.basic_launcher as launcher
    import hydra._internal.hydra as hydra_app
    import hydra.core.utils as hydra_utils
    from hydra.core.plugins import Plugins

    Plugins.instance()
    for module in (launcher, hydra_app, hydra_utils):
        monkeypatch.setattr(module, "configure_log", lambda *args, **kwargs: None)

    def sweep(*args: str):
        checked, ran = [], []

        def check(cfg):
            checked.append((cfg.retriever.kind, cfg.depth))
            if cfg.depth == 7:
                raise ConfigError("depth=7: not liked")

        main = hydra_command("config", lambda cfg: ran.append((cfg.retriever.kind, cfg.depth)), check)
        folder = tmp_path / "sweep"
        monkeypatch.setattr(sys, "argv", ["receval", *args, f"hydra.sweep.dir={folder}", "-m"])
        GlobalHydra.instance().clear()  # hydra.main starts its own
        try:
            main()
            code = 0
        except SystemExit as stop:
            code = stop.code
        finally:
            GlobalHydra.instance().clear()
        return code, checked, ran, folder

    return sweep


def test_item8_the_sweeper_checks_every_job_before_job_0(sweep_in_process, capsys):
    code, checked, ran, folder = sweep_in_process("retriever=bm25,tfidf", "depth=5,7")
    assert code == 2
    assert checked == [("bm25", 5), ("bm25", 7), ("tfidf", 5), ("tfidf", 7)]
    assert ran == [] and not folder.exists()  # nothing ran, nothing was written
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        "receval: error: depth=7: not liked [sweep job 1 (retriever=bm25 depth=7), "
        "3 (retriever=tfidf depth=7)]; nothing was run"
    )


def test_item8_the_sweeper_composes_each_job_once(sweep_in_process, monkeypatch):
    """Hydra's basic sweeper composes every job twice (to validate, to launch); receval's
    hands the launcher the config it checked: one composition per job, the same values."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    composed = []
    original = ConfigLoaderImpl.load_sweep_config

    def counting(self, master_config, sweep_overrides):
        composed.append(tuple(sweep_overrides))
        return original(self, master_config, sweep_overrides)

    monkeypatch.setattr(ConfigLoaderImpl, "load_sweep_config", counting)
    code, checked, ran, folder = sweep_in_process("retriever=bm25,tfidf", "depth=5,6,8")
    assert code == 0
    expected = [(kind, depth) for kind in ("bm25", "tfidf") for depth in (5, 6, 8)]
    assert checked == ran == expected
    assert len(composed) == len(set(composed)) == 6
    assert sorted(p.name for p in folder.iterdir()) == [".receval-sweep.json", "0", "1", "2", "3", "4", "5", "multirun.yaml"]


def test_item8_the_sweepers_loader_pickles_as_hydras():
    """A remote launcher (Ray, joblib) ships its context to workers: the configs kept
    for the launcher stay on the driver."""
    import pickle

    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra._internal.utils import create_config_search_path
    from hydra.core.plugins import Plugins

    Plugins.instance()  # the scan first (see receval.cli.run.use_sweeper)
    from hydra_plugins.receval_sweeper import ComposedOnce

    loader = ConfigLoaderImpl(config_search_path=create_config_search_path(None))
    wrapped = ComposedOnce(loader)
    wrapped._composed[(0, ("depth=5",))] = ["kept"]
    shipped = pickle.loads(pickle.dumps(wrapped))
    assert type(shipped) is ConfigLoaderImpl


# ------------------------------------------------- 9: cache entries carry a checksum


def _results_without_timings(run_dir: Path) -> dict:
    table = pq.read_table(run_dir / RESULTS)
    return {k: v for k, v in table.to_pydict().items() if not k.startswith("latency_ms")}


def _edit_chunks(path: Path) -> None:
    """Change one chunk's text and rewrite a valid file, metadata kept as tools keep it."""
    table = pq.read_table(path)
    texts = table.column("text").to_pylist()
    texts[0] = "bikes prices day pass cost annual membership " * 5
    table = table.set_column(table.column_names.index("text"), "text", pa.array(texts))
    pq.write_table(table, path)


def _swap_rows(path: Path) -> None:
    """Swap two chunks' token lengths in the vocabulary entry; every array kept."""
    with np.load(path) as data:
        arrays = {name: data[name] for name in data.files}
    lengths = arrays["lengths"].copy()
    first = int(np.flatnonzero(lengths != lengths[0])[0])
    lengths[[0, first]] = lengths[[first, 0]]
    arrays["lengths"] = lengths
    with open(path, "wb") as handle:
        np.savez(handle, **arrays)


@pytest.mark.parametrize("kind, edit", [("chunks", _edit_chunks), ("vocabulary", _swap_rows)])
def test_item9_edited_cache_entry_is_rebuilt_with_a_warning(site, make_config, tmp_path, capsys, kind, edit):
    from receval import cache as cache_module

    cfg = make_config("dataset=folder", f"dataset.path={site}", f"cache_dir={tmp_path / 'cache'}")
    cold, warm = tmp_path / "cold", tmp_path / "warm"
    cache_module._MEMORY.clear()
    run(cfg, cold)
    (entry,) = (tmp_path / "cache" / kind).iterdir()
    edit(entry)
    cache_module._MEMORY.clear()
    capsys.readouterr()
    run(cfg, warm)
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"receval: warning: cache entry {entry} does not match its checksum (edited or damaged); "
        "rebuilding it"
    ]
    assert _results_without_timings(warm) == _results_without_timings(cold)
    cache_module._MEMORY.clear()
    run(cfg, tmp_path / "again")  # the rebuilt entry is trusted again, silently
    assert capsys.readouterr().err == ""


# ------------------------------------------------- 11: tracebacks turned into messages


def test_item11_grade_above_int32_is_refused_at_load_naming_the_line(tmp_path):
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


def test_item11_qrels_grade_above_int32_is_refused(tmp_path):
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
def test_item11_output_folder_occupied_by_a_file(tmp_path, args):
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
def test_item11_full_disk_names_the_path_and_leaves_no_half_files(
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

    if which == "results":
        monkeypatch.setattr(write.pq, "write_table", failing(write.pq.write_table))
    else:
        monkeypatch.setattr(Path, "write_text", failing(Path.write_text))
    target = tmp_path / "run"
    with pytest.raises(SystemExit) as stop, exit_on_error():
        run(make_config(), target)
    assert stop.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"receval: error: {target / name}: cannot write it, ")
    assert sorted(p.name for p in target.iterdir()) == []  # no results without run.json, no temp files


def test_item11_huge_depth_is_capped_at_the_chunks_with_a_note(site, make_config, tmp_path, capsys):
    base = ["dataset=folder", f"dataset.path={site}"]
    usual, deep = tmp_path / "usual", tmp_path / "deep"
    run(make_config(*base, "depth=10"), usual)  # 8 chunks: 10 already keeps every one
    capsys.readouterr()
    run(make_config(*base, "depth=100000000"), deep)
    assert capsys.readouterr().err.splitlines() == [
        "receval: note: depth=100000000 is more than the 8 chunks; each question keeps at most 10"
    ]
    assert _results_without_timings(deep) == _results_without_timings(usual)


def test_item11_huge_n_resamples_is_one_message(site, make_config, tmp_path, capsys):
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


def test_item11_unset_env_variable_in_a_saved_dataset_path_under_reproduce(
    site, make_config, tmp_path, capsys, monkeypatch
):
    from receval.cli.reproduce import main

    run_dir = tmp_path / "r"
    run(make_config("dataset=folder", f"dataset.path={site}"), run_dir)
    info = json.loads((run_dir / RUN_JSON).read_text())  # no .hydra: run.json's config is used
    assert info["config"]["dataset"]["path"] == str(site)
    info["config"]["dataset"]["path"] = "${oc.env:RECEVAL_TEST_UNSET}/site"
    (run_dir / RUN_JSON).write_text(json.dumps(info))
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
