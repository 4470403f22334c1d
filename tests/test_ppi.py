"""Prediction-powered intervals (issue 25): ppi-python as the oracle, coverage at the nominal
level in a simulation, and narrower than the person's labels alone when the judge agrees."""

from __future__ import annotations

import numpy as np
import pytest

from receval.stats.ppi import ppi_mean

from conftest import lazy_import

ppi_py = lazy_import("ppi_py")


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("lam", [None, 1.0, 0.0])
def test_ppi_mean_equals_ppi_python(seed, lam):
    rng = np.random.default_rng(seed)
    truth = rng.random(500)  # per-question nDCG-like values in [0, 1]
    judge = np.clip(truth + rng.normal(0.05, 0.15, 500), 0, 1)  # a biased, noisy judge
    labelled = rng.choice(500, size=60, replace=False)
    rest = np.setdiff1d(np.arange(500), labelled)
    ours = ppi_mean(truth[labelled], judge[labelled], judge[rest], level=0.9, lam=lam)
    lo, hi = ppi_py.ppi_mean_ci(truth[labelled], judge[labelled], judge[rest], alpha=0.1, lam=lam)
    assert (ours.lo, ours.hi) == pytest.approx((float(np.ravel(lo)[0]), float(np.ravel(hi)[0])), abs=1e-12)
    point = ppi_py.ppi_mean_pointestimate(truth[labelled], judge[labelled], judge[rest], lam=lam)
    assert ours.estimate == pytest.approx(float(np.ravel(point)[0]), abs=1e-12)
    if lam == 0.0:  # the person's labels alone
        assert (ours.lo, ours.hi) == pytest.approx(ours.classical[1:], abs=1e-12)


@pytest.mark.slow
def test_ppi_covers_at_its_nominal_level_and_beats_the_human_only_interval():
    """2000 simulated question sets: the true mean is the population's; the judge is biased
    (+0.1) but correlated. The 90% interval covers about 90% of the time (binomial
    sd 0.7%), and is narrower than the interval from the person's 80 labels alone."""
    rng = np.random.default_rng(0)
    n_sets, n_questions, n_human, level = 2000, 1000, 80, 0.9
    truth = rng.beta(2, 3, size=(n_sets, n_questions))
    judge = np.clip(truth + 0.1 + rng.normal(0, 0.08, truth.shape), 0, 1)
    true_mean = 2 / 5  # Beta(2, 3)
    covered = narrower = 0
    ratios = []
    for s in range(n_sets):
        labelled = rng.choice(n_questions, size=n_human, replace=False)
        rest = np.setdiff1d(np.arange(n_questions), labelled)
        found = ppi_mean(truth[s, labelled], judge[s, labelled], judge[s, rest], level=level)
        covered += found.lo <= true_mean <= found.hi
        width, plain = found.hi - found.lo, found.classical[2] - found.classical[1]
        narrower += width < plain
        ratios.append(width / plain)
    assert abs(covered / n_sets - level) < 0.025
    assert narrower / n_sets > 0.99 and np.median(ratios) < 0.6
    # the judge's own mean is biased: its interval alone would miss the truth
    assert judge.mean() - true_mean == pytest.approx(0.1, abs=0.01)


def test_a_judge_that_knows_nothing_costs_little():
    rng = np.random.default_rng(1)
    truth, noise = rng.random(400), rng.random(400)
    found = ppi_mean(truth[:50], noise[:50], noise[50:])
    assert found.lam < 0.3  # tuned towards the person's labels alone
    assert (found.hi - found.lo) < 1.1 * (found.classical[2] - found.classical[1])
