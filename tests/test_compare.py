"""receval compare on runs made by separate commands (headings on vs off, bm25 vs tfidf)."""

import csv
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import one_error_line, run_cli
from forge import forged
from conftest import exit_code as command_exit_code

from receval.cli.report import report_for
from receval.cli.compare import compare, main
from receval.render.compare import render


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Three separate (non-sweep) runs, each its own command, as a user makes them."""
    where = tmp_path_factory.mktemp("compare")
    made = {}
    for name, overrides in {
        "headings": ["chunking.headings=true"],
        "no_headings": ["chunking.headings=false"],
        "tfidf": ["retriever=tfidf", "chunking.max_words=40"],
    }.items():
        done = run_cli(*overrides, f"hydra.run.dir=runs/{name}", cwd=where)
        assert done.returncode == 0, done.stderr
        made[name] = where / "runs" / name
    return made


def stored(run_dir) -> dict:
    return pq.read_table(Path(run_dir) / "results.parquet").to_pydict()


def as_json(capsys, *argv) -> dict:
    assert main([*map(str, argv), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def exit_code(argv) -> int:
    return command_exit_code(main, argv)


@pytest.mark.slow
def test_pairs_two_separate_runs_by_question(runs, capsys):
    a, b = runs["headings"], runs["no_headings"]
    data = as_json(capsys, a, b)
    assert data["a"] == str(a) and data["b"] == str(b) and data["metric"] == "rr"
    assert data["params"] == {"chunking.headings": [True, False]}
    assert data["differences"] == ["chunking.headings: true -> false"]
    sa, sb = stored(a), stored(b)
    assert sa["question_id"] == sb["question_id"]
    keep = [i for i, v in enumerate(sa["rr"]) if v is not None]
    diffs = np.array([sb["rr"][i] - sa["rr"][i] for i in keep])
    assert data["n_questions"] == len(keep) == 47
    assert data["mean_a"] == float(np.mean([sa["rr"][i] for i in keep]))
    assert data["mean_b"] == float(np.mean([sb["rr"][i] for i in keep]))
    assert data["diff"] == float(np.mean(diffs))
    lo, hi = data["ci"]
    assert lo <= data["diff"] <= hi
    ra, rb = sa["first_relevant_rank"], sb["first_relevant_rank"]
    assert data["fixed"] == [sa["question_id"][i] for i in keep if rb[i] == 1 and ra[i] != 1]
    assert data["broken"] == [sa["question_id"][i] for i in keep if ra[i] == 1 and rb[i] != 1]
    assert data["fixed"] or data["broken"]  # headings change some first ranks
    assert (data["up"], data["down"], data["same"]) == (
        int((diffs > 0).sum()), int((diffs < 0).sum()), int((diffs == 0).sum()),
    )
    assert data["bootstrap"] == {"n_resamples": 2000, "level": 0.95, "seed": 0, "method": "percentile"}


@pytest.mark.slow
def test_swapping_the_runs_swaps_the_answer(runs, capsys):
    ab = as_json(capsys, runs["headings"], runs["tfidf"])
    ba = as_json(capsys, runs["tfidf"], runs["headings"])
    assert ba["diff"] == pytest.approx(-ab["diff"], abs=1e-15)
    assert (ba["fixed"], ba["broken"]) == (ab["broken"], ab["fixed"])
    assert (ba["up"], ba["down"]) == (ab["down"], ab["up"])
    assert ba["ci"][0] == pytest.approx(-ab["ci"][1], abs=1e-12)


@pytest.mark.slow
def test_same_interval_as_the_report_baseline(runs, capsys):
    """compare and report --baseline share one pairing: identical numbers."""
    pair = as_json(capsys, runs["headings"], runs["tfidf"])
    rep = report_for([str(runs["no_headings"]), str(runs["tfidf"]), "--baseline", str(runs["headings"])]).to_dict()
    from_report = rep["pairs"][1]
    assert from_report["run_dir"] == str(runs["tfidf"])
    for key in ("diff", "ci", "fixed", "broken", "up", "down", "same", "n_questions"):
        assert from_report[key] == pair[key], key


@pytest.mark.slow
def test_a_run_compared_with_itself(runs, capsys):
    data = as_json(capsys, runs["tfidf"], runs["tfidf"])
    assert data["diff"] == 0.0 and data["ci"] == [0.0, 0.0]
    assert data["fixed"] == data["broken"] == [] and data["same"] == 47


@pytest.mark.slow
def test_metric_and_split(runs, capsys):
    data = as_json(capsys, runs["headings"], runs["tfidf"], "--metric", "hit@3", "--split", "dev")
    assert data["metric"] == "hit@3" and data["where"] == {"split": "dev"}
    sa, sb = stored(runs["headings"]), stored(runs["tfidf"])
    keep = [i for i, v in enumerate(sa["hit@3"]) if v is not None and sa["split"][i] == "dev"]
    assert data["n_questions"] == len(keep)
    assert data["diff"] == float(np.mean([sb["hit@3"][i] - sa["hit@3"][i] for i in keep]))


@pytest.mark.slow
def test_rr_at_k_is_paired_from_the_stored_ranks(runs, capsys):
    data = as_json(capsys, runs["headings"], runs["tfidf"], "--metric", "MRR@3")
    assert data["metric"] == "rr@3"
    sa, sb = stored(runs["headings"]), stored(runs["tfidf"])

    def rr3(s, i):  # rr where the first relevant section is in the top 3, else 0
        rank = s["first_relevant_rank"][i]
        return s["rr"][i] if rank is not None and rank <= 3 else 0.0

    keep = [i for i, v in enumerate(sa["rr"]) if v is not None]
    assert data["n_questions"] == len(keep) == 47
    assert data["mean_a"] == pytest.approx(np.mean([rr3(sa, i) for i in keep]))
    assert data["diff"] == pytest.approx(np.mean([rr3(sb, i) - rr3(sa, i) for i in keep]))
    assert exit_code([runs["headings"], runs["tfidf"], "--metric", "rr@11"]) == 2
    assert "rr@11 is beyond" in one_error_line(capsys)


@pytest.mark.slow
def test_formats(runs, capsys):
    a, b = runs["headings"], runs["no_headings"]
    assert main([str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert "headings: true -> false" in text and "fixed" in text and "broken" in text
    assert main([str(a), str(b), "--format", "csv"]) == 0
    (row,) = csv.DictReader(io.StringIO(capsys.readouterr().out))
    assert row["a"] == str(a) and row["metric"] == "rr"
    data = as_json(capsys, a, b)
    assert float(row["diff"]) == data["diff"] and row["fixed"] == " ".join(data["fixed"])
    assert main([str(a), str(b), "--format", "markdown"]) == 0
    assert "| MRR |" in capsys.readouterr().out
    assert main([str(a), str(b), "--format", "latex"]) == 0
    assert "\\begin{tabular}" in capsys.readouterr().out


@pytest.mark.slow
def test_different_question_sets_are_refused_unless_intersect(runs, tmp_path, capsys):
    fewer = tmp_path / "fewer"
    shutil.copytree(runs["tfidf"], fewer)
    table = pq.read_table(fewer / "results.parquet")
    pq.write_table(table.slice(5), fewer / "results.parquet")
    forged(fewer)
    assert exit_code([runs["headings"], fewer]) == 2
    line = one_error_line(capsys)
    assert "are over different questions: 5 ids only in the first, 0 only in the second, 44 shared" in line
    assert "--intersect" in line
    data = as_json(capsys, runs["headings"], fewer, "--intersect")
    assert (data["only_a"], data["only_b"]) == (5, 0)
    shared_rr = stored(runs["headings"])["rr"][5:]
    assert data["n_questions"] == sum(v is not None for v in shared_rr) == 42


@pytest.mark.slow
def test_reordered_questions_are_paired_by_id(runs, tmp_path, capsys):
    shuffled = tmp_path / "shuffled"
    shutil.copytree(runs["tfidf"], shuffled)
    table = pq.read_table(shuffled / "results.parquet")
    order = np.random.default_rng(0).permutation(table.num_rows)
    pq.write_table(table.take(order), shuffled / "results.parquet")
    forged(shuffled)
    plain = as_json(capsys, runs["headings"], runs["tfidf"])
    moved = as_json(capsys, runs["headings"], shuffled)
    for key in ("diff", "ci", "fixed", "broken", "up", "down", "same"):
        assert moved[key] == plain[key], key


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--metric", "hit@7"], "hit@7 is not stored in"),
        (["--metric", "f1"], "unknown measure 'f1'"),
        (["--n-resamples", "0"], "n_resamples=0: use an integer >= 1"),
        (["--where", "kind"], "use COLUMN=VALUE"),
    ],
)
@pytest.mark.slow
def test_bad_arguments_exit_2(runs, capsys, extra, message):
    assert exit_code([runs["headings"], runs["tfidf"], *extra]) == 2
    assert message in one_error_line(capsys)


@pytest.mark.slow
def test_bad_run_directories_exit_2(runs, tmp_path, capsys):
    assert exit_code([tmp_path / "missing", runs["tfidf"]]) == 2
    assert "no such directory" in one_error_line(capsys)
    assert exit_code([tmp_path, runs["tfidf"]]) == 2
    assert "no results.parquet here" in one_error_line(capsys)
    sweep = runs["tfidf"].parent  # holds no numbered jobs: not a sweep either
    assert exit_code([sweep, runs["tfidf"]]) == 2
    one_error_line(capsys)
    fake_sweep = tmp_path / "sweep"
    shutil.copytree(runs["tfidf"], fake_sweep / "0")
    assert exit_code([fake_sweep, runs["tfidf"]]) == 2
    assert "a sweep of 1 jobs, not one run; give A as one of its job folders" in one_error_line(capsys)


@pytest.mark.slow
def test_function_api(runs):
    result = compare(runs["headings"], runs["no_headings"], metric="MRR")
    assert result.pair.metric == "rr"
    assert result.to_dict()["diff"] == result.pair.diff.mean
    assert "B - A" in render(result, "table")


@pytest.mark.slow
def test_several_measures_are_each_the_single_measure_comparison(runs, capsys):
    """--metrics: a pair per measure, each exactly what --metric gives for it alone, in every format."""
    a, b = runs["headings"], runs["tfidf"]
    asked = ["hit@1", "hit@3", "recall@3", "rr", "MRR@3"]
    data = as_json(capsys, a, b, "--metrics", ",".join(asked))
    assert [m["metric"] for m in data["measures"]] == ["hit@1", "hit@3", "recall@3", "rr", "rr@3"]
    for measure, name in zip(data["measures"], asked):
        alone = as_json(capsys, a, b, "--metric", name)
        assert alone["measures"] == [{k: alone[k] for k in measure}]
        assert measure == alone["measures"][0]
    assert {k: data[k] for k in ("metric", "diff", "ci")} == {  # the top level: the first measure
        k: data["measures"][0][k] for k in ("metric", "diff", "ci")}
    assert main([str(a), str(b), "--metrics", ",".join(asked), "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["metric"], float(r["diff"]), r["fixed"]) for r in rows] == [
        (m["metric"], m["diff"], " ".join(m["fixed"])) for m in data["measures"]]
    assert main([str(a), str(b), "--metrics", ",".join(asked)]) == 0
    text = capsys.readouterr().out
    assert "5 measures, each interval on its own" in text
    for label in ("hit@1", "hit@3", "recall@3", "MRR", "MRR@3"):
        assert any(line.split()[:1] == [label] for line in text.splitlines()), label
    assert main([str(a), str(b), "--metrics", "hit@3,rr", "--format", "markdown"]) == 0
    shown = capsys.readouterr().out
    assert "| hit@3 |" in shown and "| MRR |" in shown and "| fixed@1 (MRR) |" in shown
    assert main([str(a), str(b), "--metrics", "hit@3,rr", "--format", "latex"]) == 0
    assert capsys.readouterr().out.count("\\begin{tabular}") == 2
    assert exit_code([a, b, "--metrics", "hit@3", "--metric", "rr"]) == 2
    assert "give one" in one_error_line(capsys)
    assert exit_code([a, b, "--metrics", "hit@3,f1"]) == 2
    assert "--metrics: unknown measure 'f1'" in one_error_line(capsys)
