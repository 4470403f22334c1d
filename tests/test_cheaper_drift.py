"""The latency rule's allowance for drift between runs (:mod:`receval.stats.cheaper`):
a whole run is slower or faster by the machine's state while it ran, which resampling its
questions cannot see. Simulated A/A and A/B pairs of runs whose stages differ (so the
clock decides), each run with its own drift: with the allowance, a pair of equal true
cost is called faster in at most the level's share; without it, often."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from receval.core.settings import BootstrapConfig
from receval.stats.cheaper import DRIFT_SD, cost_order, pooled_drift

N = 47  # questions a run (the built-in library's)
BOOT = BootstrapConfig(n_resamples=1000)


def simulated_pair(rng, ratio: float, drift: float) -> tuple[list[float], list[np.ndarray]]:
    """Two runs' per-question latencies (ms): the same questions (each its own cost),
    run b ``ratio`` times run a's true cost, each run times its own drift exp(drift z)."""
    question = rng.lognormal(0.0, 0.15, N)  # lexical search: questions cost alike (p50 95% CI about +-4%)
    runs = [question * scale * math.exp(drift * rng.standard_normal()) * rng.lognormal(0.0, 0.05, N)
            for scale in (1.0, ratio)]
    return [float(np.median(r)) for r in runs], runs


def faster_rate(ratio: float, drift_true: float, drift_allowed: float | None, pairs: int = 300) -> float:
    """The share of ``pairs`` simulated pairs the clock calls faster, either way."""
    rng = np.random.default_rng(11)
    trees = [Counter({"bm25": 1}), Counter({"tfidf": 1})]  # different stages: the clock decides
    shown = 0
    for _ in range(pairs):
        p50, latencies = simulated_pair(rng, ratio, drift_true)
        order = cost_order(p50, "p50_ms", BOOT, latencies, trees, drift=drift_allowed)
        shown += order.cheaper(0, 1) or order.cheaper(1, 0)
    return shown / pairs


def test_pooled_drift_by_hand():
    # logs (0, 0.2) and (ln 2, ln 2 - 0.2): each value 0.1 from its group's mean; 4 x 0.01 over 2 dof
    groups = [[1.0, math.exp(0.2)], [2.0, 2.0 * math.exp(-0.2)], [5.0]]
    assert pooled_drift(groups) == pytest.approx(math.sqrt(0.02))
    assert pooled_drift([[1.0], [3.0]]) == 0.0  # no group holds two runs


@pytest.mark.slow
def test_identical_costs_are_called_faster_at_most_at_the_level_and_often_without_the_allowance():
    with_allowance = faster_rate(1.0, DRIFT_SD, None)
    without = faster_rate(1.0, DRIFT_SD, 0.0)
    assert with_allowance <= 0.05, with_allowance
    assert without > 0.15, without  # the rule before: drift read as a difference (0.27 here)


@pytest.mark.slow
def test_twice_as_fast_is_still_shown_in_most_pairs_and_three_times_in_all():
    """The allowance's price in power: at the drift it allows, a true 2x is shown in 0.86."""
    assert faster_rate(2.0, DRIFT_SD, None, pairs=200) >= 0.8
    assert faster_rate(3.0, DRIFT_SD, None, pairs=100) >= 0.99


def test_the_sweep_s_own_drift_widens_the_allowance_when_larger():
    trees = [Counter({"bm25": 1})] * 3 + [Counter({"tfidf": 1})]
    p50 = [1.0, 1.6, 0.7, 1.2]  # three runs of one config spread widely: the sweep's own drift
    latencies = [np.full(N, p) for p in p50]
    order = cost_order(p50, "p50_ms", BOOT, latencies, trees)
    assert order.drift == pytest.approx(pooled_drift([p50[:3]])) and order.drift > DRIFT_SD
    quiet = cost_order([1.0, 1.01, 0.99, 1.2], "p50_ms", BOOT, [np.full(N, 1.0)] * 4, trees)
    assert quiet.drift == DRIFT_SD
    assert f"sd {DRIFT_SD:.2f} of the log median" in quiet.noise_rule()
