"""receval.stats.pairwise: each pair's size is its own modules' answer."""

from __future__ import annotations

import numpy as np

from receval.stats.detectable import minimum_detectable_difference
from receval.stats.effects import hedges_gz
from receval.stats.pairwise import all_pairs, pair_size


def test_all_pairs():
    assert all_pairs(3) == [(1, 0), (2, 0), (2, 1)]
    assert len(all_pairs(6)) == 15


def test_each_figure_is_its_module_answer():
    d = np.random.default_rng(0).normal(0.05, 0.2, 60)
    size = pair_size(d, 0.9)
    assert size.effect == hedges_gz(d, 0.9)
    assert size.detectable == minimum_detectable_difference(d, 0.05, 0.8)
    assert set(size.as_dict()) == {"effect", "mde"}
