"""A question set that cannot decide says so (issue 44): at the ceiling, at the floor, or
too small for the differences seen (no pair reaches its minimum detectable difference),
with the fix, in report (every format), select and the Python API; a set that separates
runs gets no note. The rule agrees with a brute force over every pair."""

from __future__ import annotations

import json
from itertools import combinations

import numpy as np
import pytest
import yaml

from receval import analysis
from receval.analysis.choice import choose
from receval.analysis.decidable import instead
from receval.cli.report import report_for
from receval.run.config import BootstrapConfig
from receval.render import html
from receval.render import report as rendered
from receval.render.select import render as render_selection
from receval.results import load_runs
from receval.results.manifest import seal
from receval.results.write import write_results, write_run_json
from receval.stats.paired import paired_tests
from receval.stats.decidable import decidability
from receval.stats.detectable import minimum_detectable_difference, questions_for
from receval.run.written import label_facts

FAST = ["--n-resamples", "200"]


# ----------------------------------------------------------------- stored runs, forged


def write_run(folder, k1: float, ranks, kind: str = "direct"):
    """A stored run whose questions find their one relevant section at ``ranks`` (0: not
    in the top 10); hit@1, hit@3, hit@10 and rr follow from them."""
    ranks = np.asarray(ranks)
    n = len(ranks)
    found = ranks > 0
    columns = {
        "question_id": [f"q{i:02d}" for i in range(n)], "kind": [kind] * n, "split": ["dev"] * n,
        "question": [f"question {i}" for i in range(n)], "relevant": [["s1"]] * n, "grades": [[1]] * n,
        "retrieved": [["s2"] * (int(r) - 1) + ["s1"] if r else ["s2"] for r in ranks], "scores": [[1.0]] * n,
        "first_relevant_rank": [int(r) if r else None for r in ranks],
        "rr": np.where(found, 1.0 / np.maximum(ranks, 1), 0.0).tolist(),
        "hit@1": (ranks == 1).astype(float).tolist(),
        "hit@3": (found & (ranks <= 3)).astype(float).tolist(),
        "hit@10": found.astype(float).tolist(),
        "latency_ms": [1.0] * n,
    }
    folder.mkdir(parents=True)
    write_results(folder, columns, ["rr", "hit@1", "hit@3", "hit@10"], {"n_chunks": 100})
    retriever = {"kind": "bm25", "k1": k1, "b": 0.75}
    write_run_json(folder, {"n_chunks": 100, "stages": {"retrieve": {}}, "label": label_facts({"retriever": retriever})})
    (folder / ".hydra").mkdir()
    (folder / ".hydra" / "config.yaml").write_text(yaml.safe_dump({"retriever": retriever}))
    seal(folder)


def sweep(root, columns, kind: str = "direct"):
    """One run per column of ``columns`` (questions x runs of first relevant ranks)."""
    for j, ranks in enumerate(np.asarray(columns).T):
        write_run(root / str(j), 0.5 + 0.1 * j, ranks, kind)
    return root


def report_json(root, *argv):
    report = report_for([str(root), *argv, *FAST])
    data = json.loads(rendered.render(report, "json"))
    return report, data


RNG = np.random.default_rng(44)
N = 30


@pytest.fixture(scope="module")
def saturated(tmp_path_factory):
    """6 runs, 30 direct questions, every first relevant section in the top 3: hit@3 is
    1.000 in every run; hit@1 and MRR tell the runs apart (run #5 finds all at rank 1)."""
    ranks = RNG.integers(1, 4, size=(N, 6))
    ranks[:, 5] = 1
    return sweep(tmp_path_factory.mktemp("saturated"), ranks)


@pytest.fixture(scope="module")
def floor(tmp_path_factory):
    """3 runs whose relevant sections sit between ranks 4 and 10 or are missing: hit@3 is 0."""
    ranks = RNG.choice([0, 4, 5, 7, 9], size=(N, 3))
    return sweep(tmp_path_factory.mktemp("floor"), ranks, kind="paraphrase")


@pytest.fixture(scope="module")
def close(tmp_path_factory):
    """4 runs over 40 questions, half found at rank 1 and half at rank 2, that differ from
    the first on one or two questions each: #1 loses q00, #2 gains q01, #3 both."""
    ranks = np.column_stack([np.tile([1, 2], 20)] * 4)
    ranks[0, 1] = 2
    ranks[1, 2] = 1
    ranks[[0, 3], 3] = [2, 1]
    return sweep(tmp_path_factory.mktemp("close"), ranks, kind="paraphrase")


@pytest.fixture(scope="module")
def apart(tmp_path_factory):
    """3 runs far apart: finding every section at rank 1, at rank 2, or not at all."""
    ranks = np.column_stack([np.ones(N), np.full(N, 2), np.r_[np.zeros(N - 2), [1, 1]]]).astype(int)
    return sweep(tmp_path_factory.mktemp("apart"), ranks)


# ----------------------------------------------------------------- the rule, on arrays


def brute_force(scores, alpha=0.05, power=0.8) -> bool:
    """Some pair's mean difference is not 0 and reaches its MDE, every pair checked; or
    the most separated pair (largest |mean| / sd) is shown by the paired procedure."""
    best, shown = -1.0, False
    for a, b in combinations(range(scores.shape[1]), 2):
        d = scores[:, b] - scores[:, a]
        if abs(d.mean()) > 0 and abs(d.mean()) >= minimum_detectable_difference(d, alpha, power).difference:
            return True
        sd = d.std(ddof=1)
        ratio = abs(d.mean()) / sd if sd > 0 else (np.inf if d.mean() else 0.0)
        if ratio > best:
            best, shown = ratio, abs(d.mean()) > 0 and paired_tests(d, 1 - alpha)[0].p <= alpha
    return shown


def test_the_rule_agrees_with_every_pair_checked_by_hand():
    rng = np.random.default_rng(7)
    decided = 0
    for trial in range(24):
        n, r = int(rng.integers(5, 60)), int(rng.integers(2, 7))
        p = rng.uniform(0.05, 0.95, size=r)  # each run its own hit rate, some far apart
        scores = (rng.random((n, r)) < p).astype(float)
        if trial % 3 == 0:
            scores = rng.choice([0.0, 0.25, 0.5, 1.0], size=(n, r))
        found = decidability(scores)
        assert found.decides == brute_force(scores)
        decided += found.decides
        if found.decides:
            a, b = found.decided_by
            d = scores[:, b] - scores[:, a]
            assert abs(d.mean()) >= minimum_detectable_difference(d).difference or paired_tests(d)[0].p <= 0.05
    assert 4 < decided < 20  # both outcomes are exercised


def test_a_saturated_set_is_at_the_ceiling_and_a_dead_one_at_the_floor():
    top = decidability(np.ones((20, 6)))
    assert (top.cause, top.at_top, top.separating, top.largest, top.detectable) == ("ceiling", 20, 0, 0.0, None)
    bottom = decidability(np.zeros((20, 3)))
    assert (bottom.cause, bottom.at_bottom, bottom.separating) == ("floor", 20, 0)
    assert decidability(np.ones((20, 2)), bounds=None).cause == "size"  # unbounded: no ceiling


def test_nearly_at_the_ceiling_is_at_least_half_the_questions_at_the_maximum_in_every_run():
    scores = np.ones((20, 3))
    scores[0, 1] = 0.0  # one question separates one pair: +-0.05, far below its MDE
    found = decidability(scores)
    assert (found.cause, found.at_top, found.separating) == ("ceiling", 19, 1)
    assert (found.low, found.high, found.largest) == (1, 0, pytest.approx(0.05))
    d = scores[:, 0] - scores[:, 1]
    assert found.detectable.difference == pytest.approx(minimum_detectable_difference(d).difference, rel=1e-12)
    assert found.questions_needed == questions_for(0.05, d)
    half = np.vstack([np.ones((10, 3)), np.zeros((10, 3))])
    assert decidability(half).cause == "ceiling"  # a tie goes to the ceiling
    middle = np.full((20, 3), 0.5)
    middle[:9] = 1.0
    middle[0, 1] = 0.5
    assert decidability(middle).cause == "size"  # 8 of 20 at the ceiling: not most


def test_a_shift_without_spread_decides_and_identical_runs_do_not():
    scores = np.column_stack([np.zeros(10), np.full(10, 0.5)])
    assert decidability(scores).decided_by == (0, 1)  # every question moves by the same 0.5
    same = np.column_stack([np.linspace(0, 1, 10)] * 3)
    found = decidability(same)
    assert not found.decides and found.separating == 0 and found.cause == "size"
    x = np.random.default_rng(3).random(40)
    shuffled = decidability(np.column_stack([x, x[::-1], np.roll(x, 7)]))  # equal means, summed in other orders
    assert shuffled.separating == 40 and shuffled.largest == 0.0 and shuffled.questions_needed is None
    assert not shuffled.decides and shuffled.detectable is None


def test_stricter_and_deeper_measures_follow_the_cutoff():
    assert instead("hit@3", "ceiling") == ["hit@1", "rr"]
    assert instead("ndcg@5", "ceiling") == ["ndcg@1", "rr"]
    assert instead("hit@1", "ceiling") == instead("rr", "ceiling") == []
    assert instead("hit@3", "floor") == ["hit@10", "recall@10"]
    assert instead("hit@3", "floor", frozenset({"hit@5", "hit@20", "recall@3"})) == ["hit@20", "recall@20"]
    assert instead("recall@10", "floor") == ["recall@20"]
    assert instead("rr@3", "floor") == ["rr"]
    assert instead("hit@3", "size") == []


def test_wrong_shapes_are_refused():
    for bad in (np.ones(5), np.ones((1, 3)), np.ones((5, 1)), np.array([[1.0, np.nan], [0.0, 1.0]])):
        with pytest.raises(ValueError, match="at least 2 questions x 2 runs"):
            decidability(bad)


# ----------------------------------------------------------------- report, select, API


CEILING = ("cannot decide on hit@3 (at the ceiling): all 30 questions score 1 in all 6 runs, so no question "
           "separates any two. Fix: more or harder questions; paraphrased questions (30 of the 30 are direct: "
           "worded like the pages); a stricter measure: hit@1 or MRR")


def test_a_saturated_sweep_says_its_ceiling_and_the_fix_in_every_format(saturated):
    report, data = report_json(saturated, "--metrics", "hit@1,hit@3,rr")
    assert [run["metrics"]["hit@3"]["mean"] for run in data["runs"]] == [1.0] * 6
    (note,) = data["undecided"]  # MRR separates the runs: only the saturated column is noted
    assert note["note"] == CEILING
    assert {k: note[k] for k in ("measure", "cause", "n_questions", "n_runs", "at_ceiling", "separating",
                                 "largest_diff", "pair", "mde", "measures")} == {
        "measure": "hit@3", "cause": "ceiling", "n_questions": 30, "n_runs": 6, "at_ceiling": 30, "separating": 0,
        "largest_diff": 0.0, "pair": None, "mde": None, "measures": ["hit@1", "rr"]}
    for fmt in ("table", "markdown", "latex"):
        assert CEILING in rendered.render(report, fmt)
    assert CEILING in html.render(report)
    assert "cannot decide" not in rendered.render(report, "csv")  # one row per run: no notes there
    assert analysis.undecided(analysis.load(saturated), "rr", metrics=["hit@1", "hit@3", "rr"])[0].text == CEILING


def test_select_on_a_saturated_split_says_so(saturated):
    selection = choose(load_runs([saturated]), "hit@3", "chunks", None, BootstrapConfig(n_resamples=200))
    assert CEILING in selection.notes
    data = json.loads(render_selection(selection, "json"))
    assert data["undecided"][0]["note"] == CEILING and CEILING in data["notes"]
    assert CEILING in render_selection(selection, "table")
    # on MRR the same runs separate: no note
    assert choose(load_runs([saturated]), "rr", "chunks", None, BootstrapConfig(n_resamples=200)).undecided == []


def test_a_set_at_the_floor_suggests_a_deeper_cutoff(floor):
    _, data = report_json(floor, "--metrics", "hit@3,hit@10", "--metric", "hit@3")
    (note,) = data["undecided"]
    assert note["note"] == ("cannot decide on hit@3 (at the floor): all 30 questions score 0 in all 3 runs, so no "
                            "question separates any two. Fix: a deeper cutoff: hit@10 or recall@10; easier questions")
    assert (note["cause"], note["at_floor"], note["measures"]) == ("floor", 30, ["hit@10", "recall@10"])


def test_differences_below_the_mde_cannot_decide_at_this_size(close):
    runs = analysis.load(close)
    report, data = report_json(close, "--metrics", "hit@1,rr", "--metric", "hit@1")
    (note,) = data["undecided"]
    scores = np.column_stack([run.values("hit@1") for run in runs])
    assert not brute_force(scores)
    d = scores[:, 2] - scores[:, 1]  # the largest difference: #2 gained one, #1 lost one
    mde = minimum_detectable_difference(d).difference
    assert note["cause"] == "size" and note["pair"] == [1, 2]
    assert note["largest_diff"] == pytest.approx(2 / 40) and note["mde"] == pytest.approx(mde, rel=1e-12)
    assert note["questions_needed"] == questions_for(2 / 40, d)
    assert note["note"] == (
        f"cannot decide on hit@1 at this size: no paired difference among the 4 runs reaches its MDE; the largest, "
        f"#2 - #1 = +0.050, is below its MDE {mde:.3f} (40 questions; paired t, alpha 0.05, power 80%). "
        f"Fix: more questions (about {note['questions_needed']} would detect +0.050 between #2 and #1)")
    assert note["note"] in rendered.render(report, "table")


def test_a_sweep_that_separates_its_runs_gets_no_note(apart):
    report, data = report_json(apart, "--metrics", "hit@1,hit@3,hit@10,rr")
    assert "undecided" not in data
    assert not any("cannot decide" in line for line in rendered.header_lines(report))
    assert analysis.undecided(analysis.load(apart), "rr") == []
    selection = choose(load_runs([apart]), "rr", "chunks", None, BootstrapConfig(n_resamples=200))
    assert selection.undecided == [] and json.loads(render_selection(selection, "json"))["undecided"] == []


def test_a_pair_shown_below_its_mde_is_decided_so_no_note_sits_beside_a_verdict():
    """Nine questions up and two down among 40: below its MDE (0.175 against 0.227), yet the
    paired procedure shows it better (mid-p 0.039): the set decides."""
    a = np.r_[[1.0, 1.0], np.zeros(38)]
    b = np.r_[[0.0, 0.0], np.ones(9), np.zeros(29)]
    d = b - a
    assert abs(d.mean()) < minimum_detectable_difference(d).difference
    assert paired_tests(d)[0].p <= 0.05
    found = decidability(np.column_stack([a, b]))
    assert found.decides and found.decided_by == (0, 1) and found.cause is None
