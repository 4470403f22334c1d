"""The judging design (issue 46): rank weights, inclusion probabilities that sum to the
budget, stratified draws whose empirical inclusion frequencies are the recorded ones,
Neyman's allocation, and Rao-Wu replicates whose variance is the stratified
sampling-without-replacement formula."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from receval.stats.sampling import (
    ap_prior, draw, importance, inclusion_probabilities, neyman, rank_weights, rao_wu, stratify,
)


def test_ap_prior_is_the_hand_computed_statap_prior():
    # depth 3: w(r) = (1 + sum_{j=r}^{3} 1/j) / 6
    expected = np.array([1 + 1 + 1 / 2 + 1 / 3, 1 + 1 / 2 + 1 / 3, 1 + 1 / 3]) / 6
    np.testing.assert_allclose(ap_prior(3), expected, atol=1e-15)
    assert ap_prior(100).sum() == pytest.approx(1.0) and (np.diff(ap_prior(100)) < 0).all()
    mixed = rank_weights(["ap", "ndcg@2"], 3)
    ndcg = np.array([1.0, 1 / np.log2(3), 0.0]) / (1.0 + 1 / np.log2(3))
    np.testing.assert_allclose(mixed, (expected + ndcg) / 2, atol=1e-15)
    np.testing.assert_allclose(rank_weights(["precision@2"], 4), [0.5, 0.5, 0, 0])
    with pytest.raises(ValueError, match="not rr"):
        rank_weights(["rr"], 10)


def test_importance_weighs_disagreement_and_keeps_a_floor_where_runs_agree():
    mean, spread = np.array([0.1, 0.1, 0.0]), np.array([0.05, 0.0, 0.0])
    np.testing.assert_allclose(importance(mean, spread, 2), [0.1 * 0.05, 0.1 * 0.1 / 4, 0.0])
    np.testing.assert_allclose(importance(mean, spread * 0, 1), mean**2)  # one run: statAP's prior, squared


@pytest.mark.parametrize("budget", [1, 7, 50, 99, 100, 150])
def test_inclusion_probabilities_sum_to_the_budget_capped_at_one(budget):
    u = np.random.default_rng(budget).pareto(1.2, 100)
    u[:3] = 0.0  # importance 0 is still sampled: every pair keeps pi > 0
    pi = inclusion_probabilities(u, budget)
    assert pi.sum() == pytest.approx(min(budget, 100)) and (pi > 0).all() and (pi <= 1).all()
    free = pi < 1
    if free.sum() > 3:  # proportional to u below the cap
        ratio = pi[free][3:] / np.maximum(u[free][3:], 1e-300)
        assert np.ptp(ratio[u[free][3:] > 0]) == pytest.approx(0.0, abs=1e-9)


def test_draw_takes_the_budget_and_each_pair_at_its_recorded_probability():
    rng = np.random.default_rng(0)
    u = rng.pareto(1.5, 60)
    pi = inclusion_probabilities(u, 20)
    strata = stratify(pi, 4)
    counts = np.zeros(60)
    trials = 1500
    for t in range(trials):
        drawn, recorded, sizes = draw(strata, pi, 20, np.random.default_rng(t))
        assert drawn.sum() == 20 == sizes.sum()
        counts += drawn
    assert (recorded > 0).all()
    np.testing.assert_allclose(recorded, [sizes[h] / (strata == h).sum() for h in strata])
    # empirical inclusion frequency = the recorded probability (binomial noise: 4.5 sd)
    sd = np.sqrt(recorded * (1 - recorded) / trials)
    assert (np.abs(counts / trials - recorded) <= 4.5 * sd + 1e-12).all()
    assert (strata[pi >= 1] == 0).all() and (recorded[strata == 0] == 1).all()  # the certain ones always judged


@settings(max_examples=120, deadline=None, derandomize=True)
@given(n=st.integers(1, 120), budget=st.integers(1, 130), shape=st.floats(0.3, 3.0), dominant=st.integers(0, 40),
       zeros=st.integers(0, 10), n_strata=st.integers(1, 16), seed=st.integers(0, 2**32 - 1))
def test_a_design_never_draws_more_than_its_budget(n, budget, shape, dominant, zeros, n_strata, seed):
    """Random designs, small budgets and mostly-certain ones (a few pairs of overwhelming
    importance, or a budget near the pool's size): the draw takes min(budget, pairs), the
    certain stratum whole, every pair keeps an inclusion probability n_h / N_h > 0."""
    rng = np.random.default_rng(seed)
    u = rng.pareto(shape, n)
    u[:dominant] *= 1e6  # certain when the budget reaches them
    u[rng.choice(n, size=min(zeros, n), replace=False)] = 0.0
    pi = inclusion_probabilities(u, budget)
    strata = stratify(pi, n_strata)
    drawn, recorded, sizes = draw(strata, pi, budget, rng)
    assert drawn.sum() == sizes.sum() == min(budget, n)
    members = np.bincount(strata, minlength=sizes.size)
    assert (np.bincount(strata[drawn], minlength=sizes.size) == sizes).all() and (sizes <= members).all()
    assert (recorded > 0).all() and (recorded <= 1).all()
    np.testing.assert_allclose(recorded, sizes[strata] / members[strata])
    assert drawn[strata == 0].all() and (strata[pi >= 1] == 0).all()


@pytest.mark.parametrize("budget", [1, 2, 3])
def test_a_small_budget_draws_each_pair_at_its_recorded_probability(budget):
    """The issue's case: a budget below the number of strata once drew a pair per stratum
    (11 for --budget 1 on the built-in library); now it draws the budget, each pair at
    n_h / N_h (empirical frequency within binomial noise, 4.5 sd)."""
    u = np.random.default_rng(7).pareto(1.2, 40)
    pi = inclusion_probabilities(u, budget)
    strata = stratify(pi)
    assert strata.max() <= budget
    counts, trials = np.zeros(40), 2000
    for t in range(trials):
        drawn, recorded, _ = draw(strata, pi, budget, np.random.default_rng(t))
        assert drawn.sum() == budget
        counts += drawn
    sd = np.sqrt(recorded * (1 - recorded) / trials)
    assert (np.abs(counts / trials - recorded) <= 4.5 * sd + 1e-12).all()


def test_strata_the_budget_cannot_give_a_draw_each_are_refused():
    pi = np.full(10, 0.1)
    with pytest.raises(ValueError, match="more than the budget of 1"):
        draw(np.arange(10) % 3 + 1, pi, 1, np.random.default_rng(0))


def test_neyman_allocates_by_size_times_spread():
    n = neyman(np.array([100, 50, 10, 5]), np.array([0.1, 0.5, 0.5, 0.0]), 30)
    # floors of 2, then the other 22 by N_h S_h = 10 : 25 : 5 : 0: quotas 7.5, 15.75, 4.75, 2; the two
    # left over go to the largest remainders (0.75, 0.75: Hamilton's method)
    assert n.tolist() == [7, 16, 5, 2] and n.sum() == 30
    assert neyman(np.array([3, 3]), np.array([1.0, 1.0]), 100).tolist() == [3, 3]  # at most N_h
    big = neyman(np.array([1000, 1000]), np.array([0.1, 0.3]), 400, floor=0)
    assert big.tolist() == [100, 300]


def test_rao_wu_variance_is_the_stratified_formula():
    """For a Horvitz-Thompson total, the mean replicate variance equals
    sum_h N_h^2 (1 - f_h) s_h^2 / n_h (Rao & Wu 1988, with n_h - 1 draws)."""
    rng = np.random.default_rng(3)
    sizes, n = np.array([40, 200]), np.array([10, 20])
    y = [rng.random(10) * 3, rng.random(20)]
    stratum = np.repeat([0, 1], n)
    fraction = np.repeat(n / sizes, n)
    values = np.concatenate(y) / fraction  # y / pi
    multipliers = rao_wu(stratum, fraction, 40000, rng)
    replicate_variance = (multipliers @ values).var()
    formula = sum(N**2 * (1 - k / N) * np.var(v, ddof=1) / k for N, k, v in zip(sizes, n, y))
    assert replicate_variance == pytest.approx(formula, rel=0.03)
    assert (rao_wu(np.zeros(5, int), np.ones(5), 3, rng) == 1).all()  # a stratum judged whole adds no variance
