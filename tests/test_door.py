"""The one door in (:func:`receval.results.door.open_run`) and the manifest written last
(:mod:`receval.results.manifest`): a stored run is data from anywhere, read complete,
contained, bounded and checked, or refused with one message."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import exit_code, one_error_line, run_of
from forge import forged

from receval.cli import report
from receval.cli.report import report_for
from receval.analysis.listing import listing
from receval.core.errors import RunError
from receval.results import bounded, door
from receval.results.door import open_run
from receval.results.format import CHUNKS, CONFIG_PATH, MANIFEST, RESULTS, RUN_JSON
from receval.results.claim import taken
from receval.results.manifest import IncompleteRun


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    """One bm25 run on the built-in library, as the pipeline writes it, with a saved
    config as Hydra saves it."""
    run_dir = run_of(tmp_path_factory, "retriever=bm25")
    (run_dir / ".hydra").mkdir()
    info = json.loads((run_dir / RUN_JSON).read_text())
    (run_dir / CONFIG_PATH).write_text(json.dumps(info["config"]))  # JSON is YAML
    return forged(run_dir)


def copy(good: Path, where: Path) -> Path:
    shutil.copytree(good, where)
    return where


def test_a_run_is_sealed_last_and_opens_frozen(good):
    written = json.loads((good / MANIFEST).read_text())["files"]
    assert sorted(written) == sorted([RESULTS, RUN_JSON, CONFIG_PATH, CHUNKS])
    run = open_run(good)
    assert run.table.num_rows == 49 and run.info["label"]["what"] == "bm25"
    assert run.info["label"]["chunking"] == run.info["label"]["components"]["chunking"] == "120 words, headings"
    assert run.flat["retriever.kind"] == "bm25" and run.info["measures"]["rr"]["label"] == "MRR"
    with pytest.raises(AttributeError):
        run.table = None


def test_export_s_identity_is_the_digest_the_door_checked_never_a_second_hash(good, monkeypatch):
    import hashlib

    from receval.analysis import tracker
    from receval.results import manifest

    written = json.loads((good / MANIFEST).read_text())["files"]
    run = open_run(good)
    assert run.digests == {name: entry["sha256"] for name, entry in written.items()}
    assert run.digests[RESULTS] == hashlib.sha256((good / RESULTS).read_bytes()).hexdigest()
    monkeypatch.setattr(manifest, "digest", lambda path: pytest.fail(f"{path} hashed again"))
    assert tracker.results_identity(run) == run.digests[RESULTS]
    (artifact, *_) = tracker.run_artifacts(run, tracker.results_identity(run))
    assert artifact.sha256 == run.digests[RESULTS] and artifact.source == good / RESULTS


# ----------------------------------------------------------------- incomplete


def test_a_reused_and_interrupted_run_folder_reads_as_incomplete(tmp_path, make_config, monkeypatch, capsys):
    """bm25 into a folder, then tfidf into the same folder stopped by Ctrl-C mid-search:
    bm25's files are still there, but the folder is no run (never bm25 under tfidf)."""
    from receval import retrievers
    from receval.run import pipeline

    folder = tmp_path / "run"
    pipeline.run(make_config("retriever=bm25"), folder)
    assert open_run(folder).info["label"]["what"] == "bm25"

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(retrievers, "search", stopped)
    with pytest.raises(KeyboardInterrupt):
        pipeline.run(make_config("retriever=tfidf"), folder)
    assert (folder / RESULTS).is_file() and not (folder / MANIFEST).exists()
    with pytest.raises(IncompleteRun, match=rf"{folder}: incomplete run \(no {MANIFEST}"):
        open_run(folder)
    assert exit_code(report.main, [str(folder)]) == 2
    assert "incomplete run" in one_error_line(capsys)
    (record,) = listing([tmp_path])
    assert record["complete"] is False and "incomplete run" in record["problem"]


def test_a_config_saved_again_over_a_finished_run_is_incomplete(good, tmp_path, capsys):
    """Hydra saves the next job's config before it runs: a folder whose files disagree
    with its manifest is incomplete, in report and list."""
    run_dir = copy(good, tmp_path / "run")
    (run_dir / CONFIG_PATH).write_text("retriever:\n  kind: tfidf\n")
    with pytest.raises(IncompleteRun, match=r"incomplete run \(\.hydra/config\.yaml differs from its manifest"):
        open_run(run_dir)
    (record,) = listing([tmp_path])
    assert not record["complete"] and record["label"].startswith("tfidf")


def test_a_sweep_skips_an_incomplete_job_with_a_warning(good, tmp_path, capsys):
    sweep = tmp_path / "s"
    copy(good, sweep / "0")
    copy(good, sweep / "1")
    (sweep / "1" / MANIFEST).unlink()
    built = report_for([str(sweep)])
    assert [str(r.run_dir) for r in built.runs] == [str(sweep / "0")]
    assert "1: incomplete run" in capsys.readouterr().err


# ----------------------------------------------------------------- symlinks


@pytest.mark.parametrize("name", [RUN_JSON, CONFIG_PATH, RESULTS])
def test_a_file_linked_from_outside_the_folder_is_refused(good, tmp_path, name):
    run_dir = copy(good, tmp_path / "run")
    outside = tmp_path / "credentials"
    shutil.copy(run_dir / name, outside)  # even the same bytes: a run's files are its own
    (run_dir / name).unlink()
    (run_dir / name).symlink_to(outside)
    with pytest.raises(RunError, match=rf"{name}: a symlink to .*credentials, outside the run folder"):
        open_run(run_dir)


def test_a_symlink_loop_is_refused(good, tmp_path):
    run_dir = copy(good, tmp_path / "run")
    (run_dir / RUN_JSON).unlink()
    (run_dir / RUN_JSON).symlink_to(run_dir / "loop")
    (run_dir / "loop").symlink_to(run_dir / RUN_JSON)
    with pytest.raises(RunError, match=r"run.json: a symlink loop or a link to nothing"):
        open_run(run_dir)


# ----------------------------------------------------------------- sizes


BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 10) + "]\n" for i in range(9)
)


def test_a_yaml_alias_bomb_fails_at_once_with_one_message(good, tmp_path, capsys):
    """10 levels of 10 aliases: under 1 KB, 10**10 nodes expanded; refused from the node
    count before anything is built (no MemoryError, no traceback)."""
    assert len(BOMB) < 1024
    run_dir = copy(good, tmp_path / "run")
    (run_dir / CONFIG_PATH).write_text(BOMB)
    forged(run_dir)
    with pytest.raises(RunError, match=rf"more than {door.MAX_YAML_NODES:,} YAML nodes once its aliases are expanded"):
        open_run(run_dir)
    assert exit_code(report.main, [str(run_dir)]) == 2
    assert one_error_line(capsys).startswith(f"receval: error: {run_dir / CONFIG_PATH}: more than ")


def test_a_recursive_alias_is_refused(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("a: &a [*a]\n")
    with pytest.raises(RunError, match="recursive alias"):
        door.read_yaml(path)


def test_aliases_that_stay_small_are_read(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("a: &a {k: 1}\nb: *a\n")
    assert door.read_yaml(path) == {"a": {"k": 1}, "b": {"k": 1}}


@pytest.mark.parametrize(("limit", "words"), [
    ("MAX_ROWS", "its footer declares [\\d,]+ rows [(]at most 48[)]"),
    ("MAX_VALUES", "its footer declares [\\d,]+ values in the columns read [(]at most 48[)]"),
    ("MAX_DECODED_BYTES", "its pages decode to [\\d,]+ bytes in the columns read [(]at most 48[)]"),
])
def test_results_beyond_the_footer_limits_are_refused_before_any_row_is_read(good, monkeypatch, limit, words):
    monkeypatch.setattr(bounded, limit, 48)  # the run has 49 questions

    def never(*args, **kwargs):
        raise AssertionError("rows were read")

    monkeypatch.setattr(pq.ParquetFile, "read", never)
    with pytest.raises(RunError, match=rf"{RESULTS}: {words}"):
        open_run(good)


def test_results_larger_than_the_byte_limit_are_refused_unread(good, monkeypatch):
    monkeypatch.setattr(door, "MAX_RESULTS_BYTES", 100)
    monkeypatch.setattr(pq, "ParquetFile", None)  # not even opened
    with pytest.raises(RunError, match=rf"{RESULTS}: [\d,]+ bytes \(at most 100\)"):
        open_run(good)


# ----------------------------------------------------------------- values


def test_repeated_question_ids_are_refused(good, tmp_path):
    run_dir = copy(good, tmp_path / "run")
    table = pq.read_table(run_dir / RESULTS)
    ids = table.column("question_id").to_pylist()
    ids[1] = ids[0]
    pq.write_table(table.set_column(0, "question_id", pa.array(ids)), run_dir / RESULTS)
    forged(run_dir)
    with pytest.raises(RunError, match="question ids repeat"):
        open_run(run_dir)


def test_n_chunks_that_is_not_a_count_is_one_message(good, tmp_path):
    run_dir = copy(good, tmp_path / "run")
    info = json.loads((run_dir / RUN_JSON).read_text())
    info["n_chunks"] = "many"
    (run_dir / RUN_JSON).write_text(json.dumps(info))
    forged(run_dir)
    with pytest.raises(RunError, match=r"run.json: n_chunks is 'many', not a count"):
        open_run(run_dir)


# ----------------------------------------------------------------- interpolations


def test_an_interpolation_stays_literal_in_report_and_show(good, tmp_path, monkeypatch):
    """``${oc.env:...}`` in a stored dataset path is text: the door keeps it, and
    ``report --show`` does not read the variable (it reads what the run wrote, never the
    dataset: headings and snippets all there)."""
    run_dir = copy(good, tmp_path / "run")
    literal = "${oc.env:RECEVAL_TEST_SECRET_PATH}"
    for name in (CONFIG_PATH, RUN_JSON):
        data = yaml.safe_load((run_dir / name).read_text())  # JSON is YAML; the config has its run id line
        node = data["config"] if name == RUN_JSON else data
        node["dataset"]["path"] = literal
        (run_dir / name).write_text(json.dumps(data))
    forged(run_dir)
    monkeypatch.setenv("RECEVAL_TEST_SECRET_PATH", str(tmp_path / "elsewhere"))
    read = []
    real_getenv = os.environ.__class__.__getitem__

    def watched(self, key):
        if key == "RECEVAL_TEST_SECRET_PATH":
            read.append(key)
        return real_getenv(self, key)

    monkeypatch.setattr(os.environ.__class__, "__getitem__", watched)
    run = open_run(run_dir)
    assert run.config["dataset"]["path"] == literal
    built = report_for([str(run_dir), "--show", str(run.ids[0])])
    (view,) = built.shown
    assert not read and view.runs[0].note == ""
    assert all(h.heading and h.snippet for h in view.runs[0].top)
    written = json.loads((run_dir / CHUNKS).read_text())["chunks"]  # snippets from the chunks the run wrote
    top = view.runs[0].top[0]
    core = top.snippet.removeprefix("... ").removesuffix(" ...")
    assert len(core.split()) >= 5 and core in " ".join(
        " ".join(text.split()) for section, _, _, text in written.values() if section == top.section_id)


def test_sql_refuses_what_report_refuses(good, tmp_path, capsys):
    """sql reads through the door: rr = 5.0 and repeated ids are refused as report refuses them."""
    pytest.importorskip("duckdb")
    from receval.cli import sql as sql_command

    out_of_range = copy(good, tmp_path / "rr")
    table = pq.read_table(out_of_range / RESULTS)
    rr = pc.if_else(pc.equal(pa.array(range(table.num_rows)), 0), 5.0, table.column("rr"))
    pq.write_table(table.set_column(table.schema.get_field_index("rr"), "rr", rr), out_of_range / RESULTS)
    forged(out_of_range)
    assert exit_code(sql_command.main, [str(out_of_range), "SELECT avg(rr) FROM questions"]) == 2
    assert "column 'rr' holds 5.0 for question" in one_error_line(capsys)
    assert exit_code(report.main, [str(out_of_range)]) == 2
    assert "column 'rr' holds 5.0 for question" in one_error_line(capsys)


# ----------------------------------------------------------------- a suite's interpolated path


def test_a_path_given_by_a_variable_is_saved_as_read_so_reproduce_and_pool_need_no_variable(
    make_config, tmp_path, monkeypatch
):
    """A suite's collections read ``${oc.env:RECEVAL_SHARED,../shared}/datasets/...``: the run
    saves the path it read in run.json, so reproduce and pool evaluate nothing (the variable
    gone) and the re-run is identical; .hydra/ keeps the text as written."""
    from omegaconf import OmegaConf

    from receval.run import pipeline
    from receval.cli.pool import unit_texts
    from receval.cli.reproduce import reproduce

    shared = tmp_path / "shared"
    shutil.copytree(Path(__file__).parent / "fixtures" / "site", shared / "datasets" / "site")
    monkeypatch.setenv("RECEVAL_TEST_SHARED", str(shared))
    cfg = make_config("dataset=folder", "dataset.path=${oc.env:RECEVAL_TEST_SHARED,../shared}/datasets/site")
    run_dir = tmp_path / "run"
    with taken(run_dir) as claim:  # the config as Hydra saves it (the interpolation as written), as the command line does
        pipeline.run(cfg, run_dir, claim=claim.start({CONFIG_PATH: OmegaConf.to_yaml(cfg)}))
    assert "${oc.env:RECEVAL_TEST_SHARED" in (run_dir / CONFIG_PATH).read_text()
    info = json.loads((run_dir / RUN_JSON).read_text())
    assert info["config"]["dataset"]["path"] == str(shared / "datasets" / "site")
    monkeypatch.delenv("RECEVAL_TEST_SHARED")
    assert reproduce(run_dir).identical
    texts = unit_texts(open_run(run_dir))
    assert texts["bikes#prices"].startswith("A single ride costs")


def test_pool_reads_a_remote_runs_dataset_without_a_flag(good, tmp_path):
    """Pooling sends nothing: a HyDE run (its transform calls a server) pools without
    --allow-remote; only the dataset it reads is checked, and a dataset that would be
    fetched is refused."""
    from receval.cli.pool import unit_texts

    run_dir = copy(good, tmp_path / "hyde")
    hyde = {"kind": "hyde", "base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": "NO_KEY"}
    for name in (CONFIG_PATH, RUN_JSON):
        data = yaml.safe_load((run_dir / name).read_text())
        (data["config"] if name == RUN_JSON else data)["transform"] = hyde
        (run_dir / name).write_text(json.dumps(data))
    forged(run_dir)
    texts = unit_texts(open_run(run_dir))
    assert len(texts) > 40 and all(texts.values())
    remote = copy(good, tmp_path / "remote")
    data = yaml.safe_load((remote / CONFIG_PATH).read_text())
    data["dataset"]["url"] = "http://127.0.0.1:9/data"
    (remote / CONFIG_PATH).write_text(json.dumps(data))
    forged(remote)
    with pytest.raises(RunError, match=r"dataset.url=.*would send requests over the network"):
        unit_texts(open_run(remote))


def test_sql_refuses_repeated_question_ids(good, tmp_path, capsys):
    pytest.importorskip("duckdb")
    from receval.cli import sql as sql_command

    run_dir = copy(good, tmp_path / "twice")
    table = pq.read_table(run_dir / RESULTS)
    ids = table.column("question_id").to_pylist()
    ids[1] = ids[0]
    pq.write_table(table.set_column(0, table.schema.field(0), [ids]), run_dir / RESULTS)
    forged(run_dir)
    assert exit_code(sql_command.main, [str(run_dir), "SELECT count(*) FROM questions"]) == 2
    assert one_error_line(capsys).endswith(f"{RESULTS}: question ids repeat; questions are paired by id, so "
                                           "not results receval wrote (edited, or from another tool); re-run this job")
