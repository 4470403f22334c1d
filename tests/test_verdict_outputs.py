"""Every output that shows a pair shows an interval and a p-value that agree, and the verdict
they both give: report (table, Markdown, JSON, CSV) against --baseline and along --chain,
and compare; on hit@1 differences, where an interval's end sits exactly on 0."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from receval.analysis.comparison import compare
from receval.cli.report import report_for
from receval.render import compare as rendered_compare
from receval.render import report as rendered
from receval.results.manifest import seal
from receval.results.write import write_results, write_run_json

N = 12


def stored(folder: Path, name: str, hits: list[int]) -> Path:
    """A stored run over N questions whose hit@1 (and rr) are ``hits``."""
    folder.mkdir(parents=True)
    hit = [float(h) for h in hits]
    columns = {
        "question_id": [f"q{i:02d}" for i in range(N)], "kind": ["direct"] * N, "split": ["dev"] * N,
        "question": [f"question {i}" for i in range(N)], "relevant": [["s1"]] * N, "grades": [[1]] * N,
        "retrieved": [["s1"] if h else ["s2"] for h in hit], "scores": [[1.0]] * N,
        "first_relevant_rank": [1 if h else None for h in hit], "rr": hit, "hit@1": hit, "latency_ms": [1.0] * N,
    }
    write_results(folder, columns, ["rr", "hit@1"], {"n_chunks": 10})
    write_run_json(folder, {"n_chunks": 10, "stages": {}})
    (folder / ".hydra").mkdir()
    (folder / ".hydra" / "config.yaml").write_text(yaml.safe_dump({"retriever": {"kind": name}}))
    seal(folder)
    return folder


@pytest.fixture
def sweep(tmp_path) -> Path:
    base = [0] * 6 + [1] * 6
    root = tmp_path / "s"
    stored(root / "0", "base", base)
    stored(root / "1", "five_up", [1] * 5 + [0] + [1] * 6)  # five questions up, none down: better
    stored(root / "2", "four_up", [1] * 4 + [0, 0] + [1] * 6)  # four up: too few to show anything
    stored(root / "3", "five_down", [0] * 6 + [0] * 5 + [1])  # five down: worse
    stored(root / "4", "mixed", [1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0])
    return root


def agrees(pair: dict, alpha: float = 0.05) -> bool:
    """The JSON interval excludes 0 (an open end on 0 excludes it) exactly when p <= alpha."""
    (lo, hi), (lo_open, hi_open) = pair["ci"], pair["ci_open"]
    excludes = lo > 0 or hi < 0 or (lo == 0 and lo_open) or (hi == 0 and hi_open)
    p = pair["p_adjusted"] if pair["p_adjusted"] is not None else pair["p"]
    return excludes == (p <= alpha) == (pair["verdict"] != "not shown")


@pytest.mark.parametrize("correct", [[], ["--correct", "holm"], ["--correct", "bh"]])
def test_every_pair_of_the_report_agrees_with_itself(sweep, correct):
    report = report_for([str(sweep), "--metric", "hit@1", "--baseline", "retriever=base", "--chain", *correct])
    data = json.loads(rendered.render(report, "json"))
    pairs = data["pairs"] + data["chain"]
    assert len(pairs) == 8 and all(agrees(p) for p in pairs)
    verdicts = {Path(p["run_dir"]).name: p["verdict"] for p in data["pairs"]}
    if not correct:
        assert verdicts == {"1": "better", "2": "not shown", "3": "worse", "4": "not shown"}
    rows = list(csv.DictReader(io.StringIO(rendered.render(report, "csv"))))
    assert [r["verdict"] for r in rows[1:]] == [p["verdict"] for p in data["pairs"]]


def test_an_end_on_zero_is_shown_open_and_few_changed_questions_are_named(sweep):
    report = report_for([str(sweep), "--metric", "hit@1", "--baseline", "retriever=base"])
    text = rendered.render(report, "markdown")
    rows = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| ")}
    assert "(+0.000, +0.750]" in rows["1"] and "better" in rows["1"] and "0.031" in rows["1"]
    assert "[-0.750, +0.000)" in rows["3"] and "worse" in rows["3"]
    assert "[+0.000," in rows["2"] and "not shown" in rows["2"] and "0.062" in rows["2"]
    assert "changed questions too few to show any difference at 95% (fewer than 5): #2 4" in text
    assert "( or ): an open end: 0 itself is rejected" in text
    assert "paired: sign-flip randomization test (mid-p)" in text


def test_compare_agrees_with_itself_and_with_the_report(sweep):
    for name in ("1", "2", "3", "4"):
        comparison = compare(sweep / "0", sweep / name, metric="hit@1")
        data = json.loads(rendered_compare.render(comparison, "json"))
        assert agrees(data)
        table = rendered_compare.render(comparison, "table")
        assert data["verdict"] in table
        report = report_for([str(sweep / "0"), str(sweep / name), "--metric", "hit@1", "--baseline", str(sweep / "0")])
        (pair,) = json.loads(rendered.render(report, "json"))["pairs"]
        assert (pair["p"], pair["ci"], pair["verdict"]) == (data["p"], data["ci"], data["verdict"])


def test_a_rerun_gives_the_same_verdicts(sweep):
    argv = [str(sweep), "--metric", "rr", "--baseline", "retriever=base", "--n-resamples", "999"]
    first = json.loads(rendered.render(report_for(argv), "json"))["pairs"]
    assert json.loads(rendered.render(report_for(argv), "json"))["pairs"] == first
    assert np.isfinite([p["p"] for p in first]).all()


def test_the_effect_size_interval_is_the_verdict_s_interval_in_its_units(sweep):
    """g_z's interval is the paired procedure's interval over sd / J: it leaves out 0
    exactly when the verdict is better or worse (four up and none down: p 0.062, not
    shown, where the noncentral t's interval of g_z left 0 out)."""
    from receval.results.door import open_run
    from receval.stats.effects import hedges_correction

    report = report_for([str(sweep), "--metric", "hit@1", "--baseline", "retriever=base", "--effects"])
    pairs = json.loads(rendered.render(report, "json"))["pairs"]
    base = open_run(sweep / "0").values("hit@1")
    for pair in pairs:
        d = open_run(Path(pair["run_dir"])).values("hit@1") - base
        j_over_sd = hedges_correction(N - 1) / np.std(d, ddof=1)
        lo, hi = pair["effect"]["ci"]
        assert [lo, hi] == pytest.approx([pair["ci"][0] * j_over_sd, pair["ci"][1] * j_over_sd])
        open_lo, open_hi = pair["ci_open"]
        excludes = lo > 0 or hi < 0 or (lo == 0 and open_lo) or (hi == 0 and open_hi)
        assert excludes == (pair["verdict"] != "not shown")
    four_up = next(p for p in pairs if p["run_dir"].endswith("/2"))
    assert four_up["verdict"] == "not shown" and four_up["effect"]["ci"][0] == 0.0


@pytest.mark.parametrize(("p", "level", "shown"), [
    (0.0496, 0.95, "0.0496"), (0.0504, 0.95, "0.0504"), (0.0512, 0.95, "0.051"), (0.0004, 0.95, "<0.001"),
    (0.0996, 0.90, "0.0996"), (0.0496, 0.90, "0.050"),
])
def test_a_p_value_never_prints_as_alpha_itself(p, level, shown):
    """Three decimals, or four where three would print alpha: "0.050" could sit beside
    either verdict at 95%."""
    from receval.render.verdicts import p_value

    assert p_value(p, level) == shown


def test_the_paired_header_states_the_verdict_s_margin(sweep):
    report = report_for([str(sweep), "--metric", "hit@1", "--baseline", "retriever=base"])
    assert "better or worse when the interval leaves out 0 (margin 0), else not shown" in rendered.render(report, "table")
    table = rendered_compare.render(compare(sweep / "0", sweep / "1", metric="hit@1"), "table")
    assert "(margin 0)" in table
