"""receval select: a cheaper run is chosen only when shown not worse (Holm-corrected
non-inferiority at a stated margin), costs and ties, outputs; on stored runs made here and
on real sweeps."""

import json
import math
import os
import shlex
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import exit_code, one_error_line, run_cli, run_of, sweep_of

from receval.analysis import choice, costs
from receval.stats import noninferiority
from receval.stats.paired import shift_nulls
from receval.analysis.costs import latencies
from receval.stats.cheaper import DRIFT_SD, CostOrder, cost_order
from receval.core.errors import RecevalError
from receval.stats.holm import holm
from receval.results.manifest import seal
from receval.results.write import write_results, write_run_json
from receval.render import choice_plot
from receval.cli.reproduce import compare_tables
from receval.results import load_runs
from receval.results.stored import Run
from receval.results.labels import run_labels
from receval.run.config import BootstrapConfig
from receval.render.select import render as render_selection
from receval.cli.select import main, select
from receval.datasets import LIBRARY
from receval.results.configs import anchor_paths, workdir_of

# retriever x chunk size with headings off: only then is a tiny chunk clearly worse on the
# 25 dev questions (with headings on, every chunk carries its section's title and even
# 5-word chunks are not distinguishable from the best)
GRID = ("retriever=bm25,tfidf", "chunking.max_words=3,40,120", "chunking.headings=false")


@pytest.fixture(scope="module")
def grid(tmp_path_factory) -> Path:
    return sweep_of(tmp_path_factory, *GRID)


def as_json(capsys, *argv) -> dict:
    assert main([*map(str, argv), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


# ----------------------------------------------------------------- Holm


def test_holm_worked_example():
    # sorted p: 0.005 <= .05/4 reject; 0.01 <= .05/3 reject; 0.03 > .05/2 stop; 0.04 kept
    steps = holm([0.01, 0.04, 0.03, 0.005], 0.05)
    assert [s.rejected for s in steps] == [True, False, False, True]
    assert [s.alpha for s in steps] == pytest.approx([0.05 / 3, 0.025, 0.025, 0.0125])


def test_holm_stops_at_the_first_kept_even_if_a_later_p_would_pass_alone():
    # 0.03 > .05/2 stops the procedure; 0.04 <= .05 alone but Holm keeps it
    steps = holm([0.04, 0.03], 0.05)
    assert [s.rejected for s in steps] == [False, False]
    assert holm([0.025, 0.05], 0.05)[1].rejected  # boundary: p == alpha / (m - i) rejects


def test_verdicts_read_as_their_intervals_and_holm_levels():
    rng = np.random.default_rng(1)
    diffs = np.column_stack([rng.normal(-0.3, 0.5, 60), rng.normal(0.0, 0.5, 60), rng.normal(-0.1, 0.5, 60)])
    boot = BootstrapConfig()
    verdicts = noninferiority.verdicts(diffs, 0.35, boot)
    for v, column in zip(verdicts, diffs.T):
        assert v.diff.mean == pytest.approx(column.mean())
        assert v.qualifies == (v.diff.lo > -0.35)  # every shown interval reads as its verdict
        assert v.qualifies == (0.35 > v.margin_needed)
    assert [v.qualifies for v in verdicts] == [False, True, True]
    # the clearest (mean -0.03) is tested first at 1 - .05/3, the next (-0.16) at
    # 1 - .05/2; the one left (-0.32, after the stop) at the stop's level 1 - .05
    assert [v.level for v in verdicts] == pytest.approx([1 - 0.05, 1 - 0.05 / 3, 1 - 0.05 / 2])
    # no margin: nothing qualifies or fails, each at the level it would qualify at
    bare = noninferiority.verdicts(diffs, None, boot)
    assert [v.qualifies for v in bare] == [None, None, None]
    assert [v.margin_needed for v in bare] == [v.margin_needed for v in verdicts]


def _holm_qualifies(diffs: np.ndarray, margin: float, alpha: float, boot: BootstrapConfig) -> list[bool]:
    """Holm over each run's p-value of "worse by margin or more", written out as the
    definition says: the paired procedure's mid-p at -margin, on the run's side of it."""
    nulls = shift_nulls(diffs, boot.n_resamples, boot.seed)
    p_values = [null.p_at(-margin) if null.mean > -margin else 1.0 for null in nulls]
    return [s.rejected for s in holm(p_values, alpha)]


@pytest.mark.parametrize("n", [10, 24, 60])
def test_smallest_margin_is_exact(n):
    """Just above margin_needed a run qualifies; on a fine grid below, it does not;
    found against the definition on a scan (exact and sampled nulls)."""
    rng = np.random.default_rng(5)
    diffs = np.column_stack([rng.integers(-1, 1, n), rng.integers(-1, 2, n), rng.normal(-0.1, 0.3, n)]).astype(float)
    boot = BootstrapConfig(n_resamples=500)
    verdicts = noninferiority.verdicts(diffs, None, boot)
    for j, v in enumerate(verdicts):
        needed = v.margin_needed
        assert needed >= 0
        above = needed + 1e-9
        assert _holm_qualifies(diffs, above, 0.05, boot)[j]
        assert noninferiority.verdicts(diffs, above, boot)[j].qualifies
        for margin in np.linspace(0, needed, 200)[:-1] if needed > 0 else []:
            assert not _holm_qualifies(diffs, margin, 0.05, boot)[j], (j, margin)
        # the interval shown is the one it qualifies with: its lower end is at or above -needed
        assert v.diff.lo >= -needed - 1e-12


def test_questions_needed_only_when_it_does_not_qualify():
    rng = np.random.default_rng(2)
    diffs = np.column_stack([rng.normal(-0.02, 0.3, 40), rng.normal(-0.3, 0.3, 40)])
    small, large = noninferiority.verdicts(diffs, 0.05, BootstrapConfig())
    assert small.qualifies is False and large.qualifies is False
    from receval.stats.power import non_inferiority_questions

    assert small.questions_needed == non_inferiority_questions(diffs[:, 0], 0.05, 0.05 / 4) > 40
    assert large.questions_needed is None  # its mean is below -margin: never
    assert noninferiority.verdicts(diffs, 0.5, BootstrapConfig())[0].questions_needed is None  # qualifies


# ----------------------------------------------------------------- stored runs made here

DEV, TEST = 24, 6


def stored(folder: Path, name: str, hits: list[int], latency_ms, chunks: int = 99, stages: int = 2,
           cost=None) -> Path:
    """A stored run: ``hits`` (hit@3 and rr) on the DEV questions, then TEST questions all
    hit; per-question ``latency_ms``; its config names the retriever ``name``."""
    folder.mkdir(parents=True)
    n = DEV + TEST
    hit = [float(h) for h in hits] + [1.0] * TEST
    latency = np.broadcast_to(np.asarray(latency_ms, dtype=float), (n,)).tolist()
    columns = {
        "question_id": [f"q{i:02d}" for i in range(n)], "kind": ["direct"] * n,
        "split": ["dev"] * DEV + ["test"] * TEST, "question": [f"question {i}" for i in range(n)],
        "relevant": [["s1"]] * n, "grades": [[1]] * n, "retrieved": [["s1"] if h else ["s2"] for h in hit],
        "scores": [[1.0]] * n, "first_relevant_rank": [1 if h else None for h in hit],
        "rr": hit, "hit@3": hit, "latency_ms": latency,
    }
    extra = []
    if cost is not None:
        columns["cost_usd"] = [cost] * n
        extra = ["cost_usd"]
    write_results(folder, columns, ["rr", "hit@3"], {"n_chunks": chunks}, extra=extra)
    if np.isnan(latency).all():  # none recorded (as an imported run): no column, never NaN
        path = folder / "results.parquet"
        table = pq.read_table(path)
        pq.write_table(table.drop_columns(["latency_ms"]), path)
    write_run_json(folder, {"n_chunks": chunks, "stages": {f"stage{k}": {} for k in range(stages)}})
    (folder / ".hydra").mkdir()
    (folder / ".hydra" / "config.yaml").write_text(yaml.safe_dump({"retriever": {"kind": name}}))
    seal(folder)  # written last, as a run writes it
    return folder


def spread(centre_ms: float, seed: int) -> np.ndarray:
    """Per-question latencies around ``centre_ms`` with a 10% spread."""
    return centre_ms * np.random.default_rng(seed).lognormal(0.0, 0.1, DEV + TEST)


@pytest.fixture
def stages_like(tmp_path) -> Path:
    """The built-in stages sweep as it came out (hit@3 on 24 dev questions): bm25 misses
    4 questions more than dense, at a 60th of its latency; hybrid and re-rank equal dense."""
    dense = [1] * 23 + [0]
    bm25 = [1, 0, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0]
    sweep = tmp_path / "sweep"
    stored(sweep / "0", "bm25", bm25, spread(0.31, 0))
    stored(sweep / "1", "dense", dense, spread(18.7, 1))
    stored(sweep / "2", "hybrid", dense, spread(22.2, 2), stages=4)
    stored(sweep / "3", "hybrid_rerank", dense, spread(31.0, 3), stages=5)
    return sweep


def test_a_cheaper_run_not_shown_not_worse_is_not_chosen(stages_like, capsys):
    got = as_json(capsys, stages_like, "--metric", "hit@3")
    assert got["margin"] is None and got["leader"] == 1 and got["chosen"] == 1
    bm25, dense, hybrid, rerank = got["runs"]
    assert bm25["diff"] == pytest.approx(-4 / 24)
    assert (bm25["status"], bm25["cheaper"], bm25["qualifies"], bm25["contender"]) == ("cheaper", True, None, False)
    assert bm25["margin_needed"] == pytest.approx(-bm25["diff_ci"][0]) and bm25["level"] == 0.95
    assert [r["status"] for r in (hybrid, rerank)] == ["not cheaper", "not cheaper"]
    assert "(not shown worse)" not in json.dumps(got)


def test_a_margin_above_the_smallest_qualifying_one_chooses_the_cheaper_run(stages_like, capsys):
    needed = as_json(capsys, stages_like, "--metric", "hit@3")["runs"][0]["margin_needed"]
    assert 0.2 < needed < 0.4
    at = as_json(capsys, stages_like, "--metric", "hit@3", "--margin", needed)
    assert at["chosen"] == 1 and at["runs"][0]["qualifies"] is False
    above = needed + 0.001
    got = as_json(capsys, stages_like, "--metric", "hit@3", "--margin", above)
    assert got["chosen"] == 0 and got["runs"][0]["qualifies"] is True and got["runs"][0]["contender"]
    assert main([str(stages_like), "--metric", "hit@3", "--margin", str(above)]) == 0
    text = capsys.readouterr().out
    assert f"margin: {above:g} (hit@3 units, --margin)" in text
    assert f"chosen: #0 bm25 -- shown not worse than the leader #1 at margin {above:g}" in text


def test_the_printout_states_the_rule_the_margin_and_the_questions_needed(stages_like, capsys):
    assert main([str(stages_like), "--metric", "hit@3"]) == 0
    text = capsys.readouterr().out
    assert "rule: a run cheaper than the leader by p50_ms is a contender only when shown not worse" in text
    assert "margin: none given" in text and "margin >" in text
    row = next(line for line in text.splitlines() if line.startswith("#0"))
    needed = as_json(capsys, stages_like, "--metric", "hit@3")["runs"][0]["margin_needed"]
    assert f"{needed:.3f}" in row and "cheaper" in row
    # a margin too small: no cheaper run qualifies; how many questions would show it
    got = as_json(capsys, stages_like, "--metric", "hit@3", "--margin", "0.25")
    bm25 = got["runs"][0]
    assert got["chosen"] == 1 and bm25["qualifies"] is False
    from receval.stats.power import non_inferiority_questions

    dev = lambda run: run.values("hit@3")[:DEV]  # noqa: E731
    runs = load_runs([stages_like / "0", stages_like / "1"])
    assert bm25["questions_needed"] == non_inferiority_questions(dev(runs[0]) - dev(runs[1]), 0.25, 0.025) > DEV
    assert main([str(stages_like), "--metric", "hit@3", "--margin", "0.25"]) == 0
    text = capsys.readouterr().out
    assert "no cheaper run is shown not worse at margin 0.25. Questions needed" in text
    assert f"#0 {bm25['questions_needed']}" in text and "power 0.8" in text


def test_csv_and_markdown_carry_the_new_fields(stages_like, capsys):
    assert main([str(stages_like), "--metric", "hit@3", "--margin", "0.25", "--format", "csv"]) == 0
    header, first, *_ = capsys.readouterr().out.splitlines()
    for name in ("margin", "qualifies", "margin_needed", "questions_needed", "status"):
        assert name in header.split(",")
    row = dict(zip(header.split(","), first.split(",")))
    assert row["margin"] == "0.25" and row["qualifies"] in ("False", "false") and int(row["questions_needed"]) > DEV
    assert main([str(stages_like), "--metric", "hit@3", "--margin", "0.25", "--format", "markdown"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "| margin > | questions |" in next(line for line in lines if line.startswith("| # |"))
    assert "no cheaper run is shown not worse at margin 0.25" in "\n".join(lines)
    bm25_row = next(line for line in lines if line.startswith("| #0 |"))
    assert f"| {row['questions_needed']} | out |" in bm25_row


def test_a_single_run_is_chosen_with_nothing_to_compare(stages_like, capsys):
    got = as_json(capsys, stages_like / "2", "--metric", "hit@3")
    assert got["chosen"] == got["leader"] == 0 and got["why"] == "the only run: nothing to compare it with"
    alone = run_labels(load_runs([stages_like / "2"]))[0]  # one run alone is described, never "2:"
    assert got["runs"][0]["label"] == alone and "null" not in alone and alone != "2"
    narrowed = as_json(capsys, stages_like, "--metric", "hit@3", "--runs", "retriever=bm25")
    assert len(narrowed["runs"]) == 1 and narrowed["runs"][0]["run_dir"] == str(stages_like / "0")
    assert main([str(stages_like), "--metric", "hit@3", "--runs", "retriever=bm25"]) == 0
    text = capsys.readouterr().out
    named = run_labels(load_runs([stages_like / "0"]))[0]
    assert "1 run: nothing to compare it with" in text and f"chosen: #0 {named} " in text


@pytest.mark.dense
def test_on_the_built_in_stages_sweep_bm25_is_chosen_only_with_a_margin(tmp_path_factory, capsys):
    """The issue's case: ``+experiment=stages``, ``select --split dev --metric hit@3``."""
    runs = [run_of(tmp_path_factory, f"+stage={stage}") for stage in ("keyword", "vector", "hybrid", "hybrid_rerank")]
    # the re-rank stage scores by another model than the hybrid's dense member: not the vector run again
    vector, reranked = (pq.read_table(run / "results.parquet").column("retrieved").to_pylist() for run in runs[1::2])
    assert sum(a != b for a, b in zip(vector, reranked)) >= 10
    got = as_json(capsys, *runs, "--split", "dev", "--metric", "hit@3")
    bm25 = got["runs"][0]
    assert [r["mean"] for r in got["runs"]] == pytest.approx([19 / 24, 23 / 24, 23 / 24, 22 / 24])
    assert got["leader"] == 1  # vector; the hybrid ties it at more cost, and wordllama's re-rank loses one more
    assert got["chosen"] == got["leader"] != 0 and bm25["status"] == "cheaper"
    needed = bm25["margin_needed"]
    assert 4 / 24 < needed < 0.5
    assert main([*map(str, runs), "--split", "dev", "--metric", "hit@3"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("#0"))
    assert f"{needed:.3f}" in row  # the printout says at which margin bm25 would qualify
    above = round(needed + 0.01, 2)
    assert as_json(capsys, *runs, "--split", "dev", "--metric", "hit@3", "--margin", needed)["chosen"] != 0
    assert main([*map(str, runs), "--split", "dev", "--metric", "hit@3", "--margin", str(above)]) == 0
    text = capsys.readouterr().out
    assert f"chosen: #0 keyword -- shown not worse than the leader #{got['leader']} at margin {above:g}" in text


def test_a_single_run_without_latency_is_still_chosen(tmp_path, capsys):
    stored(tmp_path / "lone", "bm25", [1] * 24, np.nan)
    got = as_json(capsys, tmp_path / "lone", "--metric", "hit@3")
    assert got["chosen"] == 0 and got["runs"][0]["cost"] is None
    stored(tmp_path / "s" / "0", "bm25", [1] * 24, np.nan)
    stored(tmp_path / "s" / "1", "dense", [1] * 24, 5.0)
    assert exit_code(main, [tmp_path / "s", "--metric", "hit@3"]) == 2
    assert "has no p50_ms recorded; choose another of p50_ms, chunks, money" in one_error_line(capsys)


# ----------------------------------------------------------------- costs and ties


def test_latency_3_microseconds_apart_ties_and_the_higher_mean_wins(tmp_path, capsys):
    base = spread(10.0, 7)
    worse = [1] * 20 + [0] * 4
    better = [1] * 23 + [0]
    stored(tmp_path / "s" / "0", "lean", worse, base, chunks=50)
    stored(tmp_path / "s" / "1", "close", better, base + 0.003, chunks=50)
    stored(tmp_path / "s" / "2", "leader", [1] * 24, base + 15.0, chunks=50)
    runs = [r for r in (load_runs([tmp_path / "s"]))]
    dev = [r.filtered(r.table.slice(0, DEV)) for r in runs]
    order = cost_order([float(np.median(r.values("latency_ms"))) for r in dev], "p50_ms", BootstrapConfig(), latencies(dev))
    assert not order.cheaper(0, 1) and not order.cheaper(1, 0)  # 3 microseconds: a tie
    assert order.cheaper(0, 2) and order.cheaper(1, 2) and not order.cheaper(2, 0)  # 2.5 times: cheaper
    # 1.5 times (5 ms more) is within a run's drift between identical runs (DRIFT_SD): not shown
    lean = latencies(dev)[0]
    near = cost_order([float(np.median(lean)), float(np.median(lean)) + 5.0], "p50_ms", BootstrapConfig(),
                      [lean, lean + 5.0])
    assert not near.cheaper(0, 1) and near.drift == DRIFT_SD
    assert order.cheapest([0, 1], [0.8, 0.9, 1.0], [2, 2, 2]) == 1  # tied: the higher mean
    got = as_json(capsys, tmp_path / "s", "--metric", "hit@3", "--margin", "0.5")
    assert [r["qualifies"] for r in got["runs"]] == [True, True, None]
    assert got["chosen"] == 1 and "tied on cost with #0: the higher mean" in got["why"]


def test_exact_costs_tie_on_equality_then_stages_then_index():
    order = CostOrder("chunks", [99.0, 99.0, 99.0, 187.0], 0.95)
    assert not order.cheaper(0, 1) and order.cheaper(0, 3) and not order.cheaper(3, 0)
    assert order.cheapest([0, 1, 2, 3], [0.5, 0.6, 0.6, 0.9], [2, 4, 2, 2]) == 2  # mean, then stages
    assert order.cheapest([0, 1], [0.6, 0.6], [2, 2]) == 0  # then the smaller index


def test_equal_costs_are_never_cheaper_so_the_leader_stays(tmp_path, capsys):
    """Same chunks, stages and $0 (the issue's hybrid vs hybrid + re-rank by chunks)."""
    stored(tmp_path / "s" / "0", "a", [1] * 20 + [0] * 4, 1.0)
    stored(tmp_path / "s" / "1", "b", [1] * 24, 1.0)
    got = as_json(capsys, tmp_path / "s", "--metric", "hit@3", "--prefer", "chunks", "--margin", "0.9")
    assert got["chosen"] == 1 and got["runs"][0]["status"] == "not cheaper"
    assert "no run is cheaper than it by chunks" in got["why"]


def test_equal_best_means_lead_with_the_cheaper(tmp_path, capsys):
    stored(tmp_path / "s" / "0", "dear", [1] * 24, 1.0, chunks=200)
    stored(tmp_path / "s" / "1", "lean", [1] * 24, 1.0, chunks=100)
    got = as_json(capsys, tmp_path / "s", "--metric", "hit@3", "--prefer", "chunks")
    assert got["leader"] == got["chosen"] == 1


# ----------------------------------------------------------------- outputs


@pytest.mark.parametrize("flag, name", [("--out", "best.yaml"), ("--plot", "choice.png")])
@pytest.mark.slow
def test_outputs_follow_the_output_rules_before_any_work(stages_like, tmp_path, capsys, flag, name):
    existing = tmp_path / name
    existing.write_text("mine")
    # a missing run path would fail the work: the output check comes first
    assert exit_code(main, [tmp_path / "nosuch", flag, existing]) == 2
    assert f"{flag} {existing} already exists; pass --force" in one_error_line(capsys)
    assert existing.read_text() == "mine"
    assert exit_code(main, [stages_like, flag, stages_like / "0" / name]) == 2
    assert f"is inside {stages_like}, which this command reads" in one_error_line(capsys)
    assert exit_code(main, [stages_like / "1", flag, stages_like / "0" / name]) == 2
    assert "inside the stored run folder" in one_error_line(capsys)
    assert not (stages_like / "0" / name).exists()
    folder = tmp_path / ("dir.yaml" if flag == "--out" else "dir.png")
    folder.mkdir()
    assert exit_code(main, [stages_like, flag, folder]) == 2
    assert "is a directory; give the name of a file to write" in one_error_line(capsys)
    if flag == "--plot":
        pytest.importorskip("matplotlib")
    assert main([str(stages_like), "--metric", "hit@3", flag, str(existing), "--force"]) == 0
    assert existing.read_bytes() != b"mine"


def _overlaps(boxes) -> list[tuple[int, int]]:
    return [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes))
            if boxes[i].x0 < boxes[j].x1 and boxes[j].x0 < boxes[i].x1
            and boxes[i].y0 < boxes[j].y1 and boxes[j].y0 < boxes[i].y1]


@pytest.mark.parametrize("prefer", ["chunks", "p50_ms"])
@pytest.mark.slow
def test_plot_labels_do_not_overlap(tmp_path, prefer):
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(3)
    for i in range(12):  # twelve runs crowded at few costs and close means, two at one spot
        hits = (rng.random(24) < 0.7 + 0.02 * (i % 4)).astype(int).tolist()
        stored(tmp_path / "s" / str(i), f"r{i}", hits if i != 11 else prev, spread(5.0 + 0.1 * (i % 3), i),
               chunks=100 + 10 * (i % 3) if i != 11 else 100 + 10 * (10 % 3))
        prev = hits
    selection, _ = select([str(tmp_path / "s")], metric="hit@3", prefer=prefer, margin=0.3)
    labels = choice_plot.plot(selection, tmp_path / "choice.png")
    assert (tmp_path / "choice.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    renderer = labels[0].figure.canvas.get_renderer()
    boxes = [label.get_window_extent(renderer) for label in labels]
    assert _overlaps(boxes) == []
    texts = " ".join(label.get_text() for label in labels).split()
    assert sorted(texts) == sorted(f"#{i}" for i in range(12))  # every run named once
    if prefer == "chunks":
        assert any("#10 #11" in label.get_text() for label in labels)  # one spot, one label


def test_plot_and_pareto_front():
    assert choice_plot.pareto_front([1, 2, 3, 3, 4], [0.5, 0.4, 0.7, 0.6, 0.7]) == [0, 2]
    with pytest.raises(RecevalError, match=r"--plot x.gif: name a .png, .svg or .pdf file"):
        choice_plot.check_path("x.gif")


# ----------------------------------------------------------------- the pinned choice


@pytest.mark.slow
def test_grid_choice_is_pinned(grid, capsys):
    got = as_json(capsys, grid, "--split", "dev", "--prefer", "chunks")
    labels = [r["label"] for r in got["runs"]]
    assert labels[3] == "tfidf max_words=3"
    assert got["leader"] == 1 and got["chosen"] == 1  # bm25 at 40 words; no margin: the leader
    assert [r["status"] for r in got["runs"]] == [
        "not cheaper", "leader", "cheaper", "not cheaper", "not cheaper", "cheaper"]  # 99 < 187 chunks
    assert got["runs"][1]["mean"] == pytest.approx(0.6083, abs=5e-4)
    lean, tfidf = got["runs"][2], got["runs"][5]
    assert lean["diff"] == pytest.approx(-0.0084, abs=5e-4) and tfidf["diff"] == pytest.approx(-0.0885, abs=5e-4)
    # bm25 at 120 words qualifies first (Holm 1 - .05/2), then tfidf at 120 (1 - .05)
    assert lean["margin_needed"] == pytest.approx(0.1354, abs=5e-4) and lean["level"] == pytest.approx(0.975)
    assert tfidf["margin_needed"] == pytest.approx(0.2197, abs=5e-4) and tfidf["level"] == pytest.approx(0.95)
    assert "Holm (1979)" in got["correction"] and "2 runs cheaper" in got["correction"]


@pytest.mark.slow
def test_a_margin_admits_the_runs_shown_within_it(grid, capsys):
    got = as_json(capsys, grid, "--prefer", "chunks", "--margin", "0.15")
    assert [r["qualifies"] for r in got["runs"]] == [None, None, True, None, None, False]
    assert got["chosen"] == 2 and got["runs"][5]["questions_needed"] > 24
    both = as_json(capsys, grid, "--prefer", "chunks", "--margin", "0.25")
    assert both["runs"][5]["qualifies"] and both["chosen"] == 2  # tied at 99 chunks: the higher mean


@pytest.mark.slow
def test_table_marks_the_choice_and_says_holm(grid, capsys):
    assert main([str(grid), "--prefer", "chunks", "--margin", "0.15"]) == 0
    text = capsys.readouterr().out
    assert "Holm (1979) step-down over the 2 runs cheaper than the leader" in text
    chosen_rows = [line for line in text.splitlines() if line.rstrip().endswith("chosen")]
    assert len(chosen_rows) == 1 and chosen_rows[0].startswith("#2")
    assert "shown not worse than the leader #1 at margin 0.15" in text
    assert "cheapest of the 2 contenders by chunks (99)" in text


@pytest.mark.slow
def test_best_yaml_reruns_from_any_folder_to_identical_results(tmp_path):
    """A sweep over a dataset and a cache named by relative paths, select run where the
    sweep was made, best.yaml written elsewhere: the command select prints, run from a
    third folder, reproduces the chosen run's results (every column but the timings)."""
    work, elsewhere, other = tmp_path / "work", tmp_path / "elsewhere", tmp_path / "other"
    for folder in (elsewhere, other):
        folder.mkdir()
    shutil.copytree(LIBRARY, work / "data" / "library")
    done = run_cli("dataset=folder", "dataset.path=data/library", "cache_dir=cache", "chunking.max_words=40,120",
                   "hydra.sweep.dir=runs/s", "-m", cwd=work)
    assert done.returncode == 0, done.stderr
    out = elsewhere / "best.yaml"
    done = run_cli("select", "runs/s", "--prefer", "chunks", "--margin", "0.15", "--out", str(out), cwd=work)
    assert done.returncode == 0, done.stderr
    (printed,) = [line for line in done.stderr.splitlines() if "re-run it with:" in line]
    command = shlex.split(printed.split("re-run it with: ", 1)[1])
    assert command == ["receval", "-cp", str(elsewhere), "-cn", "best"]
    config = yaml.safe_load(out.read_text())
    assert config["dataset"]["path"] == str(work / "data" / "library")
    # where a run writes is receval's own (receval.results.identity.PLACE_KEYS), never what a stored run saved
    assert config["cache_dir"] == os.environ["RECEVAL_CACHE_DIR"] != str(work / "cache")
    assert 'receval -cp "$(pwd)" -cn best' in out.read_text()  # from the folder holding it: the same file
    done = run_cli(*command[1:], "hydra.run.dir=rerun", cwd=other)
    assert done.returncode == 0, done.stderr
    job = work / out.read_text().splitlines()[0].removeprefix("# Chosen by receval select: ")
    assert config["chunking"]["max_words"] == 120 and job.parent == work / "runs" / "s"
    found = compare_tables(pq.read_table(job / "results.parquet"), pq.read_table(other / "rerun" / "results.parquet"))
    assert found["differences"] == {} and not found["only_stored"] and not found["only_reproduced"]
    assert json.loads((job / "run.json").read_text())["workdir"] == str(work)
    assert not (other / "cache").exists() and (work / "cache").is_dir()  # receval's own cache, not one beside the rerun


def test_relative_paths_are_anchored_where_the_run_read_them(tmp_path):
    (tmp_path / "models" / "mini").mkdir(parents=True)
    config = {
        "dataset": {"path": "data/x", "questions": "/abs/q.jsonl", "name": "models"},
        "cache_dir": ".cache/receval", "tokenizer": {"subword": None},
        "retriever": {"kind": "fused", "members": ["tfidf", {"kind": "dense", "model": "models/mini"},
                                                   {"kind": "dense", "model": "all-MiniLM-L6-v2"}]},
        "rerank": {"kind": "http", "path": "rerank", "base_url": "http://h/v1", "model": "models/mini"},
        "name": "models/mini",
    }
    anchored, changed = anchor_paths(config, tmp_path)
    mini = str(tmp_path / "models" / "mini")
    assert changed == {"dataset.path": str(tmp_path / "data" / "x"), "cache_dir": str(tmp_path / ".cache" / "receval"),
                       "retriever.members.1.model": mini, "rerank.model": mini}
    assert anchored["retriever"]["members"][2]["model"] == "all-MiniLM-L6-v2"  # no such folder: a model's name
    assert anchored["rerank"]["path"] == "rerank" and anchored["name"] == "models/mini"  # not paths
    assert anchored["dataset"]["questions"] == "/abs/q.jsonl" and config["dataset"]["path"] == "data/x"  # a copy
    assert workdir_of({"workdir": "relative/dir"}) is None and workdir_of({}) is None
    assert workdir_of({"workdir": str(tmp_path)}) == tmp_path


@pytest.mark.slow
def test_report_on_test_scores_the_held_out_questions_once(grid):
    selection, best = select([str(grid)], prefer="chunks", margin=0.15, report_on="test")
    assert selection.chosen == 2
    table = pq.read_table(grid / "2" / "results.parquet").to_pydict()
    test = [rr for rr, split in zip(table["rr"], table["split"]) if split == "test" and rr is not None]
    dev = [rr for rr, split in zip(table["rr"], table["split"]) if split == "dev" and rr is not None]
    held = selection.held_out
    assert held["n_questions"] == len(test) == 23
    assert held["mean"] == pytest.approx(np.mean(test))
    assert held["overstated"] == pytest.approx(np.mean(dev) - np.mean(test))
    assert held["ci"][0] <= held["mean"] <= held["ci"][1]
    assert "dev overstated it by" in render_selection(selection, "table")


@pytest.mark.slow
def test_plot_of_a_real_sweep(grid, tmp_path):
    pytest.importorskip("matplotlib")
    selection, _ = select([str(grid)], prefer="chunks", margin=0.15)
    labels = choice_plot.plot(selection, tmp_path / "choice.svg")
    assert (tmp_path / "choice.svg").read_text().lstrip().startswith("<?xml")
    renderer = labels[0].figure.canvas.get_renderer()
    assert _overlaps([label.get_window_extent(renderer) for label in labels]) == []


# ----------------------------------------------------------------- costs


@pytest.mark.slow
def test_money_without_costs_falls_back_to_latency_and_says_so(grid):
    selection, _ = select([str(grid)], prefer="money")
    assert selection.cost_by == "p50_ms"
    assert any(note.startswith("money: no cost recorded") for note in selection.notes)
    assert "money: no cost recorded" in render_selection(selection, "table")


def _fake(run_dir, columns: dict, stages: dict) -> Run:
    table = pa.table({"question_id": [f"q{i}" for i in range(3)], **columns})
    return Run(Path(run_dir), table, {}, {"stages": stages, "n_chunks": 5}, {})


def test_money_from_cost_columns():
    paid = _fake("a", {"cost_usd.rerank": [0.001, 0.002, None], "cost_usd.embed": [0.0, 0.0, 0.003]},
                 {"rerank": {"search_api_calls": 3}})
    assert costs.money(paid) == pytest.approx(2.0)  # (0.001 + 0.002 + 0.003) / 3 * 1000
    local = _fake("b", {}, {"bm25": {"search_api_calls": 0}})
    assert costs.money(local) == 0.0
    unknown = _fake("c", {}, {"dense": {"search_api_calls": 3}})
    assert costs.money(unknown) is None


# ----------------------------------------------------------------- bad input


@pytest.mark.slow
@pytest.mark.parametrize(
    "extra, says",
    [
        (["--margin", "-0.1"], "--margin -0.1: use a value >= 0"),
        (["--report-on", "dev"], "--report-on dev: the same split as --split"),
        (["--metric", "judged@7"], "judged@7 is not stored"),  # hit@7 is derived from the per-rank columns
        (["--split", "nosuch"], "no questions with split=nosuch"),
        (["--out", "best.txt"], "--out best.txt: name a .yaml file"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(grid, capsys, tmp_path, monkeypatch, extra, says):
    monkeypatch.chdir(tmp_path)
    assert exit_code(main, [grid, *extra, "--plot", "p.png"]) == 2
    assert says in one_error_line(capsys)
    assert not list(tmp_path.iterdir())  # nothing half-written


@pytest.mark.slow
def test_runs_return_their_dev_objective(grid):
    from omegaconf import OmegaConf

    from receval.cli import objective

    cfg = OmegaConf.create({"objective": {"metric": "MRR", "split": "dev"}})
    (run,) = load_runs([grid / "1"])
    dev = run.values("rr")[np.asarray(run.strings("split")) == "dev"]
    assert objective.value(cfg, grid / "1") == pytest.approx(np.nanmean(dev))
    cfg.objective.split = "nosuch"
    assert objective.value(cfg, grid / "1") is None


@pytest.mark.slow
def test_an_unknown_objective_metric_is_refused_before_any_work(make_config):
    """A grid sweep never reads the objective, so the config check is where a typo shows."""
    from receval.run import config
    from receval.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"objective.metric=hit3: unknown measure 'hit3'"):
        config.check(make_config("objective.metric=hit3"))
    config.check(make_config("objective.metric=ndcg@10"))


# ----------------------------------------------------------------- Optuna


@pytest.mark.slow
def test_search_spaces_name_real_config_keys(make_config):
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from receval.run.config import config_dir

    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    full = ["retriever=hybrid", "retriever/fusion=weighted", "rerank=dense"]  # as its comment says
    for space, extra in (("bm25", []), ("full", full)):
        with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
            cfg = compose("config", overrides=[*extra, "hydra/sweeper=optuna", f"+search={space}"],
                          return_hydra_config=True)
        params = cfg.hydra.sweeper.params
        assert cfg.hydra.sweeper.direction == "maximize"
        for key in params:
            assert OmegaConf.select(cfg, key, default="absent") != "absent", key


@pytest.mark.slow
def test_optuna_search_of_20_trials_is_read_by_select(tmp_path_factory, capsys):
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    sweep = sweep_of(tmp_path_factory, "hydra/sweeper=optuna", "+search=bm25")
    assert len([p for p in sweep.iterdir() if (p / "results.parquet").is_file()]) == 20
    got = as_json(capsys, sweep, "--prefer", "chunks")
    assert len(got["runs"]) == 20
    best = yaml.safe_load((sweep / "optimization_results.yaml").read_text())
    # Optuna's best objective is select's leader: both are mean MRR on the dev questions
    assert got["runs"][got["leader"]]["mean"] == pytest.approx(best["best_value"], abs=1e-12)
    # not all 20 kept: without a margin nothing is shown not worse, only the leader stands
    assert [r["contender"] for r in got["runs"]].count(True) == 1 and got["chosen"] == got["leader"]
    cheaper = [r for r in got["runs"] if r["cheaper"]]
    assert all(r["margin_needed"] > 0 for r in cheaper)
    # a margin of 0.05 MRR admits only the cheaper trials shown within it, never all 20
    within = as_json(capsys, sweep, "--prefer", "chunks", "--margin", "0.05")
    kept = [r for r in within["runs"] if r["contender"]]
    assert len(kept) == 1 + sum(r["margin_needed"] < 0.05 for r in cheaper) < 20
    assert math.isfinite(within["runs"][within["chosen"]]["mean"])


@pytest.mark.slow
def test_a_sweeper_without_the_objective_split_is_told_what_to_set(grid):
    from omegaconf import OmegaConf

    from receval.cli import objective
    from receval.core.errors import ConfigError

    cfg = OmegaConf.create({"objective": {"metric": "rr", "split": "nosuch"}})
    with pytest.raises(ConfigError, match="objective.split=nosuch: no scored question"):
        objective.value(cfg, grid / "1", required=True)


def test_optuna_without_its_extra_is_one_message(monkeypatch, capsys):
    import importlib.util

    from receval.cli import run as cli

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec",
        lambda name, *a: None if name == "hydra_plugins.hydra_optuna_sweeper" else real(name, *a),
    )
    monkeypatch.setattr("sys.argv", ["receval", "hydra/sweeper=optuna", "+search=bm25", "-m"])
    with pytest.raises(SystemExit) as stop:
        cli.main()
    assert stop.value.code == 2
    assert "pip install 'receval[optuna]'" in one_error_line(capsys)


@pytest.mark.slow
def test_one_run_is_its_own_choice(grid):
    selection, best = select([str(grid / "4")], prefer="chunks")
    assert selection.chosen == selection.leader == 0
    assert selection.why == "the only run: nothing to compare it with"
    assert best.run_dir == grid / "4"


def test_a_contender_resting_on_few_changed_questions_is_named(tmp_path, capsys):
    """The cheap run differs from the leader on 3 questions: too few for any verdict at
    95% (the paired test needs 5), and select says so beside its rule."""
    stored(tmp_path / "s" / "0", "lean", [1] * 21 + [0] * 3, spread(1.0, 1), chunks=50)
    stored(tmp_path / "s" / "1", "leader", [1] * 24, spread(30.0, 2), chunks=50)
    assert main([str(tmp_path / "s"), "--metric", "hit@3", "--split", "dev", "--margin", "0.2"]) == 0
    out = capsys.readouterr().out
    assert "changed questions too few to show any difference" in out and "#0 3" in out
