"""Reading runs: --show, rr@k and column means, --runs across sweeps, --gate, listing,
per-question labels, the sweep line's swept values (issue 14)."""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pyarrow.parquet as pq
import pytest

from conftest import exit_code, one_error_line, run_cli
from receval.cli import list as list_mod
from receval.cli import report
from receval.analysis import gate
from receval.stats.verdict import GateOutcome
from receval.core.overrides import swept_suffix


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory):
    """Two sweeps under one folder: bm25, tfidf x headings on/off at 120 words, and
    bm25 at 40 and 120 words."""
    root = tmp_path_factory.mktemp("runs")
    for name, overrides in {
        "a": ["retriever=bm25,tfidf", "chunking.max_words=120", "chunking.headings=true,false"],
        "b": ["retriever=bm25", "chunking.max_words=40,120"],
    }.items():
        done = run_cli(*overrides, f"hydra.sweep.dir={root}/{name}", "-m", cwd=root)
        assert done.returncode == 0, done.stderr
    return root


HIT = re.compile(r"^   [* ]([ \d]\d) \S+  (\S+)", re.MULTILINE)  # "   * 1 19.608  section-id"


def table(run_dir):
    return pq.read_table(run_dir / "results.parquet").to_pylist()


def retriever_key(run_dir) -> str:
    """The dotted key naming the retriever in a saved config (``retriever.name`` or
    ``retriever.kind``, whichever this receval writes)."""
    saved = json.loads((run_dir / "run.json").read_text())["config"]["retriever"]
    return "retriever." + next(k for k in ("kind", "name") if k in saved)


def report_json(capsys, *argv) -> dict:
    assert exit_code(report.main, [*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow
def test_show_lists_each_runs_top_sections_as_stored(runs_root, capsys):
    sweep = runs_root / "a"
    assert exit_code(report.main, [sweep, "--show", "q19", "--top", "3"]) == 0
    out = capsys.readouterr().out
    blocks = out.split("first relevant at")[1:]
    assert out.startswith("q19 (direct): How long do you keep my account if I do not use my card?")
    assert len(blocks) == 4
    for job, block in enumerate(blocks):
        row = next(r for r in table(sweep / str(job)) if r["question_id"] == "q19")
        shown = [m[2] for m in HIT.finditer(block)]
        assert shown == row["retrieved"][:3]
        assert f"{row['scores'][0]:.3f}" in block
    # headings from the built-in pages; tfidf without headings finds it at rank 4
    assert "privacy#how-long-we-keep-your-account  Your privacy > How long we keep your account" in out
    assert blocks[3].strip().endswith("missed privacy#how-long-we-keep-your-account (rank 4)")
    assert blocks[3].lstrip().startswith("4")


@pytest.mark.slow
def test_show_misses_and_changed_follow_first_relevant_rank(runs_root, capsys):
    sweep = runs_root / "a"
    ranks = [{r["question_id"]: r["first_relevant_rank"] for r in table(sweep / str(j)) if r["rr"] is not None}
             for j in range(4)]
    changed = [q for q in ranks[0] if len({rk[q] for rk in ranks}) > 1]
    views = report_json(capsys, sweep, "--show", "changed", "--top", "1")
    assert [v["question_id"] for v in views] == changed
    misses = [q for q in ranks[0] if all(rk[q] is None for rk in ranks)]
    views = report_json(capsys, sweep, "--show", "misses")
    assert [v["question_id"] for v in views] == misses
    assert exit_code(report.main, [sweep, "--show", "q999"]) == 2
    assert "no question q999" in one_error_line(capsys)


@pytest.mark.slow
def test_rr_at_k_is_rr_within_the_cutoff(runs_root, capsys):
    run = runs_root / "a" / "3"
    rows = [r for r in table(run) if r["rr"] is not None]
    rr = np.array([r["rr"] for r in rows])
    rank = np.array([r["first_relevant_rank"] or 99 for r in rows])
    expected = float(np.mean(rr * (rank <= 3)))
    out = report_json(capsys, run, "--metrics", "rr@3,MRR@1,rr")
    metrics = out["runs"][0]["metrics"]
    assert metrics["rr@3"]["mean"] == pytest.approx(expected, abs=1e-12)
    assert metrics["rr@1"]["mean"] == pytest.approx(np.mean(rr * (rank == 1)), abs=1e-12)
    lo, hi = metrics["rr@3"]["ci"]
    assert lo < expected < hi
    assert expected < metrics["rr"]["mean"]
    capsys.readouterr()
    assert exit_code(report.main, [run, "--fail-under", f"rr@3={expected + 0.01:.3f}"]) == 1
    assert exit_code(report.main, [run, "--fail-under", f"rr@3={expected - 0.01:.3f}"]) == 0
    capsys.readouterr()
    assert exit_code(report.main, [run, "--metrics", "rr@11"]) == 2
    error = one_error_line(capsys)
    assert "rr@11 is beyond" in error and "depth 10" in error


@pytest.mark.slow
def test_numeric_columns_average_by_kind(runs_root, capsys):
    run = runs_root / "a" / "0"
    out = report_json(capsys, run, "--metrics", "rouge1_p,rougeL_p", "--by", "kind")
    rows = table(run)
    for column, by in zip(["rouge1_p", "rougeL_p"], [out["by"], *out["by_more"]], strict=True):
        assert by["metric"] == column
        for kind in ("direct", "paraphrase"):
            values = [r[column] for r in rows if r["kind"] == kind and r[column] is not None]
            assert by["runs"][0]["values"][kind]["mean"] == pytest.approx(np.mean(values), abs=1e-12)
    assert out["runs"][0]["metrics"]["rougeL_p"]["mean"] == pytest.approx(
        np.mean([r["rougeL_p"] for r in rows if r["rougeL_p"] is not None]), abs=1e-12)


@pytest.mark.slow
def test_runs_selects_by_parameters_across_sweeps(runs_root, capsys):
    retriever = retriever_key(runs_root / "a" / "0")
    out = report_json(capsys, runs_root, "--runs", f"{retriever}=bm25,max_words=120")
    picked = {r["run_dir"].replace(str(runs_root) + "/", "") for r in out["runs"]}
    assert picked == {"a/0", "a/1", "b/1"}  # headings on and off in a, 120 words in b
    out = report_json(capsys, runs_root, "--runs", f"{retriever}=bm25,max_words=120,headings=false")
    assert [r["run_dir"] for r in out["runs"]] == [str(runs_root / "a" / "1")]
    assert len(report_json(capsys, runs_root)["runs"]) == 6  # a folder of sweeps
    assert exit_code(report.main, [runs_root, "--runs", f"{retriever}=tfidf,max_words=40"]) == 2
    assert "matches none of the 6 runs" in one_error_line(capsys)


@pytest.mark.slow
def test_gate_fails_a_shown_drop_passes_a_run_shown_not_worse_and_says_undecided_otherwise(runs_root, capsys):
    a = runs_root / "a"  # jobs: 0 bm25 on, 1 bm25 off, 2 tfidf on, 3 tfidf off
    assert exit_code(report.main, [a / "3", "--gate", a / "2"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("gate FAIL (exit 1): MRR 0.506 vs baseline 0.685, diff -0.178 [-0.274, -0.080] (p <0.001;")
    assert "Paired differences vs baseline #0" in out  # the report of the two runs follows the verdict
    result = gate(a / "3", a / "2")
    assert result.outcome is GateOutcome.failed and not result.passed and result.exit_code == 1
    assert result.diff.lo == pytest.approx(-0.274, abs=0.005) and result.diff.hi == pytest.approx(-0.080, abs=0.005)
    # a margin of 0.1 does not excuse a drop shown beyond it (the case); one past
    # the whole interval does
    assert gate(a / "3", a / "2", margin=0.1).outcome is GateOutcome.failed
    assert gate(a / "3", a / "2", margin=0.35).outcome is GateOutcome.passed
    # bm25 against tfidf: +0.031, its interval reaches 0: undecided at margin 0, passed at 0.05
    assert exit_code(report.main, [a / "0", "--gate", a / "2"]) == 3
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("gate UNDECIDED (exit 3): MRR 0.716 vs baseline 0.685, diff +0.031")
    assert exit_code(report.main, [a / "0", "--gate", a / "2", "--margin", "0.05"]) == 0
    assert capsys.readouterr().out.startswith("gate pass (exit 0): ")
    # a selector names the baseline among the runs given
    tfidf = f"{retriever_key(a / '2')}=tfidf"
    assert exit_code(report.main, [a, "--runs", tfidf, "--gate", "headings=true"]) == 1
    capsys.readouterr()
    assert exit_code(report.main, [a, "--gate", a / "2"]) == 2
    assert "gate one run against it, not 3" in one_error_line(capsys)


@pytest.mark.slow
def test_per_question_columns_are_run_labels(runs_root, capsys):
    sweep = runs_root / "a"
    labels = [r["label"] for r in report_json(capsys, sweep)["runs"]]
    assert exit_code(report.main, [sweep, "--per-question", "--format", "csv"]) == 0
    header = next(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert header == ["question_id", "kind", "split", "missed_by_all", *labels, "question"]
    assert exit_code(report.main, [sweep, "--per-question", "--format", "markdown"]) == 0
    assert "| id | kind | " + " | ".join(labels) + " | question |" in capsys.readouterr().out


@pytest.mark.slow
def test_list_prints_every_run_with_what_differs(runs_root, capsys):
    (runs_root / "b" / "7").mkdir()
    (runs_root / "b" / "7" / "run.json").write_text("{}")
    assert exit_code(list_mod.main, [runs_root, "--format", "json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert [r["run_dir"].replace(str(runs_root) + "/", "") for r in records] == ["a/0", "a/1", "a/2", "a/3", "b/0", "b/1", "b/7"]
    assert [r["complete"] for r in records] == [True] * 6 + [False]
    first = records[0]
    assert "bm25" in first["params"].values() and first["params"]["max_words"] == 120
    assert first["mrr"] == pytest.approx(np.mean([r["rr"] for r in table(runs_root / "a" / "0") if r["rr"] is not None]))
    assert (first["n_questions"], first["n_scored"]) == (49, 47)
    # the report over the folder skips the unfinished job, saying so
    assert exit_code(report.main, [runs_root, "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert len(json.loads(out)["runs"]) == 6
    assert f"{runs_root / 'b' / '7'}: no results.parquet (incomplete job?); skipped" in err
    (runs_root / "b" / "7" / "run.json").unlink()
    (runs_root / "b" / "7").rmdir()


def test_sweep_line_names_swept_values():
    argv = ["retriever=bm25", "retriever.k1=1.2,1.5", "retriever.b=range(0.5,1,0.25)",
            "chunking.max_words=40,120", "-m"]
    job = ["retriever=bm25", "retriever.k1=1.5", "retriever.b=0.75", "chunking.max_words=40"]
    assert swept_suffix(job, argv) == "  [k1=1.5 b=0.75]"
    assert swept_suffix(["retriever=bm25"], ["retriever=bm25"]) == ""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--show", "q19", "--top", "0"], "--top 0: use an integer >= 1"),
        (["--show", " , "], "--show: give question ids"),
        (["--gate", "a/2", "--margin", "-0.1"], "--margin -0.1: use a difference >= 0"),
        (["--runs", "bm25"], "selector 'bm25': use KEY=VALUE"),
        (["--metrics", "rr@0"], "rr@0: the cutoff must be >= 1"),
        (["--plot", "mrr.gif"], "name a .png or .svg file"),
    ],
)
def test_bad_reading_options_exit_2_with_one_line(runs_root, capsys, tmp_path, args, words):
    args = [str(runs_root / a) if a == "a/2" else str(tmp_path / a) if a.endswith(".gif") else a for a in args]
    assert exit_code(report.main, [runs_root / "a" / "3", *args]) == 2
    assert words in one_error_line(capsys)
    assert not (tmp_path / "mrr.gif").exists()
