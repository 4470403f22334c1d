"""A stored run is data from outside: a tampered or foreign results file is one line
naming the file and the column (never a traceback or a MemoryError), a cost that is
not a finite number is refused rather than priced, and every CSV receval writes
neutralises cells a spreadsheet would run as formulas."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from receval.cli import report, select
from receval.core.formatting import TEXT_CHARS
from receval.render import tables
from receval.core.errors import RunError
from receval.results import open_run
from receval.results.format import META_KEY, RESULTS, RUN_JSON

from conftest import exit_code, one_error_line, run_of
from forge import forged

EDITED = "not results receval wrote (edited, or from another tool); re-run this job"


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    return run_of(tmp_path_factory, "retriever=bm25")


def tampered(good: Path, where: Path, change=None, metadata=None, raw_metadata=None) -> Path:
    """A copy of ``good`` whose results table went through ``change`` (and whose receval
    metadata dict through ``metadata``, or was replaced by ``raw_metadata`` bytes)."""
    shutil.copytree(good, where)
    table = pq.read_table(good / RESULTS)
    meta = json.loads(table.schema.metadata[META_KEY])
    if metadata:
        metadata(meta)
    table = change(table) if change else table
    raw = raw_metadata if raw_metadata is not None else json.dumps(meta).encode()
    pq.write_table(table.replace_schema_metadata({META_KEY: raw}), where / RESULTS)
    return forged(where)


def column(name, values):
    """A change: column ``name`` replaced by (or added as) ``values``."""

    def change(table):
        array = pa.array(values(table.num_rows) if callable(values) else values)
        field = pa.field(name, array.type)
        if name in table.column_names:
            return table.set_column(table.schema.get_field_index(name), field, array)
        return table.append_column(field, array)

    return change


def first(value, name):
    """A change: row 0 of column ``name`` set to ``value``, the rest as they were."""

    def change(table):
        values = table.column(name).to_pylist()
        values[0] = value
        return column(name, values)(table)

    return change


def set_version(value):
    return lambda meta: meta.__setitem__("schema_version", value)


CASES = {  # name -> (tamper keyword arguments, the message after "<file>: ")
    "a measure as strings": (
        {"change": column("rr", lambda n: ["0.5"] * n)}, f"column 'rr' holds string, not numbers; {EDITED}"),
    "a list where a number belongs": (
        {"change": column("hit@3", lambda n: [[1.0]] * n)},
        f"column 'hit@3' holds list<element: double>, not numbers; {EDITED}"),
    "booleans as a measure": (
        {"change": column("hit@1", lambda n: [True] * n)}, f"column 'hit@1' holds bool, not numbers; {EDITED}"),
    "latency as strings": (
        {"change": column("latency_ms", lambda n: ["fast"] * n)},
        f"column 'latency_ms' holds string, not numbers; {EDITED}"),
    "question ids as integers": (
        {"change": column("question_id", lambda n: list(range(n)))},
        f"column 'question_id' holds int64, not strings; {EDITED}"),
    "scores as strings": (
        {"change": column("scores", lambda n: [["0.5"]] * n)},
        f"column 'scores' holds list<element: string>, not lists of numbers; {EDITED}"),
    "a rank as strings": (
        {"change": column("first_relevant_rank", lambda n: ["1"] * n)},
        f"column 'first_relevant_rank' holds string, not integers; {EDITED}"),
    "a cost as strings": (
        {"change": column("cost_usd", lambda n: ["0.01"] * n)}, f"column 'cost_usd' holds string, not numbers; {EDITED}"),
    "a missing column": (
        {"change": lambda table: table.drop(["question"])},
        "not complete results (no column question); re-run this job"),
    "a 5 MB question id": (
        {"change": first("q" * 5_000_000, "question_id")},
        f"column 'question_id' holds a string of 5,000,000 characters (at most 4,096 in an id or label); {EDITED}"),
    "a 5 MB question": (
        {"change": first("w" * 5_000_000, "question")},
        f"column 'question' holds a string of 5,000,000 characters (at most 100,000 in a question); {EDITED}"),
    "a 5 MB retrieved id": (
        {"change": first(["s" * 5_000_000], "retrieved")},
        f"column 'retrieved' holds a string of 5,000,000 characters (at most 4,096 in an id or label); {EDITED}"),
    "hit@3 of 7": (
        {"change": column("hit@3", lambda n: [7.0] * n)},
        f"column 'hit@3' holds 7.0 for question 'q01', not a number from 0 to 1 (or missing); {EDITED}"),
    "an infinite rr": (
        {"change": column("rr", lambda n: [float("inf")] * n)},
        f"column 'rr' holds inf for question 'q01', not a number from 0 to 1 (or missing); {EDITED}"),
    "a NaN cost": (
        {"change": column("cost_usd", lambda n: [float("nan")] * n)},
        f"column 'cost_usd' holds nan for question 'q01', not a finite number >= 0 in every row; {EDITED}"),
    "an infinite cost by stage": (
        {"change": column("cost_usd.rerank", lambda n: [0.0] * (n - 1) + [float("inf")])},
        "column 'cost_usd.rerank' holds inf for question 'q49', not a finite number >= 0 in every row"),
    "negative tokens": (
        {"change": column("input_tokens.rerank", lambda n: [-1e12] * n)},
        "column 'input_tokens.rerank' holds -1000000000000.0 for question 'q01', not a finite number >= 0"),
    "a rank of 0": (
        {"change": column("first_relevant_rank", lambda n: pa.array([0] * n, pa.int32()))},
        f"column 'first_relevant_rank' holds 0.0 for question 'q01', not a finite number >= 1; {EDITED}"),
    "a missing latency": (
        {"change": column("latency_ms", lambda n: [None] + [1.0] * (n - 1))},
        "column 'latency_ms' holds a missing value for question 'q01', not a finite number >= 0 in every row"),
    "schema version as a string": (
        {"metadata": set_version("1")},
        f"its receval metadata gives schema_version '1', not a schema number (a whole number from 1); {EDITED}"),
    "schema version true": ({"metadata": set_version(True)}, "its receval metadata gives schema_version True, not a schema number"),
    "schema version 1.0": ({"metadata": set_version(1.0)}, "its receval metadata gives schema_version 1.0, not a schema number"),
    "schema version null": ({"metadata": set_version(None)}, "its receval metadata gives schema_version None, not a schema number"),
    "schema version 0": ({"metadata": set_version(0)}, "its receval metadata gives schema_version 0, not a schema number"),
    "schema version from the future": (
        {"metadata": set_version(99)}, "written with results schema 99, this receval"),
    "n_chunks as a string": (
        {"metadata": lambda meta: meta.__setitem__("n_chunks", "99")},
        f"its receval metadata gives n_chunks '99', not a count; {EDITED}"),
    "metadata that is not JSON": ({"raw_metadata": b"{not json"}, f"its receval metadata is not JSON; {EDITED}"),
    "metadata that is a list": ({"raw_metadata": b"[1, 2]"}, "not written by receval (no receval metadata)"),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.slow
def test_a_tampered_results_file_is_one_line_naming_the_file_and_column(good, tmp_path, case):
    how, expected = CASES[case]
    run_dir = tampered(good, tmp_path / "run", **how)
    with pytest.raises(RunError) as caught:
        open_run(run_dir, skip=frozenset())  # every column: export, reproduce, resume, --show
    message = str(caught.value)
    assert message.startswith(f"{run_dir / RESULTS}: {expected}")
    assert "\n" not in message and len(message) < 400
    if "retrieved" not in case and "scores" not in case:  # report and compare skip those columns
        with pytest.raises(RunError, match="re-run|upgrade|no receval metadata"):
            open_run(run_dir)


def test_an_integer_beyond_float_precision_is_checked_without_an_arrow_error(good, tmp_path):
    big = pa.array([2**62] * 49, pa.int64())
    run_dir = tampered(good, tmp_path / "run", change=column("first_relevant_rank", big))
    assert open_run(run_dir, skip=frozenset()).table.column("first_relevant_rank").type == pa.int64()  # a valid (if odd) rank
    run_dir = tampered(good, tmp_path / "tokens", change=column("input_tokens.rerank", pa.array([-(2**62)] * 49)))
    with pytest.raises(RunError, match=r"column 'input_tokens.rerank' holds -4.6\d+e\+18 for question 'q01'"):
        open_run(run_dir, skip=frozenset())


def test_report_and_select_say_it_in_one_line_and_exit_2(good, tmp_path, capsys):
    run_dir = tampered(good, tmp_path / "run", change=column("rr", lambda n: [[0.5]] * n))
    for main in (report.main, select.main):
        assert exit_code(main, [run_dir]) == 2
        line = one_error_line(capsys)
        assert f"{run_dir / RESULTS}: column 'rr' holds list<element: double>, not numbers" in line


def test_select_prefer_money_refuses_a_nan_cost_instead_of_choosing_it(good, tmp_path, capsys):
    """Two equal runs, one with a real cost, one whose cost is NaN (it read as $0 and won)."""
    paid = tampered(good, tmp_path / "paid", change=column("cost_usd", lambda n: [0.002] * n))
    nan = tampered(good, tmp_path / "nan", change=column("cost_usd", lambda n: [float("nan")] * n))
    assert exit_code(select.main, [paid, nan, "--prefer", "money"]) == 2
    assert one_error_line(capsys) == (
        f"receval: error: {nan / RESULTS}: column 'cost_usd' holds nan for question 'q01', not a finite "
        f"number >= 0 in every row; {EDITED}"
    )


def test_run_json_n_chunks_of_the_wrong_type_is_one_line(good, tmp_path):
    run_dir = tampered(good, tmp_path / "run")
    info = json.loads((run_dir / RUN_JSON).read_text())
    info["n_chunks"] = "lots"
    (run_dir / RUN_JSON).write_text(json.dumps(info))
    forged(run_dir)
    with pytest.raises(RunError, match=r"run.json: n_chunks is 'lots', not a count"):
        open_run(run_dir)


def test_a_question_up_to_the_limit_is_read_and_shown_cut(good, tmp_path, capsys):
    long = "why " * 20_000  # 80,000 characters: a long question, still read
    run_dir = tampered(good, tmp_path / "run", change=first(long, "question"))
    assert exit_code(report.main, [run_dir, "--per-question", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert long[: TEXT_CHARS - 1] + "…" in out and long[: TEXT_CHARS + 1] not in out


# ----------------------------------------------------------------- CSV injection


def test_csv_cells_a_spreadsheet_would_run_get_a_quote_and_numbers_stay_numbers():
    cells = ["=1+1", "+SUM(A1)", "-2+3+cmd|' /C calc'!A0", "@SUM(1)", "\tx", "\rx", "plain", "a=b",
             "-0.05", "+3", "-1e-3", -0.05, 3, None, True]
    text = tables.to_csv(["=col", "-0.5", "ok"], [cells])
    header, row = list(csv.reader(io.StringIO(text)))
    assert header == ["'=col", "-0.5", "ok"]
    assert row == ["'=1+1", "'+SUM(A1)", "'-2+3+cmd|' /C calc'!A0", "'@SUM(1)", "'\tx", "'\nx", "plain", "a=b",
                   "-0.05", "+3", "-1e-3", "-0.05", "3", "", "True"]
    assert float(row[11]) == -0.05  # a negative number is written as a number


def test_report_csv_neutralises_a_stored_kind_and_question(good, tmp_path, capsys):
    def change(table):
        table = first("=HYPERLINK(\"http://x\",\"y\")", "kind")(table)
        return first("@SUM(1+1)*cmd|' /C calc'!A0", "question")(table)

    run_dir = tampered(good, tmp_path / "run", change=change)
    other = tampered(good, tmp_path / "other", change=column("rr", lambda n: [0.0] * n))
    assert exit_code(report.main, [run_dir, other, "--per-question", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows[0]["kind"] == "'=HYPERLINK(\"http://x\",\"y\")"
    assert rows[0]["question"] == "'@SUM(1+1)*cmd|' /C calc'!A0"
    assert exit_code(report.main, [run_dir, other, "--format", "csv", "--baseline", str(run_dir)]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    diff = [float(row["diff_rr"]) for row in rows if row["diff_rr"]]  # negative differences stay numbers
    assert min(diff) < 0 and all(not row["diff_rr"].startswith("'") for row in rows)
    assert not np.isnan(diff).any()
