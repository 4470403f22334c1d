"""SQL over stored runs (``receval sql``, :mod:`receval.analysis.warehouse`):
the views agree with the report and with the stored rows, a query reads nothing but
the runs and writes nothing, and errors are one line."""

from __future__ import annotations

import builtins
import csv
import hashlib
import io
import json
from itertools import product
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import exit_code, one_error_line

from receval.cli import report
from receval.cli import sql as sql_command
from receval.analysis import warehouse
from receval.core.errors import RecevalError

pytest.importorskip("duckdb", reason="needs duckdb (pip install 'receval[sql]')")

RETRIEVERS, WORDS = ("bm25", "tfidf"), (20, 40, 120)


@pytest.fixture(scope="module")
def sweep(six_runs) -> Path:
    """A 6-run sweep (bm25, tfidf x 20, 40, 120 words) on the built-in library."""
    return six_runs


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def query_json(capsys, *argv) -> dict:
    assert exit_code(sql_command.main, [*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_runs_view_means_are_the_reports_means(sweep, capsys):
    assert exit_code(report.main, [sweep, "--format", "json", "--metrics", "hit@1,hit@3,recall@3,rr,ndcg@5"]) == 0
    reported = json.loads(capsys.readouterr().out)["runs"]
    rows = query_json(capsys, sweep, 'SELECT run, label, retriever, max_words, n_chunks, "hit@1", "hit@3", '
                      '"recall@3", rr, "ndcg@5", n_scored FROM runs')["rows"]
    assert len(rows) == len(reported) == 6
    for row, run_ in zip(rows, reported):  # both in sweep order
        assert row["run"] == run_["run_dir"] and row["label"] == run_["label"]
        assert (row["retriever"], row["max_words"]) == (run_["params"]["retriever"], run_["params"]["max_words"])
        assert row["n_chunks"] == run_["n_chunks"] and row["n_scored"] == run_["n_questions"]
        for name, interval in run_["metrics"].items():
            assert row[name] == pytest.approx(interval["mean"], abs=1e-12), name
    assert {(r["retriever"], r["max_words"]) for r in rows} == set(product(RETRIEVERS, WORDS))


def test_questions_view_is_every_stored_row_with_its_run_and_parameters(sweep):
    with warehouse.open_runs([sweep]) as db:
        table = db.arrow("SELECT * FROM questions")
        grouped = db.arrow('SELECT retriever, max_words, avg("hit@3") AS hit3, count(*) AS n '
                           "FROM questions GROUP BY ALL ORDER BY retriever, max_words").to_pylist()
        assert db.params == ["retriever", "max_words"]
    stored = [pq.read_table(sweep / str(job) / "results.parquet") for job in range(6)]
    assert table.num_rows == sum(t.num_rows for t in stored)
    assert set(stored[0].column_names) <= set(table.column_names)
    assert table.column_names[:3] == ["run", "retriever", "max_words"]
    for (retriever, words), got, rows in zip(product(RETRIEVERS, WORDS), grouped, stored):
        hit3 = np.asarray(rows.column("hit@3").to_pylist(), dtype=float)
        assert (got["retriever"], got["max_words"], got["n"]) == (retriever, words, rows.num_rows)
        assert got["hit3"] == pytest.approx(np.nanmean(hit3), abs=1e-12)
    # a row is the stored row, lists included
    first = [r for r in table.to_pylist() if r["run"] == str(sweep / "0")]
    assert min(first, key=lambda r: r["question_id"])["retrieved"] == \
        min(stored[0].to_pylist(), key=lambda r: r["question_id"])["retrieved"]


def test_schema_lists_both_views_and_the_python_api_returns_arrow_and_relations(sweep, capsys):
    listed = query_json(capsys, sweep, "--schema")["rows"]
    views = {(r["view"], r["column"]): r["type"] for r in listed}
    assert views[("questions", "hit@3")] == "DOUBLE" and views[("questions", "max_words")] == "BIGINT"
    assert views[("runs", "label")] == "VARCHAR" and ("runs", "latency_ms.p95") in views
    table = warehouse.sql([sweep], "SELECT count(*) AS n FROM runs")
    assert table.to_pylist() == [{"n": 6}]
    with warehouse.open_runs([sweep]) as db:
        relation = db.relation("SELECT label FROM runs WHERE retriever = 'tfidf'")
        assert len(relation.fetchall()) == 3


@pytest.mark.slow
def test_a_query_reads_and_writes_no_file_and_the_runs_are_unchanged(sweep, tmp_path, capsys):
    before = digest(sweep)
    secret = tmp_path / "secret.csv"
    secret.write_text("a\n1\n")
    for query in (
        f"COPY (SELECT * FROM questions) TO '{sweep / '0' / 'results.parquet'}' (FORMAT parquet)",
        f"COPY (SELECT 1) TO '{tmp_path / 'out.csv'}'",
        f"SELECT * FROM read_csv('{secret}')",
        "SELECT * FROM read_parquet('http://127.0.0.1:9/x.parquet')",
        "INSTALL httpfs",
        "SET enable_external_access = true",
    ):
        assert exit_code(sql_command.main, [sweep, query]) == 2
        line = one_error_line(capsys)
        assert line.startswith("receval: error: query: "), line
    assert digest(sweep) == before
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.slow
def test_formats_carry_the_same_rows(sweep, capsys):
    query = "SELECT label, rr FROM runs ORDER BY rr DESC, label"
    rows = query_json(capsys, sweep, query)["rows"]
    assert exit_code(sql_command.main, [sweep, query, "--format", "csv"]) == 0
    parsed = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["label"], float(r["rr"])) for r in parsed] == [(r["label"], r["rr"]) for r in rows]
    assert exit_code(sql_command.main, [sweep, query, "--format", "markdown"]) == 0
    markdown = capsys.readouterr().out.splitlines()
    assert markdown[0] == "| label | rr |" and len(markdown) == 2 + len(rows)
    assert exit_code(sql_command.main, [sweep, query]) == 0
    text = capsys.readouterr().out
    assert all(r["label"] in text for r in rows)


def test_out_writes_a_file_but_never_into_a_run(sweep, tmp_path, capsys):
    out = tmp_path / "runs.csv"
    assert exit_code(sql_command.main, [sweep, "SELECT label FROM runs", "--format", "csv", "--out", out]) == 0
    assert out.read_text().splitlines()[0] == "label"
    capsys.readouterr()
    assert exit_code(sql_command.main, [sweep, "SELECT 1", "--out", sweep / "0" / "x.csv"]) == 2
    assert "which this command reads" in one_error_line(capsys)


def test_user_errors_are_one_line(sweep, tmp_path, capsys):
    assert exit_code(sql_command.main, [sweep]) == 2
    assert "give the runs, then the query" in one_error_line(capsys)
    assert exit_code(sql_command.main, [sweep, "SELECT nope FROM runs"]) == 2
    line = one_error_line(capsys)
    assert line.startswith("receval: error: query: Binder Error") and "nope" in line
    assert exit_code(sql_command.main, [tmp_path / "missing", "SELECT 1"]) == 2
    assert "no such directory" in one_error_line(capsys)


def test_without_duckdb_the_message_names_the_extra(sweep, monkeypatch):
    real_import = builtins.__import__

    def no_duckdb(name, *args, **kwargs):
        if name == "duckdb":
            raise ImportError("No module named 'duckdb'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_duckdb)
    with pytest.raises(RecevalError, match=r"needs duckdb: pip install 'receval\[sql\]'"):
        warehouse.open_runs([sweep])


def test_duckdb_memory_and_threads_are_set_from_the_machine_and_locked(sweep, monkeypatch):
    """Half the memory this process may use (8 GiB here: 4 GiB) and its cores (3), where
    DuckDB's defaults are 80% of the RAM whatever the container; a query cannot raise them."""
    from receval.core import machine

    monkeypatch.setattr(machine, "memory_bytes", lambda: 8 << 30)
    monkeypatch.setattr(machine, "cores", lambda: 3)
    with warehouse.open_runs([sweep]) as db:
        row = db.arrow("SELECT current_setting('memory_limit') AS m, current_setting('threads') AS t").to_pylist()
        assert row == [{"m": "4.0 GiB", "t": 3}]
        with pytest.raises(RecevalError, match="locked"):
            db.arrow("SET memory_limit = '100GB'")


def test_the_memory_this_process_may_use_is_the_lower_of_the_ram_and_the_container_limit(monkeypatch, tmp_path):
    from receval.core import machine

    ram = machine.os.sysconf("SC_PAGE_SIZE") * machine.os.sysconf("SC_PHYS_PAGES")
    limit = tmp_path / "memory.max"
    real_path = machine.Path
    monkeypatch.setattr(machine, "Path", lambda p: limit if p == "/sys/fs/cgroup/memory.max" else real_path(p))
    for written, expected in (("max\n", ram), (f"{1 << 30}\n", min(ram, 1 << 30)), (f"{ram * 4}\n", ram)):
        limit.write_text(written)
        assert machine.memory_bytes() == expected
