"""Cost verdicts that hold on a rerun (issue 37): ``select``'s "cheaper" by latency reads
the runs' stages first and the clock only beyond a stated minimum and the sweep's noise.
Synthetic per-question latencies with run-level drift and per-question noise, several
seeds (each seed is one rerun of the same sweep); no test here times anything."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import yaml

from receval.analysis.choice import choose, stage_tree
from receval.core.settings import BootstrapConfig
from receval.results import load_runs
from receval.results.write import write_results, write_run_json
from receval.stats.cheaper import MIN_DIFFERENCE, CostOrder, part_of, sweep_noise
from receval.results.manifest import seal
from receval.run.written import label_facts

N = 40
BM25 = {"kind": "bm25"}
DENSE = {"kind": "dense", "model": "bge-small"}
HYBRID = {"kind": "fused", "members": [BM25, DENSE], "fusion": {"kind": "rrf"}}


def write_run(folder, retriever: dict, hits: np.ndarray, latency: np.ndarray, chunks: int = 100):
    folder.mkdir(parents=True)
    n = len(hits)
    columns = {
        "question_id": [f"q{i:02d}" for i in range(n)], "kind": ["direct"] * n, "split": ["dev"] * n,
        "question": [f"question {i}" for i in range(n)], "relevant": [["s1"]] * n, "grades": [[1]] * n,
        "retrieved": [["s1"] if h else ["s2"] for h in hits], "scores": [[1.0]] * n,
        "first_relevant_rank": [1 if h else None for h in hits], "rr": hits.tolist(), "hit@3": hits.tolist(),
        "latency_ms": latency.tolist(),
    }
    write_results(folder, columns, ["rr", "hit@3"], {"n_chunks": chunks})
    label = label_facts({"retriever": retriever})  # as the run writes it: members filled
    write_run_json(folder, {"n_chunks": chunks, "stages": {"retrieve": {}}, "label": label})
    (folder / ".hydra").mkdir()
    (folder / ".hydra" / "config.yaml").write_text(yaml.safe_dump({"retriever": retriever}))
    seal(folder)  # written last, as the run step does


# the sweep: six BM25 settings (k1 x b: the same work), dense, and hybrid (dense + bm25); the
# hit rates are fixed (they do not change on a rerun), the clock is not
SETTINGS = [(k1, b) for k1 in (0.9, 1.2, 2.0) for b in (0.3, 0.75)]
HIT_RATE = {setting: 0.70 + 0.02 * i for i, setting in enumerate(SETTINGS)} | {"dense": 0.86, "hybrid": 0.88}
CENTRE_MS = {**{s: 0.6 for s in SETTINGS}, "dense": 176.0, "hybrid": 188.0}


def sweep(root, seed: int):
    """One run of the sweep: each run drifts as a whole (lognormal 8%: a busier machine)
    and each question jitters (lognormal 20%)."""
    rng = np.random.default_rng(seed)
    for i, (name, rate) in enumerate(HIT_RATE.items()):
        answered = (np.arange(N) < round(rate * N)).astype(float)  # the same on every rerun
        latency = CENTRE_MS[name] * rng.lognormal(0, 0.08) * rng.lognormal(0, 0.2, N)
        config = {"dense": DENSE, "hybrid": HYBRID}.get(name, {**BM25, "k1": name[0], "b": name[1]})
        write_run(root / f"s{seed}" / str(i), config, answered, latency)
    return load_runs([root / f"s{seed}"])


def test_a_hybrid_runs_the_stages_of_its_members_as_they_run_alone(tmp_path):
    """The members of conf/retriever/hybrid.yaml as saved (only what the file gives) and the
    same retrievers alone with every default written out are the same stages."""
    from receval.run.written import filled

    answered = np.ones(4)
    write_run(tmp_path / "h", {"kind": "fused", "members": [{"kind": "bm25", "k1": 1.2, "b": 0.75},
                                                            {"kind": "dense", "model": "all-MiniLM-L6-v2"}]},
              answered, np.ones(4))
    write_run(tmp_path / "d", filled("retriever", {"kind": "dense"}), answered, np.ones(4))
    write_run(tmp_path / "b", {"kind": "bm25", "k1": 2.0, "b": 0.3}, answered, np.ones(4))
    hybrid, dense, bm25 = (stage_tree(run) for run in load_runs([tmp_path / n for n in "hdb"]))
    assert part_of(dense, hybrid) and part_of(bm25, hybrid) and not part_of(dense, bm25)
    write_run(tmp_path / "o", {"kind": "dense", "backend": "onnx"}, answered, np.ones(4))
    (onnx,) = (stage_tree(run) for run in load_runs([tmp_path / "o"]))
    assert not part_of(onnx, hybrid) and onnx != dense  # another backend is other work


def test_stage_trees_read_the_config():
    assert part_of(Counter({"bm25": 1}), Counter({"bm25": 1, "dense": 1, "rrf": 1}))
    assert not part_of(Counter({"bm25": 1}), Counter({"bm25": 1}))  # the same stages: neither
    assert not part_of(Counter({"bm25": 1, "x": 1}), Counter({"bm25": 2}))
    assert sweep_noise([10.0, 12.0, 5.0, 100.0], [Counter(a=1), Counter(a=1), Counter(b=1), Counter(c=1)]) \
        == pytest.approx(0.2)  # only runs with the same stages measure the noise


@pytest.mark.slow  # writes and reads 40 stored runs
def test_the_same_sweep_rerun_five_times_gives_the_same_verdicts(tmp_path):
    boot = BootstrapConfig(n_resamples=300)
    verdicts = []
    for seed in range(5):
        runs = sweep(tmp_path, seed)
        trees = [stage_tree(run) for run in runs]
        assert trees[0] == trees[5] and part_of(trees[6], trees[7]) and part_of(trees[0], trees[7])
        selection = choose(runs, "hit@3", "p50_ms", 0.3, boot)
        cheaper = {c.index for c in selection.candidates if c.cheaper}
        verdicts.append((selection.leader, selection.chosen, frozenset(cheaper)))
        bm25 = [c for c in selection.candidates if c.index < 6]
        # k1 and b do not change BM25's cost: no BM25 setting is cheaper than another
        order = CostOrder("p50_ms", [c.cost for c in selection.candidates], 0.95,
                          medians=np.zeros((1, 8)), trees=trees)
        assert not any(order.cheaper(a.index, b.index) for a in bm25 for b in bm25)
        # dense does part of hybrid's work: cheaper than it, and hybrid never cheaper than dense or bm25
        assert order.cheaper(6, 7) and not order.cheaper(7, 6) and not any(order.cheaper(7, i) for i in range(7))
        # the rule's words are in the printout, with the threshold this sweep needed
        assert any(note.startswith("p50_ms: a run whose stages are part of another's is cheaper") and
                   f"of the dearer run's median (a stated minimum of {MIN_DIFFERENCE:.0%}" in note
                   for note in selection.notes)
    assert len(set(verdicts)) == 1, verdicts
    leader, chosen, cheaper = verdicts[0]
    assert leader == 7 and cheaper == set(range(7))  # hybrid leads; every other run does part of its work
    # a margin of 0.3 admits BM25 at k1=2 (#4, #5) and dense; the BM25 settings tie with each other and
    # are cheaper than dense by far more than the noise: of them, the higher mean
    assert chosen == 5


def test_latency_alone_needs_more_than_the_stated_minimum_and_the_noise():
    medians = np.tile([100.0, 95.0, 80.0], (200, 1))  # no resampling spread: the rule's threshold alone
    trees = [Counter(a=1), Counter(b=1), Counter(c=1)]
    order = CostOrder("p50_ms", [100.0, 95.0, 80.0], 0.95, medians, trees)
    assert not order.cheaper(1, 0)  # 5% < the 10% minimum
    assert order.cheaper(2, 0) and order.cheaper(2, 1)  # 20% and 16%
    noisy = CostOrder("p50_ms", [100.0, 95.0, 80.0], 0.95, medians, trees, noise=0.3)
    assert noisy.threshold == 0.3 and not noisy.cheaper(2, 0)  # the sweep's own noise is 30%
    rule = noisy.noise_rule()
    assert "below -30% of the dearer run's median (a stated minimum of 10%, the spread between runs with the " \
           "same stages in this sweep being 30%)" in rule


def test_the_same_stages_tie_unless_a_difference_holds_across_repeats():
    same = [Counter(a=1)] * 4
    medians = np.tile([10.0, 10.5, 20.0, 21.0], (50, 1))
    order = CostOrder("p50_ms", [10.0, 10.5, 20.0, 21.0], 0.95, medians, same, groups=["x", "x", "y", "y"])
    assert order.cheaper(0, 2) and order.cheaper(1, 3)  # every repeat of x beats every repeat of y by > 10%
    assert not order.cheaper(0, 1) and not order.cheaper(2, 0)  # repeats of one config never
    alone = CostOrder("p50_ms", [10.0, 20.0], 0.95, medians[:, [0, 2]], same[:2], groups=["x", "y"])
    assert not alone.cheaper(0, 1)  # no repeats: the same stages tie, whatever the clock said
