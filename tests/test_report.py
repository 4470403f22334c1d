"""receval report (and the run discovery in receval.results) on one real 6-run sweep."""

import csv
import io
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import one_error_line
from forge import forged
from conftest import exit_code as command_exit_code

from receval.analysis.report import Report
from receval.analysis import filters
from receval.results import configs, labels, load_runs
from receval.core.errors import RecevalError
from receval.cli.report import main, report_for
from receval.render import report as rendered


@pytest.fixture(scope="module")
def sweep(readme_sweep) -> Path:
    """retriever=bm25,tfidf x chunking.max_words=20,40,120 (shared with test_cli)."""
    return readme_sweep


def stored(run_dir) -> dict:
    return pq.read_table(Path(run_dir) / "results.parquet").to_pydict()


def answerable_mean(run_dir, column, where=None) -> float:
    data = stored(run_dir)
    values = [
        v for i, v in enumerate(data[column])
        if v is not None and all(data[c][i] == val for c, val in (where or {}).items())
    ]
    return float(np.mean(values))


def run_json(capsys, argv) -> dict:
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def exit_code(argv) -> int:
    return command_exit_code(main, argv)


def rewrite(run_dir: Path, change) -> None:
    """Rewrite a stored results.parquet through ``change(dict of columns) -> table``."""
    table = pq.read_table(run_dir / "results.parquet")
    pq.write_table(change(table), run_dir / "results.parquet")
    forged(run_dir)


# ----------------------------------------------------------------- the main table


@pytest.mark.slow
def test_table_prints_one_row_per_run_in_sweep_order(sweep, capsys):
    assert main([str(sweep)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "47 questions scored (direct 25, paraphrase 22), 2 unanswerable left out" in lines[0]
    assert "2000 resamples, seed 0" in lines[1]
    header = next(line for line in lines if line.startswith("#"))
    for name in ("retriever", "max_words", "chunks", "hit@1", "hit@3", "recall@3", "MRR",
                 "MRR 95% CI", "nDCG@5"):
        assert name in header
    assert header.index("retriever") < header.index("max_words")
    start = lines.index(header) + 2
    rows = [line.split() for line in lines[start:lines.index("", start)]]
    latency = lines[lines.index("Latency per question (ms)") + 1]  # latency has its own table, with intervals
    assert latency.split()[:3] == ["#", "retriever", "max_words"] and "p50 95% CI" in latency
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("0", "bm25", "20"), ("1", "bm25", "40"), ("2", "bm25", "120"),
        ("3", "tfidf", "20"), ("4", "tfidf", "40"), ("5", "tfidf", "120"),
    ]


@pytest.mark.slow
def test_means_are_the_stored_per_question_columns(sweep, capsys):
    data = run_json(capsys, [str(sweep)])
    assert [Path(r["run_dir"]).name for r in data["runs"]] == ["0", "1", "2", "3", "4", "5"]
    assert data["params"] == ["retriever", "max_words"]
    assert data["metrics"] == ["hit@1", "hit@3", "recall@3", "rr", "ndcg@5"]
    for run in data["runs"]:
        info = json.loads((Path(run["run_dir"]) / "run.json").read_text())
        assert run["n_chunks"] == info["n_chunks"]
        assert run["n_questions"] == 47 and run["n_unanswerable"] == 2
        for name, value in run["metrics"].items():
            assert value["mean"] == answerable_mean(run["run_dir"], name)  # exactly
            lo, hi = value["ci"]
            assert lo <= value["mean"] <= hi
        assert run["params"]["retriever"] == info["config"]["retriever"]["kind"]
        assert run["params"]["max_words"] == info["config"]["chunking"]["max_words"]


@pytest.mark.slow
def test_intervals_repeat_exactly_and_do_not_depend_on_the_other_runs(sweep, capsys):
    first = run_json(capsys, [str(sweep)])
    second = run_json(capsys, [str(sweep)])
    assert first == second
    alone = run_json(capsys, [str(sweep / "2")])
    assert alone["runs"][0]["metrics"] == first["runs"][2]["metrics"]
    other_seed = run_json(capsys, [str(sweep), "--seed", "1"])
    assert other_seed["bootstrap"]["seed"] == 1
    assert other_seed["runs"][0]["metrics"]["rr"]["ci"] != first["runs"][0]["metrics"]["rr"]["ci"]
    assert other_seed["runs"][0]["metrics"]["rr"]["mean"] == first["runs"][0]["metrics"]["rr"]["mean"]


@pytest.mark.slow
def test_metrics_are_selectable(sweep, capsys):
    data = run_json(capsys, [str(sweep), "--metrics", "MRR,precision@5,ndcg@10"])
    assert data["metrics"] == ["rr", "precision@5", "ndcg@10"]
    assert set(data["runs"][0]["metrics"]) == {"rr", "precision@5", "ndcg@10"}


@pytest.mark.slow
def test_csv_markdown_and_latex_carry_the_same_rows(sweep, capsys):
    report = report_for([str(sweep)])
    rows = list(csv.DictReader(io.StringIO(rendered.to_csv(report))))
    assert [row["run_dir"] for row in rows] == [r.run_dir for r in report.runs]
    assert float(rows[3]["rr"]) == report.runs[3].metrics["rr"].mean
    assert float(rows[3]["rr_lo"]) == report.runs[3].metrics["rr"].lo
    assert rows[3]["retriever"] == "tfidf" and rows[3]["max_words"] == "20"
    assert float(rows[3]["latency_p50_ms_lo"]) == report.runs[3].latency["p50"].lo
    markdown = rendered.render(report, "markdown").splitlines()
    parts = "\n".join(markdown).split("\n\n")
    tables = [[line for line in part.splitlines() if line.startswith("|")] for part in parts]
    tables = [table for table in tables if table]
    assert [len(table) for table in tables] == [2 + 6, 2 + 6]  # the main table, then latency with its intervals
    assert all(len({line.count("|") for line in table}) == 1 for table in tables)
    latex = rendered.render(report, "latex")
    assert latex.count("\\begin{tabular}") == 2 and latex.count("\\end{tabular}") == 2
    assert latex.count("\\\\") == 2 * (1 + 6)
    assert "MRR 95\\% CI" in latex and "p50 95\\% CI" in latex


@pytest.mark.slow
def test_out_writes_the_file(sweep, tmp_path, capsys):
    target = tmp_path / "deep" / "report.json"
    assert main([str(sweep), "--format", "json", "--out", str(target)]) == 0
    assert capsys.readouterr().out == ""
    assert len(json.loads(target.read_text())["runs"]) == 6
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]


# ----------------------------------------------------------------- by, per question, filters


@pytest.mark.slow
def test_by_kind_gives_one_interval_per_kind(sweep, capsys):
    data = run_json(capsys, [str(sweep), "--by", "kind"])
    by = data["by"]
    assert by["column"] == "kind" and by["metric"] == "hit@3"
    assert by["values"] == [
        {"value": "direct", "n_questions": 25}, {"value": "paraphrase", "n_questions": 22},
    ]
    for run in by["runs"]:
        cell = run["values"]["paraphrase"]
        assert cell["mean"] == answerable_mean(run["run_dir"], "hit@3", {"kind": "paraphrase"})
        assert cell["ci"][0] <= cell["mean"] <= cell["ci"][1]
    split = run_json(capsys, [str(sweep), "--by", "split", "--by-metric", "rr"])
    assert [v["value"] for v in split["by"]["values"]] == ["dev", "test"]


@pytest.mark.slow
def test_split_scores_only_those_questions(sweep, capsys):
    data = run_json(capsys, [str(sweep), "--split", "test"])
    assert data["where"] == {"split": "test"}
    for run in data["runs"]:
        assert run["n_questions"] == 23
        assert run["metrics"]["rr"]["mean"] == answerable_mean(run["run_dir"], "rr", {"split": "test"})
    both = run_json(capsys, [str(sweep), "--where", "split=dev", "--where", "kind=direct"])
    assert both["runs"][0]["n_questions"] == 13


@pytest.mark.slow
def test_per_question_ranks_and_questions_every_run_misses(sweep, capsys):
    data = run_json(capsys, [str(sweep), "--per-question"])
    rows = data["per_question"]
    assert len(rows) == 47  # unanswerable questions left out
    columns = [stored(r["run_dir"]) for r in data["runs"]]
    for row in rows:
        i = columns[0]["question_id"].index(row["question_id"])
        assert row["ranks"] == [c["first_relevant_rank"][i] for c in columns]
        assert row["missed_by_all"] == all(r is None for r in row["ranks"])
    missed = [r["question_id"] for r in rows if r["missed_by_all"]]
    assert missed  # the built-in set has questions no lexical run finds
    assert main([str(sweep), "--per-question"]) == 0
    text = capsys.readouterr().out
    marked = [line.split()[1] for line in text.splitlines() if line.startswith("x ")]
    assert marked == missed
    assert f"x: missed by every run ({len(missed)} questions)" in text
    per_q_csv = list(csv.DictReader(io.StringIO(rendered.to_csv(report_for([str(sweep), "--per-question"])))))
    labels = [r["label"] for r in data["runs"]]
    assert len(per_q_csv) == 47 and list(per_q_csv[0])[4:-1] == labels  # headed by run labels


# ----------------------------------------------------------------- baseline


@pytest.mark.slow
def test_baseline_needs_a_selector_naming_one_run(sweep, capsys):
    assert exit_code([str(sweep), "--baseline", "retriever=tfidf"]) == 2
    line = one_error_line(capsys)
    assert "matches 3 runs" in line and "max_words=20" in line and "max_words=120" in line
    assert exit_code([str(sweep), "--baseline", "retriever=dense"]) == 2
    assert "matches none of the 6 runs" in one_error_line(capsys)
    assert exit_code([str(sweep), "--baseline", "colour=red"]) == 2
    assert "not a config key" in one_error_line(capsys)


@pytest.mark.slow
def test_baseline_pairs_match_the_stored_columns(sweep, capsys):
    data = run_json(capsys, [str(sweep), "--baseline", "retriever=tfidf,max_words=120"])
    base = data["baseline"]
    assert Path(base).name == "5"
    assert [Path(p["run_dir"]).name for p in data["pairs"]] == ["0", "1", "2", "3", "4"]
    a = stored(base)
    for pair in data["pairs"]:
        b = stored(pair["run_dir"])
        keep = [i for i, v in enumerate(a["rr"]) if v is not None]
        diffs = np.array([b["rr"][i] - a["rr"][i] for i in keep])
        assert pair["baseline"] == base and pair["metric"] == "rr"
        assert pair["diff"] == float(np.mean(diffs))
        assert pair["ci"][0] <= pair["diff"] <= pair["ci"][1]
        ra, rb = a["first_relevant_rank"], b["first_relevant_rank"]
        assert pair["fixed"] == [a["question_id"][i] for i in keep if rb[i] == 1 and ra[i] != 1]
        assert pair["broken"] == [a["question_id"][i] for i in keep if ra[i] == 1 and rb[i] != 1]
        assert (pair["up"], pair["down"], pair["same"]) == (
            int((diffs > 0).sum()), int((diffs < 0).sum()), int((diffs == 0).sum()),
        )
    by_dir = run_json(capsys, [str(sweep), "--baseline", str(sweep / "5")])
    assert by_dir["pairs"] == data["pairs"]
    hit = run_json(capsys, [str(sweep), "--baseline", "retriever=tfidf,max_words=120", "--metric", "hit@3"])
    assert hit["pairs"][0]["metric"] == "hit@3"


@pytest.mark.slow
def test_baseline_outside_the_runs_is_shown_first(sweep, capsys):
    data = run_json(capsys, [str(sweep / "1"), str(sweep / "2"), "--baseline", str(sweep / "0")])
    assert [Path(r["run_dir"]).name for r in data["runs"]] == ["0", "1", "2"]
    assert len(data["pairs"]) == 2


@pytest.mark.slow
def test_baseline_table_shows_the_paired_differences(sweep, capsys):
    assert main([str(sweep), "--baseline", "retriever=bm25,max_words=40"]) == 0
    out = capsys.readouterr().out
    assert "Paired differences vs baseline #1 bm25 max_words=40" in out
    assert "fixed@1: a relevant section first in the run, not in the baseline" in out


# ----------------------------------------------------------------- fail-under


@pytest.mark.slow
def test_fail_under_exits_1_naming_the_run(sweep, capsys):
    assert main([str(sweep), "--fail-under", "hit@3=0.70"]) == 1
    captured = capsys.readouterr()
    assert "tfidf" in captured.out
    failures = captured.err.strip().splitlines()
    assert failures == [f"receval: fail-under: #3 tfidf max_words=20: hit@3 0.681 < 0.7 ({sweep / '3'})"]
    assert main([str(sweep), "--fail-under", "hit@3=0.6,MRR=0.5", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fail_under"] == {"floors": {"hit@3": 0.6, "rr": 0.5}, "failures": []}


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--fail-under", "hit@3>0.7"], "use METRIC=FLOOR"),
        (["--fail-under", "hit@3=high"], "is not a number"),
        (["--fail-under", "hit@3=70"], "between 0 and 1"),
        (["--fail-under", "judged@7=0.5"], "judged@7 is not stored"),  # hit@7 is derived from the per-rank columns
        (["--metrics", "hit@3,bogus"], "unknown measure 'bogus'"),
        (["--metrics", "hit@30"], "hit@30 is beyond"),
        (["--metric", "rr@11"], "rr@11 is beyond"),
        (["--by", "colour"], "no column 'colour'"),
        (["--by", "question_id"], "47 distinct values; pick a column with a few"),  # the scored questions
        (["--split", "validation"], "split values present: dev, test"),
        (["--level", "95"], "between 0 and 1"),
        (["--format", "xml"], "invalid choice"),
        (["--bogus"], "unrecognized arguments"),
    ],
)
@pytest.mark.slow
def test_bad_arguments_exit_2_with_one_line(sweep, capsys, argv, message):
    assert exit_code([str(sweep), *argv]) == 2
    assert message in one_error_line(capsys)


# ----------------------------------------------------------------- finding runs


def test_missing_and_non_run_directories_exit_2(tmp_path, capsys):
    assert exit_code([str(tmp_path / "nowhere")]) == 2
    assert "no such directory" in one_error_line(capsys)
    (tmp_path / "notes").mkdir()
    assert exit_code([str(tmp_path / "notes")]) == 2
    assert "not a run directory" in one_error_line(capsys)


@pytest.mark.slow
def test_incomplete_jobs_are_skipped_with_a_warning(sweep, tmp_path, capsys):
    copy = tmp_path / "sweep"
    shutil.copytree(sweep, copy)
    (copy / "4" / "results.parquet").unlink()
    data = run_json(capsys, [str(copy)])
    assert [Path(r["run_dir"]).name for r in data["runs"]] == ["0", "1", "2", "3", "5"]
    main([str(copy), "--format", "json"])
    assert capsys.readouterr().err.strip() == (
        f"receval: warning: {copy / '4'}: no results.parquet (incomplete job?); skipped"
    )
    for job in "01235":
        (copy / job / "results.parquet").unlink()
    assert exit_code([str(copy)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("receval: error: no complete runs in")


@pytest.mark.slow
def test_sweep_jobs_are_found_in_job_number_order(sweep, tmp_path):
    for job in range(12):
        (tmp_path / str(job)).mkdir()
        shutil.copy(sweep / "0" / "results.parquet", tmp_path / str(job))
    (tmp_path / "multirun.yaml").write_text("{}\n")
    found = [run.run_dir for run in load_runs([tmp_path], headers=True)]
    assert [p.name for p in found] == [str(i) for i in range(12)]
    # several paths: in the order given, each run once
    again = [run.run_dir for run in load_runs([tmp_path / "10", tmp_path, tmp_path / "3"], headers=True)]
    assert [p.name for p in again][:3] == ["10", "0", "1"] and len(again) == 12


@pytest.mark.slow
def test_runs_over_different_questions(sweep, tmp_path, capsys):
    fewer = tmp_path / "fewer"
    shutil.copytree(sweep / "0", fewer)
    rewrite(fewer, lambda t: t.slice(0, 40))
    data = run_json(capsys, [str(sweep / "1"), str(fewer)])
    assert data["questions"]["same_questions"] is False
    assert [r["n_questions"] for r in data["runs"]] == [47, 40]
    assert exit_code([str(sweep / "1"), str(fewer), "--baseline", str(sweep / "1")]) == 2
    assert "9 ids only in the first, 0 only in the second, 40 shared" in one_error_line(capsys)
    data = run_json(capsys, [str(sweep / "1"), str(fewer), "--baseline", str(sweep / "1"), "--intersect"])
    assert data["pairs"][0]["n_questions"] == 40 and data["pairs"][0]["only_a"] == 9


# ----------------------------------------------------------------- params and selectors


def test_differing_params_are_ordered_as_the_command_line_named_them():
    """The report's parameter columns (:func:`receval.results.labels.naming`, the one rule
    naming runs): in the order the command line named them, then components, then in config order."""
    configs_ = [
        {"chunking": {"kind": "words", "max_words": 20, "headings": True}, "retriever": {"kind": "bm25"}, "depth": 10},
        {"chunking": {"kind": "words", "max_words": 40, "headings": False}, "retriever": {"kind": "tfidf"}, "depth": 10},
    ]
    overrides = [["retriever=bm25", "chunking.headings=true"], ["retriever=tfidf", "chunking.headings=false"]]
    named = labels.naming(configs_, overrides)
    assert named.columns == ["retriever", "headings", "max_words"]
    assert named.keys == {"retriever": "retriever", "headings": "chunking.headings", "max_words": "chunking.max_words"}
    assert labels.naming(configs_).columns == ["retriever", "max_words", "headings"]  # components first


@pytest.mark.slow
def test_selectors_match_typed_values(sweep):
    runs = load_runs([sweep])
    assert filters.select(runs, "max_words=120") == [2, 5]
    assert filters.select(runs, "chunking.max_words=120,retriever.kind=bm25") == [2]
    assert filters.select(runs, "headings=true") == [0, 1, 2, 3, 4, 5]
    assert filters.select(runs, "dataset.path=null") == [0, 1, 2, 3, 4, 5]
    assert filters.select(runs, "ks=[1, 3, 5, 10]") == [0, 1, 2, 3, 4, 5]
    assert filters.select(runs, "kind=bm25") == [0, 1, 2]  # the kind that differs
    with pytest.raises(RecevalError, match="ambiguous: dataset.split, objective.split"):
        filters.select(runs, "split=dev")
    with pytest.raises(RecevalError, match="use KEY=VALUE"):
        filters.select(runs, "bm25")


# ----------------------------------------------------------------- plot


@pytest.mark.slow
def test_plot_draws_a_png(sweep, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    target = tmp_path / "mrr.png"
    assert main([str(sweep), "--plot", str(target)]) == 0
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"receval: wrote {target}" in capsys.readouterr().err


@pytest.mark.slow
def test_plot_without_matplotlib_says_what_to_install(sweep, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    assert exit_code([str(sweep), "--plot", str(tmp_path / "x.png")]) == 2
    assert "install receval[plot]" in one_error_line(capsys)
    assert not (tmp_path / "x.png").exists()


@pytest.mark.slow
def test_report_object_renders_without_the_command_line(sweep):
    report = report_for([str(sweep), "--by", "kind", "--per-question", "--baseline", "retriever=tfidf,max_words=20"])
    text = rendered.render(report, "table")
    assert "hit@3 by kind" in text and "Rank of the first relevant section" in text
    assert isinstance(report, Report)
    assert json.loads(rendered.render(report, "json")) == report.to_dict()


@pytest.mark.slow
def test_unreadable_or_newer_results_exit_2(sweep, tmp_path, capsys):
    broken = tmp_path / "broken"
    shutil.copytree(sweep / "0", broken)
    data = (broken / "results.parquet").read_bytes()
    (broken / "results.parquet").write_bytes(data[: len(data) // 2])
    forged(broken)
    assert exit_code([str(broken)]) == 2
    assert "cannot be read as results" in one_error_line(capsys)
    newer = tmp_path / "newer"
    shutil.copytree(sweep / "0", newer)
    table = pq.read_table(newer / "results.parquet")
    meta = json.loads(table.schema.metadata[b"receval"])
    meta["schema_version"] = 99
    pq.write_table(table.replace_schema_metadata({b"receval": json.dumps(meta)}), newer / "results.parquet")
    forged(newer)
    assert exit_code([str(newer)]) == 2
    assert "upgrade receval" in one_error_line(capsys)


@pytest.mark.slow
def test_runs_the_params_cannot_tell_apart_show_their_directories(sweep, tmp_path, capsys):
    twin = tmp_path / "twin"
    shutil.copytree(sweep / "2", twin)
    assert main([str(sweep / "2"), str(twin)]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("#"))
    assert header.split()[:3] == ["#", "run", "chunks"]
    assert str(twin) in out and str(sweep / "2") in out


@pytest.mark.slow
def test_a_setting_the_saved_config_lacks_takes_the_schema_default(sweep, tmp_path, capsys):
    """A run made before a setting existed does not differ in it from a newer run."""
    import yaml

    older = tmp_path / "older"
    shutil.copytree(sweep / "0", older)
    path = older / ".hydra" / "config.yaml"
    config = yaml.safe_load(path.read_text())
    del config["retriever"]["k1"], config["depth"]
    path.write_text(yaml.safe_dump(config))
    forged(older)
    data = run_json(capsys, [str(older), str(sweep / "1")])
    assert data["params"] == ["max_words"]
