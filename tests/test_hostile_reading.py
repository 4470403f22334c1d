"""The smaller breaks of the hostile reading trial (issue 48), each a class of cases:
pooling two datasets, traces read twice or out of range or matching nothing, a stored
depth that is no count, where a re-run writes, what an allowed re-run imports, advice a
command then refuses, and ``--where`` on numbers."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from conftest import exit_code, one_error_line, run_of
from forge import forged

from receval.analysis.filters import filter_questions
from receval.analysis.pool import pool
from receval.cli import pool as pool_command
from receval.cli import report
from receval.core import trust
from receval.core.errors import ConfigError, RecevalError, RunError
from receval.results.configs import runnable_config
from receval.results.door import open_run
from receval.results.external import export
from receval.results.format import CONFIG_PATH, MANIFEST, META_KEY, RESULTS, RUN_JSON
from receval.results import open_run
from receval.traces import import_traces, read_spans
from receval.traces.config import register_traces

register_traces()
START = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z in ns


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    return run_of(tmp_path_factory, "retriever=bm25")


def copy(source: Path, where: Path) -> Path:
    shutil.copytree(source, where)
    return where


def saved(run_dir: Path, change) -> Path:
    """``run_dir`` with its saved config (``.hydra/config.yaml`` when there is one, and
    run.json's copy) changed by ``change(config)``, resealed."""
    info = json.loads((run_dir / RUN_JSON).read_text())
    change(info["config"])
    (run_dir / RUN_JSON).write_text(json.dumps(info))
    if (run_dir / CONFIG_PATH).is_file():
        config = yaml.safe_load((run_dir / CONFIG_PATH).read_text())
        change(config)
        (run_dir / CONFIG_PATH).write_text(yaml.safe_dump(config))
    return forged(run_dir)


# ----------------------------------------------------------------- pool


def test_pool_mixing_two_datasets_by_fingerprint_is_refused(good, tmp_path, capsys):
    """Two runs of different dataset files whose question ids overlap: pooling them would
    pair one dataset's units with the other's questions. Refused, nothing written."""
    other = copy(good, tmp_path / "other")
    table = pq.read_table(other / RESULTS)
    meta = json.loads(table.schema.metadata[META_KEY])
    meta["dataset_fingerprint"] = "f" * 64
    pq.write_table(table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()}), other / RESULTS)
    info = json.loads((other / RUN_JSON).read_text())
    info["dataset_fingerprint"] = "f" * 64
    (other / RUN_JSON).write_text(json.dumps(info))
    forged(other)
    runs = [open_run(good, skip=frozenset()), open_run(other, skip=frozenset())]
    with pytest.raises(RecevalError, match=r"different dataset files .*pool the runs of one dataset at a time"):
        pool(runs, 10)
    out = tmp_path / "pool.jsonl"
    assert exit_code(pool_command.main, [good, other, "--out", out]) == 2
    assert "pool the runs of one dataset at a time" in one_error_line(capsys) and not out.exists()


def test_pool_mixing_two_datasets_by_question_text_is_refused(good, tmp_path):
    """Without fingerprints to tell (a run of another tool), one question id asking two
    questions is two datasets."""
    other = copy(good, tmp_path / "other")
    table = pq.read_table(other / RESULTS)
    questions = table.column("question").to_pylist()
    questions[0] = "a question of another dataset?"
    table = table.set_column(table.schema.get_field_index("question"), "question", [questions])
    pq.write_table(table, other / RESULTS)
    forged(other)
    first = open_run(good, skip=frozenset()).table.column("question_id")[0].as_py()
    asked = rf"question '{first}' is .* in .* and 'a question of another dataset\?' in "
    with pytest.raises(RecevalError, match=asked):
        pool([open_run(good, skip=frozenset()), open_run(other, skip=frozenset())], 10)


# ----------------------------------------------------------------- traces


def traces_config(*overrides: str):
    from hydra import compose, initialize_config_dir

    from receval.run.config import config_dir

    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        return compose("traces", overrides=list(overrides))


def spans_of(good: Path, ids: bool = True) -> list[dict]:
    """The run's rankings as retriever spans, one per question (with trace and span ids, or none)."""
    rows = pq.read_table(good / RESULTS, columns=["question_id", "question", "retrieved"]).to_pylist()
    spans = []
    for n, row in enumerate(rows):
        attributes = {"openinference.span.kind": "RETRIEVER", "input.value": row["question"],
                      "receval.question_id": row["question_id"]}
        for i, uid in enumerate(row["retrieved"]):
            attributes[f"retrieval.documents.{i}.document.id"] = uid
        span = {"start_time": START + n * 10**9, "end_time": START + n * 10**9 + 2_000_000, "attributes": attributes}
        if ids:
            span["context"] = {"trace_id": f"0x{n:032x}", "span_id": f"0x{n:016x}"}
        spans.append(span)
    return spans


def lines(path: Path, spans: list[dict]) -> Path:
    path.write_text("".join(json.dumps(span) + "\n" for span in spans), encoding="utf-8")
    return path


@pytest.mark.parametrize("ids", [True, False], ids=["trace-and-span-ids", "no-ids"])
def test_duplicate_trace_spans_are_counted_once(good, tmp_path, ids):
    """Every span exported twice (an exporter that retried, a file concatenated twice):
    the same run as the file read once, with the repeats counted."""
    spans = spans_of(good, ids)
    once = import_traces(traces_config(f"traces.path={lines(tmp_path / 'once.jsonl', spans)}"), tmp_path / "once")
    twice = import_traces(traces_config(f"traces.path={lines(tmp_path / 'twice.jsonl', spans + spans)}"),
                          tmp_path / "twice")
    assert (twice.spans, twice.calls, twice.duplicates, once.duplicates) == (once.spans, once.calls, len(spans), 0)
    columns = ["question_id", "n_calls", "rr", "latency_ms"]
    assert pq.read_table(tmp_path / "twice" / RESULTS, columns=columns).equals(
        pq.read_table(tmp_path / "once" / RESULTS, columns=columns))
    assert json.loads((tmp_path / "twice" / RUN_JSON).read_text())["traces"]["duplicate_spans"] == len(spans)


def test_duplicate_trace_spans_with_other_content_name_both_lines(good, tmp_path):
    spans = spans_of(good)
    changed = json.loads(json.dumps(spans[3]))
    changed["end_time"] += 1
    path = lines(tmp_path / "s.jsonl", spans + [changed])
    with pytest.raises(RecevalError, match=rf"line {len(spans) + 1}: span 0x0+3 of trace 0x0+3 was read at line 4 "
                                           r"with other times, query or documents"):
        read_spans(path)


@pytest.mark.parametrize(("start", "end", "words"), [
    (START, 10**30, r"end_time is 1e\+30 ns, not a time a span can have"),
    (START, str(2**64), r"end_time is 1.84e\+19 ns, not a time a span can have"),
    (-5, START, r"start_time is -5 ns, not a time a span can have"),
    (START, START + 3 * 86_400 * 10**9, r"the span lasts 72.0 hours; a retriever call lasts at most a day"),
], ids=["1e30-ns", "past-2262", "before-1970", "three-days"])
def test_a_span_time_out_of_range_is_refused_naming_its_line(good, tmp_path, start, end, words):
    """A span ending at 10^30 ns once stored a latency of 10^24 ms."""
    spans = spans_of(good)
    spans[5]["start_time"], spans[5]["end_time"] = start, end
    with pytest.raises(RecevalError, match=rf"s\.jsonl, line 6: {words}"):
        read_spans(lines(tmp_path / "s.jsonl", spans))


def test_traces_matching_no_question_write_nothing_and_fail(good, tmp_path):
    """A step that produced nothing is no success: a traces file of another application's
    questions is an error naming the file, and the folder is left as it was."""
    spans = spans_of(good)
    for span in spans:
        span["attributes"]["input.value"] = "something nobody asked " + span["attributes"]["receval.question_id"]
        del span["attributes"]["receval.question_id"]
    path = lines(tmp_path / "s.jsonl", spans)
    folder = copy(good, tmp_path / "run")
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    with pytest.raises(ConfigError, match=rf"traces.path={path}: none of its {len(spans)} retriever spans matched a "
                                          r"question of the dataset \(49 questions"):
        import_traces(traces_config(f"traces.path={path}"), folder)
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before
    assert open_run(folder).table.num_rows == 49


# ----------------------------------------------------------------- a stored depth beside a TREC run


def trec_beside(good: Path, tmp_path: Path) -> tuple[Path, Path]:
    return export(good, tmp_path / "other.trec", tmp_path / "qrels.txt", tag="other")


@pytest.mark.parametrize("depth", ["ten", 0, 2.5, True, None])
def test_a_saved_depth_that_is_no_count_beside_a_trec_run_is_one_message(good, tmp_path, capsys, depth):
    run_file, qrels = trec_beside(good, tmp_path)
    folder = saved(copy(good, tmp_path / "run"), lambda config: config.update(depth=depth))
    assert exit_code(report.main, [folder, run_file, "--qrels", qrels]) == 2
    line = one_error_line(capsys)
    assert f"{folder}: its saved depth is {depth!r}, not a number of ranks (a whole number >= 1)" in line


def test_a_saved_depth_beyond_the_run_s_chunks_scores_a_trec_run_at_the_depth_the_run_kept(good, tmp_path):
    """depth=2**31-1 is a valid config (the run kept at most its chunks): the TREC run is
    scored at those ranks, never allocated at two billion."""
    run_file, qrels = trec_beside(good, tmp_path)
    folder = saved(copy(good, tmp_path / "run"), lambda config: config.update(depth=2**31 - 1))
    built = report.report_for([str(folder), str(run_file), "--qrels", str(qrels)])
    ours, theirs = (r.metrics["rr"].mean for r in built.runs)
    assert theirs == pytest.approx(ours)  # our own run, exported: the same rankings


# ----------------------------------------------------------------- where a re-run writes, what it imports


def test_a_stored_plain_cache_dir_does_not_choose_where_reproduce_writes(good, tmp_path, monkeypatch):
    from receval.run import written

    monkeypatch.setenv("RECEVAL_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setattr(written, "_OWN", None)  # receval's own default, read now
    folder = saved(copy(good, tmp_path / "run"), lambda config: config.update(cache_dir=str(tmp_path / "theirs")))
    assert written.saved_config(folder).cache_dir == str(tmp_path / "mine")
    assert runnable_config(folder, fallback=written.own_default)["cache_dir"] == str(tmp_path / "mine")
    assert runnable_config(folder)["cache_dir"] == str(tmp_path / "theirs")  # as data: what the run saved


def test_reproduce_allow_code_names_the_module_it_imports(good, tmp_path):
    from receval.run.written import own_default

    code = tmp_path / "code"
    (code / "mine").mkdir(parents=True)
    (code / "mine" / "__init__.py").write_text("raise SystemExit('imported while only named')\n")
    folder = saved(copy(good, tmp_path / "run"),
                   lambda config: config.update(retriever={"kind": "python", "target": "mine.search:Mine"}))
    with pytest.raises(RunError, match=r"retriever.target='mine.search:Mine' names code to import; .*--allow-code"):
        runnable_config(folder, fallback=own_default)
    stream = io.StringIO()
    import sys

    sys.path.insert(0, str(code))
    try:
        runnable_config(folder, allow_code=True, stream=stream, fallback=own_default)
    finally:
        sys.path.remove(str(code))
    assert f"retriever.target imports module 'mine.search' (from {code / 'mine' / '__init__.py'}), and its code runs" \
        in stream.getvalue()
    stream = io.StringIO()
    runnable_config(folder, allow_code=True, stream=stream, fallback=own_default)  # not on the path: said so
    assert "imports module 'mine.search' (not found on this Python's path)" in stream.getvalue()


# ----------------------------------------------------------------- advice a command then refuses


def test_reproduce_advises_no_fix_it_then_refuses_for_an_incomplete_run(good, tmp_path):
    from receval.cli.reproduce import reproduce

    folder = copy(good, tmp_path / "run")
    (folder / MANIFEST).unlink()
    with pytest.raises(RunError) as caught:
        reproduce(folder)
    assert "incomplete run" in caught.value.problems[0] and "receval reproduce" not in caught.value.problems[0]


def test_reproduce_advises_no_edit_of_a_sealed_config(good, tmp_path):
    """An interpolation with no saved value: editing the stored config (the old advice)
    would unseal the run, which reproduce then refuses as incomplete."""
    folder = copy(good, tmp_path / "run")
    info = json.loads((folder / RUN_JSON).read_text())
    info["config"]["chunking"]["max_words"] = "${oc.env:WORDS}"
    (folder / RUN_JSON).write_text(json.dumps(info))
    forged(folder)
    with pytest.raises(RunError) as caught:
        runnable_config(folder)
    assert caught.value.problems[0].endswith(trust.RERUN_CONFIG) and "write the value" not in caught.value.problems[0]


# ----------------------------------------------------------------- --where on numbers


@pytest.mark.parametrize("typed", ["1.0", "1", "1.00", "1e0"])
def test_where_a_number_finds_the_values_it_lists(good, typed, capsys):
    """``--where rr=1.0`` found nothing while listing 1.0 among the values: a number column
    is compared as numbers."""
    run = open_run(good, skip=frozenset())
    ones = sum(v == 1.0 for v in run.table.column("rr").to_pylist())
    (kept,) = filter_questions([run], [("rr", typed)], option="--where")
    assert kept.table.num_rows == ones > 0
    with pytest.raises(RecevalError, match=r"no questions with rr=0.123 .*rr values present: .*1\.0"):
        filter_questions([run], [("rr", "0.123")], option="--where")
    with pytest.raises(RecevalError, match=r"--where rr=one: the column holds numbers; give one"):
        filter_questions([run], [("rr", "one")], option="--where")
    (kept,) = filter_questions([run], [("kind", "direct")], option="--where")  # text columns as text
    assert set(kept.table.column("kind").to_pylist()) == {"direct"}
