"""The gate's three outcomes (issue 44): ``report RUN --gate BASELINE [--margin M]`` and
``analysis.gate`` pass a run shown not worse (or unchanged) with exit 0, fail a shown
drop not shown within the margin with exit 1, and call the rest undecided with exit 3,
in the measure's direction; and every ``--format``/``--out`` of the report, with and
without ``--gate``, ``--fail-under`` and ``--baseline``, writes what it names, the
verdict included. Runs here are hand-made stored runs (no pipeline, no subprocess)."""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import exit_code
from docblocks import blocks, environment
from receval import analysis
from receval.cli import report
from receval.results.manifest import seal
from receval.results.write import write_results, write_run_json
from receval.stats.paired import PairedTest
from receval.stats.gate import Gate
from receval.stats.verdict import GateOutcome
from receval.run.written import label_facts

N = 40
BASE = np.r_[np.ones(30), np.zeros(10)]  # the baseline answers 30 of 40 questions first


def write_run(folder, k1: float, rr: np.ndarray):
    """A stored run of BM25 with ``k1`` whose questions score ``rr`` (1: a relevant section first, 0: none)."""
    folder.mkdir(parents=True)
    hit = [bool(v) for v in rr]
    columns = {
        "question_id": [f"q{i:02d}" for i in range(N)], "kind": ["direct"] * N, "split": ["dev"] * N,
        "question": [f"question {i}" for i in range(N)], "relevant": [["s1"]] * N, "grades": [[1]] * N,
        "retrieved": [["s1"] if h else ["s2"] for h in hit], "scores": [[1.0]] * N,
        "first_relevant_rank": [1 if h else None for h in hit], "rr": rr.tolist(), "hit@3": rr.tolist(),
        "latency_ms": [1.0] * N,
    }
    retriever = {"kind": "bm25", "k1": k1, "b": 0.75}
    write_results(folder, columns, ["rr", "hit@3"], {"n_chunks": 100})
    write_run_json(folder, {"n_chunks": 100, "stages": {"retrieve": {}}, "label": label_facts({"retriever": retriever})})
    (folder / ".hydra").mkdir()
    (folder / ".hydra" / "config.yaml").write_text(yaml.safe_dump({"retriever": retriever}))
    seal(folder)
    return folder


def changed(down: int, up: int) -> np.ndarray:
    """The baseline with ``down`` of its answered questions lost and ``up`` of its missed ones gained."""
    rr = BASE.copy()
    rr[:down] = 0
    rr[30:30 + up] = 1
    return rr


RR = {
    "base": BASE,
    "same": BASE.copy(),  # another setting, every question alike
    "better": changed(0, 2),
    "worse": changed(12, 0),  # -0.3: a drop no sample of 40 explains
    "unclear": changed(3, 1),  # -0.05, reaching 0 and -0.02
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("gate")
    return {name: write_run(root / name, 1.2 + i / 10, rr) for i, (name, rr) in enumerate(RR.items())}


@pytest.mark.parametrize("name, margin, outcome", [
    ("same", 0.0, GateOutcome.passed),  # nothing changed: passes whatever the margin
    ("better", 0.1, GateOutcome.passed),  # the interval lies above -0.1
    ("worse", 0.1, GateOutcome.failed),  # shown below 0 and reaching -0.1
    ("worse", 0.0, GateOutcome.failed),
    ("unclear", 0.02, GateOutcome.undecided),  # reaches both 0 and -0.02
    ("unclear", 0.0, GateOutcome.undecided),
])
def test_the_gate_reads_pass_fail_or_undecided_off_the_paired_interval(runs, capsys, name, margin, outcome):
    found = analysis.gate(runs[name], runs["base"], margin=margin)
    assert found.outcome is outcome and found.exit_code == outcome.exit_code
    assert found.passed is (outcome is GateOutcome.passed)
    assert found.unchanged is (name == "same") and found.n_questions == N
    assert found.diff.mean == pytest.approx(np.mean(RR[name] - BASE))
    code = exit_code(report.main, [runs[name], "--gate", runs["base"], "--margin", margin])
    assert code == {"pass": 0, "fail": 1, "undecided": 3}[outcome.value]
    first = capsys.readouterr().out.splitlines()[0]
    assert first == found.line and first.startswith(f"gate {outcome.value.upper() if code else 'pass'} (exit {code}): ")
    assert f"margin {margin:g}: " in first


def test_the_line_says_why_in_the_rule_s_words(runs):
    worse = analysis.gate(runs["worse"], runs["base"], margin=0.1)
    assert worse.diff.mean == pytest.approx(-0.3) and (worse.up, worse.down, worse.same) == (0, 12, 28)
    assert worse.why == "shown worse: the whole interval lies below 0 and reaches -0.1, so it is not shown within the margin"
    assert "40 questions: 0 up, 12 down, 28 same" in worse.line
    unclear = analysis.gate(runs["unclear"], runs["base"], margin=0.02)
    assert unclear.why.startswith("not decided: the interval reaches both 0 and -0.02, so these 40 questions show neither")
    assert f"would pass at a margin above {-unclear.diff.lo:.3f}" in unclear.why
    # passing at that margin is what the sentence promises (an end on the margin shows nothing)
    assert analysis.gate(runs["unclear"], runs["base"], margin=-unclear.diff.lo + 1e-9).passed
    assert not analysis.gate(runs["unclear"], runs["base"], margin=-unclear.diff.lo).passed
    assert analysis.gate(runs["same"], runs["base"]).why == "no question scored differently on MRR"
    assert analysis.gate(runs["better"], runs["base"], margin=0.1).why == (
        "shown not worse by more than the margin: the whole interval lies above -0.1")
    record = unclear.to_dict()
    assert (record["outcome"], record["exit_code"], record["passed"]) == ("undecided", 3, False)
    assert record["ci"] == [unclear.diff.lo, unclear.diff.hi] and record["line"] == unclear.line


@pytest.mark.parametrize("name, margin, floor, code", [
    ("same", 0.0, "rr=0.5", 0),  # passed, above the floor
    ("same", 0.0, "rr=0.9", 1),  # passed, under the floor: the floor fails the command
    ("unclear", 0.02, "rr=0.5", 3),  # undecided, above the floor
    ("unclear", 0.02, "rr=0.9", 1),  # undecided and under the floor: the failure wins
    ("worse", 0.1, "rr=0.1", 1),
])
def test_the_exit_status_of_a_gate_with_a_floor(runs, capsys, name, margin, floor, code):
    argv = [runs[name], "--gate", runs["base"], "--margin", margin, "--fail-under", floor, "--n-resamples", "200"]
    assert exit_code(report.main, argv) == code
    assert ("receval: fail-under: " in capsys.readouterr().err) is (floor == "rr=0.9")


def test_the_gate_keeps_to_the_questions_asked_for(runs, capsys):
    """``--where`` narrows both runs alike: over all 40 questions the worse run's drop
    (-0.3, reaching about -0.45) passes at margin 0.5; over q05 alone, which it lost, the
    drop is 1, but one question cannot show anything: undecided, and no margin passes it."""
    argv = [runs["worse"], "--gate", runs["base"], "--margin", "0.5", "--n-resamples", "200"]
    assert exit_code(report.main, argv) == 0
    assert exit_code(report.main, [*argv, "--where", "question_id=q05"]) == 3
    line = capsys.readouterr().out.split("gate UNDECIDED", 1)[1].splitlines()[0]
    assert "diff -1.000 [-inf, +inf]" in line and "95% paired CI, 1 question: 0 up, 1 down, 0 same)" in line
    assert line.endswith("decide it (no margin would pass this interval)")
    found = analysis.gate(runs["worse"], runs["base"], margin=0.5, where={"question_id": "q05"})
    assert found.n_questions == 1 and found.diff.mean == -1.0 and found.outcome is GateOutcome.undecided


def gate_of(metric: str, lo: float, hi: float, margin: float, up: int = 1, down: int = 1) -> Gate:
    test = PairedTest(20, (lo + hi) / 2, lo, hi, 0.5, 0.95, "exact", 4096, up + down)
    return Gate(run="new", baseline="old", metric=metric, margin=margin, n_questions=20, mean_run=0.5,
                mean_baseline=0.5, test=test, level=0.95, up=up, down=down, same=18)


def test_fewer_context_tokens_is_better_so_a_rise_is_the_drop():
    rise = gate_of("context_tokens@3", 5.0, 12.0, margin=2.0)  # more tokens sent: worse
    assert rise.outcome is GateOutcome.failed and not rise.higher_is_better
    assert rise.why == "shown worse: the whole interval lies above 0 and reaches +2, so it is not shown within the margin"
    fall = gate_of("context_tokens@3", -12.0, 1.5, margin=2.0)  # fewer tokens, up to 1.5 more: within 2
    assert fall.outcome is GateOutcome.passed and fall.why.endswith("the whole interval lies below +2")
    assert gate_of("context_tokens@3", -1.0, 3.0, margin=2.0).outcome is GateOutcome.undecided
    assert gate_of("rr", -1.0, 3.0, margin=2.0).outcome is GateOutcome.passed  # the same numbers, the other way
    assert gate_of("rr", 0.0, 0.0, 0.0, up=0, down=0).outcome is GateOutcome.passed  # unchanged


# ----------------------------------------------------------------- every format, every output


def _verdict_in(fmt: str, text: str, gate_line: str) -> bool:
    """Whether ``text`` (a report in ``fmt``) carries the gate's verdict, read as that format reads."""
    if fmt == "json":
        return json.loads(text)["gate"]["line"] == gate_line
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(text)))
        return bool(rows) and all(row["gate_outcome"] == "fail" and row["gate_exit_code"] == "1" for row in rows)
    return gate_line in text.replace("&#x27;", "'")


def _parsed(fmt: str, text: str) -> None:
    """``text`` reads as ``fmt``: JSON parses, CSV has a header and rows, LaTeX has a
    tabular, HTML is a page, Markdown a pipe table, the table a rule under its header."""
    if fmt == "json":
        assert isinstance(json.loads(text)["runs"], list)
    elif fmt == "csv":
        rows = list(csv.reader(io.StringIO(text)))
        assert rows[0][:3] == ["run", "label", "run_dir"] and len(rows) >= 3
    elif fmt == "latex":
        assert "\\begin{tabular}" in text and "\\bottomrule" in text
    elif fmt == "html":
        assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    elif fmt == "markdown":
        assert "\n|---:|" in text
    else:
        assert "─" in text and "MRR 95% CI" in text


COMBINATIONS = list(itertools.product(("table", "markdown", "csv", "json", "latex", "html"), (False, True),
                                      (False, True), (False, True), (False, True)))


@pytest.mark.parametrize("fmt, out, gated, floor, baseline", COMBINATIONS,
                         ids=["-".join([f, *(n for n, on in zip(("out", "gate", "floor", "baseline"), rest) if on)])
                              for f, *rest in COMBINATIONS])
def test_every_format_and_output_writes_what_it_names(runs, tmp_path, capsys, fmt, out, gated, floor, baseline):
    """``report`` in each format, to stdout or to ``--out``, with and without ``--gate``,
    ``--fail-under`` (a floor the worse run is under) and ``--baseline``: the output
    reads as its format, the file is written (and nothing else goes to stdout), the
    verdict is in it with ``--gate``, and the exit status is the gate's or the floor's."""
    argv = [runs["worse"]] + (["--gate", runs["base"], "--margin", "0.1"] if gated else [runs["base"]])
    argv += ["--n-resamples", "200"]
    argv += ["--fail-under", "rr=0.6"] if floor else []  # the worse run's MRR is 0.45
    argv += ["--baseline", runs["base"]] if baseline else []
    target = tmp_path / f"report.{fmt}"
    argv += ["--format", fmt] + (["--out", target] if out else [])
    code = exit_code(report.main, argv)
    stdout, stderr = capsys.readouterr()
    assert code == (1 if gated or floor else 0), stderr
    if out:
        assert stdout == "" and target.is_file() and f"receval: wrote {target}" in stderr
        text = target.read_text(encoding="utf-8")
    else:
        assert not target.exists()
        text = stdout
    _parsed(fmt, text)
    if gated:
        line = analysis.gate(runs["worse"], runs["base"], margin=0.1, n_resamples=200).line
        assert _verdict_in(fmt, text, line), text[:500]
        assert (f"receval: {line}" in stderr) is (out or fmt in ("json", "csv"))  # the CI log shows it
    else:
        assert "gate" not in text.split("\n", 1)[0]
    if floor:
        assert "receval: fail-under: " in stderr
    if baseline or gated:  # the worse run paired with the base run: -0.3
        if fmt == "json":
            assert json.loads(text)["pairs"][0]["diff"] == pytest.approx(-0.3)
        elif fmt == "csv":
            assert sorted(row["diff_rr"] for row in csv.DictReader(io.StringIO(text))) == ["", "-0.3"]
        else:
            assert "-0.300" in text


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json", "latex"])
def test_show_writes_each_format_with_the_verdict(runs, tmp_path, capsys, fmt):
    target = tmp_path / f"show.{fmt}"
    argv = [runs["unclear"], "--gate", runs["base"], "--margin", "0.02", "--show", "q00,q30", "--top", "1",
            "--n-resamples", "200", "--format", fmt, "--out", target]
    assert exit_code(report.main, argv) == 3
    capsys.readouterr()
    text = target.read_text()
    line = analysis.gate(runs["unclear"], runs["base"], margin=0.02, n_resamples=200).line
    if fmt == "json":
        data = json.loads(text)
        assert data["gate"]["outcome"] == "undecided" and [v["question_id"] for v in data["shown"]] == ["q00", "q30"]
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(text)))
        assert [(r["question_id"], r["rank"], r["id"]) for r in rows] == [
            ("q00", "1", "s1"), ("q00", "1", "s2"), ("q30", "1", "s2"), ("q30", "1", "s1")]
        assert {r["gate_outcome"] for r in rows} == {"undecided"}
    else:
        assert line in text
        assert ("```text\nq00" in text) is (fmt == "markdown") and ("\\begin{tabular}" in text) is (fmt == "latex")


# ----------------------------------------------------------------- the CI recipe, end to end

RECIPE = Path(__file__).resolve().parents[1] / "docs" / "pages" / "how-to" / "ci-gate.md"


def _recipe() -> tuple[dict, list[str]]:
    """The recipe's workflow (its YAML block, parsed) and its shell block's commands."""
    text = RECIPE.read_text(encoding="utf-8")
    workflow = yaml.safe_load(re.search(r"^```yaml\n(.*?)^```$", text, re.S | re.M).group(1))
    steps = [step.command for block in blocks(text) for step in block.steps]
    return workflow, steps


@pytest.mark.slow
def test_the_ci_recipe_gates_a_shown_regression_and_passes_an_identical_run(tmp_path):
    """In a scratch folder, the runs made by the recipe's commands, then the workflow's
    gate step run as written (bash, ``$GITHUB_OUTPUT`` a file): TF-IDF without headings
    against TF-IDF with them fails at the recipe's margin (exit 1), ``report.md`` is
    written and opens with the verdict; the same configuration run again passes (exit 0)."""
    workflow, commands = _recipe()
    steps = {step.get("id") or step.get("name"): step for step in workflow["jobs"]["gate"]["steps"]}
    run_new = steps["Run the configuration of this pull request"]["run"]
    gate_step = steps["gate"]["run"]
    assert "--margin 0.1 " in gate_step and "--out report.md" in gate_step
    baseline, new = commands[:2]  # the shell block: the recipe's run command plus each side's overrides
    assert new.startswith(run_new + " ") and baseline.startswith(run_new.replace("ci/new", "ci/baseline") + " ")
    env = environment(tmp_path)

    def bash(script: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)

    def gate() -> tuple[str, str]:
        output = tmp_path / "github_output"
        output.write_text("")
        done = bash(f'export GITHUB_OUTPUT="{output}"\n{gate_step}')
        assert done.returncode == 0, done.stderr  # set +e: the step itself ends well, its status is recorded
        return output.read_text(), done.stderr

    for command in (baseline, new):
        assert bash(command).returncode == 0
    status, log = gate()
    assert status == "status=1\n", log
    report_md = (tmp_path / "report.md").read_text()
    first = report_md.splitlines()[0]
    assert first.startswith("**gate FAIL (exit 1): MRR 0.506 vs baseline 0.685, diff -0.178") and "margin 0.1:" in first
    assert first.strip("*") in log  # the CI log says the same
    assert "| 1 | false | 0.506 | -0.178 |" in report_md  # the paired table of the two runs follows

    shutil.rmtree(tmp_path / "ci" / "new")
    (tmp_path / "report.md").unlink()
    assert bash(baseline.replace("ci/baseline", "ci/new")).returncode == 0  # the baseline's configuration again
    status, log = gate()
    assert status == "status=0\n", log
    assert (tmp_path / "report.md").read_text().startswith(
        "**gate pass (exit 0): MRR 0.685 vs baseline 0.685, diff +0.000 [+0.000, +0.000]")
