"""receval.stats.pairwise: one call gives each pair's test, corrected p, effect and
detectable difference, each equal to its own module's answer."""

from __future__ import annotations

import numpy as np
import pytest

from receval.stats.bootstrap import bootstrap_means
from receval.stats import corrections, significance
from receval.stats.detectable import minimum_detectable_difference
from receval.stats.effects import hedges_gz
from receval.stats.pairwise import all_pairs, pairwise


def scores_matrix(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.random((60, 1))
    return np.clip(base + rng.normal([0.0, 0.05, 0.06, -0.1], 0.15, size=(60, 4)), 0, 1)


def test_all_pairs():
    assert all_pairs(3) == [(1, 0), (2, 0), (2, 1)]
    assert len(all_pairs(6)) == 15


@pytest.mark.parametrize("correction", [None, "holm", "bh", "maxt"])
@pytest.mark.slow
def test_each_figure_is_its_module_answer(correction):
    scores = scores_matrix()
    pairs = all_pairs(4)
    result = pairwise(scores, pairs, "randomization", correction, n_resamples=3000, seed=5)
    diffs = np.column_stack([scores[:, a] - scores[:, b] for a, b in pairs])
    tests = significance.randomization(diffs, 3000, 5)
    assert [r.test for r in result] == tests
    if correction is None:
        assert all(r.p_adjusted is None and r.correction is None for r in result)
    else:
        want = corrections.correct(correction, [t.p for t in tests], diffs, 3000, 5)
        assert tuple(r.p_adjusted for r in result) == want.p_adjusted
    for r, j in zip(result, range(diffs.shape[1])):
        assert r.diff == pytest.approx(diffs[:, j].mean())
        assert r.effect == hedges_gz(diffs[:, j])
        assert r.detectable == minimum_detectable_difference(diffs[:, j])
    d = result[0].as_dict()
    assert set(d) == {"test", "effect", "mde"}
    assert d["test"]["name"] == "randomization" and d["test"]["n_resamples"] == 3000


def test_t_and_bootstrap_tests():
    scores = scores_matrix(1)
    pairs = [(1, 0), (3, 0)]
    t = pairwise(scores, pairs, "t")
    assert [r.test.p for r in t] == [x.p for x in significance.t_test(scores[:, [1, 3]] - scores[:, [0]])]
    boot = pairwise(scores, pairs, "bootstrap", "holm", resample_means=lambda v: bootstrap_means(v, n_resamples=2000, seed=0))
    assert all(r.test.name == "bootstrap" and r.test.n_resamples == 2000 for r in boot)
    assert boot[1].test.p < 0.01  # run 3 is 0.1 worse on 60 questions
    with pytest.raises(ValueError, match="the bootstrap test needs resample_means"):
        pairwise(scores, pairs, "bootstrap")
    with pytest.raises(ValueError, match="unknown test 'z'"):
        pairwise(scores, pairs, "z")
