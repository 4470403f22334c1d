"""One run, one folder (:mod:`receval.results.claim`) and the run id tying its files
(:mod:`receval.results.bond`): two writers into one folder, files of two runs, run.json
beside rows that are not its own, and readers racing a writer that swaps files. No reader
may ever show one run's config with another run's numbers."""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import exit_code, one_error_line
from forge import forged
from omegaconf import OmegaConf

from receval.run import pipeline
from receval.analysis.listing import listing
from receval.cli import report
from receval.cli.resume import finished_run
from receval.core.errors import RunError
from receval.run.pipeline import config_hash_of
from receval.results import bond, manifest
from receval.results.claim import LOCK, taken
from receval.results.door import open_run
from receval.results.format import CHUNKS, CONFIG_PATH, MANIFEST, META_KEY, OVERRIDES_PATH, RESULTS, RUN_JSON
from receval.results.manifest import IncompleteRun

SEALED_FILES = [RESULTS, RUN_JSON, CHUNKS, CONFIG_PATH, OVERRIDES_PATH]


def saved_by_hydra(cfg, *overrides: str) -> dict[str, str]:
    """What Hydra saves in a job's .hydra/ folder (receval.cli.run.hydra_saved)."""
    return {CONFIG_PATH: OmegaConf.to_yaml(cfg), OVERRIDES_PATH: OmegaConf.to_yaml(list(overrides))}


def written(run_dir: Path, cfg, *overrides: str) -> Path:
    """A run written as the command line writes it: folder taken, Hydra's files saved as its own."""
    with taken(run_dir) as claim:
        pipeline.run(cfg, run_dir, claim=claim.start(saved_by_hydra(cfg, *overrides)))
    return run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """bm25 and tfidf on the built-in library, each in its own folder."""
    from hydra import compose, initialize_config_dir

    from receval.run.config import config_dir

    out = {}
    for kind in ("bm25", "tfidf"):
        with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
            cfg = compose("config", overrides=[f"retriever={kind}"])
        out[kind] = written(tmp_path_factory.mktemp(kind), cfg, f"retriever={kind}")
    return out


def copy(source: Path, where: Path) -> Path:
    shutil.copytree(source, where)
    return where


def rr(run_dir: Path) -> list:
    return pq.read_table(run_dir / RESULTS, columns=["rr"]).column("rr").to_pylist()


def consistent(run, runs) -> str:
    """The retriever a read run is, asserting its config, label and numbers are all that one's."""
    kind = run.config["retriever"]["kind"]
    assert run.info["label"]["what"] == kind and run.flat["retriever.kind"] == kind
    assert run.table.column("rr").to_pylist() == rr(runs[kind]), f"{kind}'s config with other numbers"
    return kind


def everything(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file()}


# ----------------------------------------------------------------- the run id


def test_every_file_of_a_run_carries_its_run_id(runs):
    ids = {}
    for kind, run_dir in runs.items():
        run_id = json.loads((run_dir / MANIFEST).read_text())[bond.KEY]
        assert len(run_id) == 32 and int(run_id, 16) >= 0
        assert json.loads(pq.read_schema(run_dir / RESULTS).metadata[META_KEY])[bond.KEY] == run_id
        assert json.loads((run_dir / RUN_JSON).read_text())[bond.KEY] == run_id
        assert json.loads((run_dir / CHUNKS).read_text())[bond.KEY] == run_id
        for name in (CONFIG_PATH, OVERRIDES_PATH):
            first, rest = (run_dir / name).read_text().split("\n", 1)
            assert first.startswith(f"# receval run {run_id}")
        assert rest == f"- retriever={kind}\n"  # Hydra's text follows unchanged
        assert open_run(run_dir, chunks=True).run_id == run_id
        assert not (run_dir / LOCK).exists()  # released and removed when the run ended
        ids[kind] = run_id
    assert ids["bm25"] != ids["tfidf"]


# ----------------------------------------------------------------- two writers


def test_two_writers_into_one_folder_the_second_is_refused_naming_the_first(runs, tmp_path, make_config):
    """A run holds its folder: a second run into it is refused at once, writes nothing
    and names the first; the first run's files are untouched."""
    folder = copy(runs["bm25"], tmp_path / "run")
    before = everything(folder)
    with taken(folder):
        refused = rf"{folder}: another run is writing into this folder \(pid {os.getpid()} on "
        with pytest.raises(RunError, match=refused):
            pipeline.run(make_config("retriever=tfidf"), folder)
        assert {k: v for k, v in everything(folder).items() if k != LOCK} == before
    assert everything(folder) == before and consistent(open_run(folder), runs) == "bm25"


def test_two_writers_into_one_folder_the_refused_writer_s_hydra_cannot_leave_its_config(runs, tmp_path, make_config):
    """Hydra saves the second job's config before the job starts (and is refused): the
    first run writes its own saved files again before it seals, so the folder is the
    first run, config and numbers."""
    folder = tmp_path / "run"
    cfg = make_config("retriever=bm25")
    with taken(folder) as claim:
        claim.start(saved_by_hydra(cfg, "retriever=bm25"))
        other = make_config("retriever=tfidf")  # the second job's Hydra, mid-run of the first
        for name, text in saved_by_hydra(other, "retriever=tfidf").items():
            (folder / name).write_text(text)
        pipeline.run(cfg, folder, claim=claim)
    run = open_run(folder, chunks=True)
    assert consistent(run, runs) == "bm25" and "tfidf" not in (folder / OVERRIDES_PATH).read_text()


@pytest.mark.slow
def test_two_writers_into_one_folder_from_the_command_line(runs, tmp_path, make_config):
    """Two runs started into one fixed hydra.run.dir: the second exits 2 with one message
    naming the first, and the folder reads as the first run (its config, its numbers)."""
    import subprocess

    folder = tmp_path / "run"
    cfg = make_config("retriever=bm25")
    with taken(folder) as claim:
        claim.start(saved_by_hydra(cfg, "retriever=bm25"))
        done = subprocess.run(
            [sys.executable, "-m", "receval", "retriever=tfidf", f"hydra.run.dir={folder}"],
            capture_output=True, text=True, timeout=300, cwd=tmp_path,
        )
        assert done.returncode == 2, done.stderr
        (line,) = [row for row in done.stderr.splitlines() if row.startswith("receval: error:")]
        assert f"{folder}: another run is writing into this folder (pid {os.getpid()} on " in line
        assert "give this run its own hydra.run.dir" in line and "Traceback" not in done.stderr
        assert not (folder / RESULTS).exists()  # the second wrote nothing of its own
        pipeline.run(cfg, folder, claim=claim)
    assert consistent(open_run(folder, chunks=True), runs) == "bm25"


def test_a_writer_that_fails_releases_its_folder(tmp_path, make_config, monkeypatch):
    from receval import retrievers

    folder = tmp_path / "run"

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(retrievers, "search", stopped)
    with pytest.raises(KeyboardInterrupt):
        pipeline.run(make_config("retriever=bm25"), folder)
    assert not (folder / LOCK).exists()
    monkeypatch.undo()
    pipeline.run(make_config("retriever=bm25"), folder)  # the next run takes it
    assert open_run(folder).run_id is not None


# ----------------------------------------------------------------- files of two runs


@pytest.mark.parametrize("name", SEALED_FILES)
def test_files_of_two_runs_in_one_folder_read_as_incomplete(runs, tmp_path, name):
    """One file of another run copied in and the folder resealed: incomplete, one message
    naming which file is which run; list and report show no number for it."""
    folder = copy(runs["bm25"], tmp_path / "run")
    shutil.copy(runs["tfidf"] / name, folder / name)
    forged(folder, agree=False)  # resealed: the manifest agrees with every file
    ids = {kind: open_run(runs[kind]).run_id for kind in runs}
    with pytest.raises(IncompleteRun, match=r"incomplete run \(its files are of different runs: ") as caught:
        open_run(folder, chunks=True)
    message = caught.value.problems[0]
    assert f"{name}: run {ids['tfidf'][:8]}" in message or f"{name}, " in message
    assert ids["bm25"][:8] in message and ids["tfidf"][:8] in message


def test_a_results_file_swapped_for_another_run_s_and_resealed_shows_no_number_anywhere(runs, tmp_path, capsys):
    folder = copy(runs["bm25"], tmp_path / "run")
    shutil.copy(runs["tfidf"] / RESULTS, folder / RESULTS)
    forged(folder, agree=False)
    (record,) = listing([folder])
    assert record["complete"] is False and record["mrr"] is None and record["n_questions"] is None
    assert "its files are of different runs" in record["problem"]
    assert exit_code(report.main, [folder]) == 2
    assert "its files are of different runs" in one_error_line(capsys)


def test_a_saved_config_without_the_run_id_beside_files_with_one_is_a_mix(runs, tmp_path):
    """Hydra saves a config with no run id line: beside results that carry one, it is
    another run's (a second writer's Hydra, then resealed)."""
    folder = copy(runs["bm25"], tmp_path / "run")
    text = (folder / CONFIG_PATH).read_text().split("\n", 1)[1]
    (folder / CONFIG_PATH).write_text(text)
    forged(folder, agree=False)
    with pytest.raises(IncompleteRun, match=r"\.hydra/config\.yaml: no run id"):
        open_run(folder)


def test_list_report_sql_and_select_show_one_number(runs, capsys):
    """One verified number everywhere: the rows the door checked."""
    pytest.importorskip("duckdb")
    from receval.cli import select, sql

    def printed(main, argv) -> dict:
        assert exit_code(main, [*argv, "--format", "json"]) == 0
        return json.loads(capsys.readouterr().out)

    folder = runs["bm25"]
    table = pq.read_table(folder / RESULTS, columns=["rr", "split"]).to_pylist()
    mean = sum(r["rr"] for r in table if r["rr"] is not None) / sum(r["rr"] is not None for r in table)
    dev = [r["rr"] for r in table if r["rr"] is not None and r["split"] == "dev"]
    (record,) = listing([folder])
    assert record["mrr"] == pytest.approx(mean, abs=1e-12)
    assert printed(report.main, [folder])["runs"][0]["metrics"]["rr"]["mean"] == pytest.approx(mean, abs=1e-12)
    (row,) = printed(sql.main, [folder, "SELECT avg(rr) AS mrr FROM questions"])["rows"]
    assert row["mrr"] == pytest.approx(mean, abs=1e-12)
    assert printed(select.main, [folder])["runs"][0]["mean"] == pytest.approx(sum(dev) / len(dev), abs=1e-12)


# ----------------------------------------------------------------- run.json against the rows


def legacy(source: Path, where: Path) -> Path:
    """``source`` as a receval before run ids wrote it: no file carries one."""
    folder = copy(source, where)
    table = pq.read_table(folder / RESULTS)
    meta = json.loads(table.schema.metadata[META_KEY])
    meta.pop(bond.KEY)
    pq.write_table(table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()}), folder / RESULTS)
    return forged(folder)  # the forger drops the id everywhere the results carry none


def test_runs_written_before_run_ids_read_as_before(runs, tmp_path):
    folder = legacy(runs["bm25"], tmp_path / "old")
    assert all(bond.KEY not in json.loads((folder / name).read_text()) for name in (RUN_JSON, CHUNKS, MANIFEST))
    assert not (folder / CONFIG_PATH).read_text().startswith("# receval run")
    run = open_run(folder, chunks=True)
    assert run.run_id is None and consistent(run, runs) == "bm25"


def test_runs_written_before_run_ids_still_tie_run_json_to_the_rows(runs, tmp_path):
    """Without run ids, results swapped for another old run's and resealed are caught by
    run.json's means (the same number of questions)."""
    folder = legacy(runs["bm25"], tmp_path / "old")
    other = legacy(runs["tfidf"], tmp_path / "other")
    shutil.copy(other / RESULTS, folder / RESULTS)
    forged(folder, agree=False)
    with pytest.raises(IncompleteRun, match=r"run\.json gives mean \S+ 0\.\d+, the rows of results\.parquet 0\.\d+"):
        open_run(folder)


@pytest.mark.parametrize(("key", "value", "words"), [
    ("n_questions", 50, r"run\.json counts 50 questions, results\.parquet holds 49 rows"),
    ("means", {"rr": 0.999}, r"run\.json gives mean rr 0\.999, the rows of results\.parquet 0\.7"),
])
def test_run_json_counts_and_means_must_be_the_rows(runs, tmp_path, key, value, words):
    folder = copy(runs["bm25"], tmp_path / "run")
    info = json.loads((folder / RUN_JSON).read_text())
    info[key] = {**info[key], **value} if isinstance(value, dict) else value
    (folder / RUN_JSON).write_text(json.dumps(info))
    forged(folder, agree=False)
    with pytest.raises(IncompleteRun, match=words):
        open_run(folder)


def test_a_newer_receval_s_manifest_asks_for_an_upgrade_not_a_rerun(runs, tmp_path):
    folder = copy(runs["bm25"], tmp_path / "run")
    data = json.loads((folder / MANIFEST).read_text())
    data["manifest_version"] = manifest.MANIFEST_VERSION + 1
    (folder / MANIFEST).write_text(json.dumps(data))
    with pytest.raises(RunError, match=r"written by a newer receval \(manifest version 2; .*upgrade receval") as caught:
        open_run(folder)
    assert not isinstance(caught.value, IncompleteRun) and "re-run" not in caught.value.problems[0]


def test_a_resumed_run_keeps_its_id_under_the_config_saved_again(runs, tmp_path, make_config):
    """Resume (receval.cli.run.run_one): Hydra saves the job's config again over a finished
    run; the run is sealed again with its own id and that config."""
    folder = copy(runs["bm25"], tmp_path / "run")
    cfg = make_config("retriever=bm25", "name=again")  # a name: no difference to the results
    saved = saved_by_hydra(cfg, "retriever=bm25", "name=again")
    for name, text in saved.items():
        (folder / name).write_text(text)
    with taken(folder) as claim:
        stored = finished_run(folder, config_hash_of(cfg))
        assert stored is not None
        claim.keep(stored.run_id, saved).seal()
    run = open_run(folder, chunks=True)
    assert run.run_id == open_run(runs["bm25"]).run_id and run.config["name"] == "again"


# ----------------------------------------------------------------- readers racing a writer


def test_reader_racing_a_swapping_writer_between_check_and_parse_reads_what_it_checked(runs, tmp_path, monkeypatch):
    """The worst moment: every file replaced by the other run's right after the door
    checked it. The door parses the bytes it checked, never the new files."""
    folder = copy(runs["bm25"], tmp_path / "run")
    check = manifest.check

    def swapped_after(run_dir, files, present):
        check(run_dir, files, present)
        for name in SEALED_FILES:
            shutil.copy(runs["tfidf"] / name, folder / name)

    monkeypatch.setattr(manifest, "check", swapped_after)
    run = open_run(folder, chunks=True)
    assert consistent(run, runs) == "bm25" and run.run_id == open_run(runs["bm25"]).run_id


@pytest.mark.parametrize("swapped", [[RESULTS], [*SEALED_FILES, MANIFEST]], ids=["results", "whole-run"])
def test_reader_racing_a_swapping_writer_never_mixes_two_runs(runs, tmp_path, swapped):
    """A thread keeps replacing the folder's files (atomically, one at a time) with one run's
    or the other's while readers read: each read is refused as incomplete, or is one run
    whole, its config with its own numbers. (The door before it read each file once gave
    one run's config with the other's numbers in 3 of 200 reads.)"""
    folder = copy(runs["bm25"], tmp_path / "run")
    stop = threading.Event()

    def writer():
        turn = 0
        while not stop.is_set():
            source = runs["tfidf" if turn % 2 else "bm25"]
            for name in swapped:
                tmp = folder / f".{Path(name).name}.swap"
                shutil.copy(source / name, tmp)
                os.replace(tmp, folder / name)
            turn += 1
            time.sleep(0.002)  # a whole run in place for a moment, between swaps

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    seen: dict[str, int] = {"incomplete": 0, "bm25": 0, "tfidf": 0}
    try:
        for reads in range(1, 601):
            try:
                run = open_run(folder, chunks=True)
            except RunError:
                seen["incomplete"] += 1
            else:
                seen[consistent(run, runs)] += 1
            if reads >= 60 and seen["bm25"] + seen["tfidf"] >= 5:
                break
    finally:
        stop.set()
        thread.join()
    assert seen["bm25"] + seen["tfidf"] >= 5, seen  # reads that returned a run: each one run whole
