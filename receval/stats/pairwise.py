"""Every statistic of the paired comparisons a report shows, from one score matrix.

``scores`` is ``(n_questions, n_runs)`` (the questions every run answered, in one
order); a pair ``(a, b)`` compares run ``a`` with run ``b`` (``b`` the baseline, or the
previous run along a chain): differences ``scores[:, a] - scores[:, b]``. The pairs'
p-values are corrected together over every pair shown; maxT reuses the randomization
test's flips (same seed) for all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from receval.stats import corrections, significance
from receval.stats.detectable import ALPHA, POWER, Detectable, minimum_detectable_difference
from receval.stats.effects import Effect, hedges_gz


@dataclass(frozen=True)
class PairStats:
    """One pair: mean difference, its test (with the corrected p when corrected),
    Hedges' g_z and what this question set can detect for it."""

    a: int
    b: int
    diff: float
    test: significance.Test
    p_adjusted: float | None
    correction: str | None
    effect: Effect
    detectable: Detectable

    def as_dict(self) -> dict:
        test = {
            "name": self.test.name, "p": self.test.p, "p_adjusted": self.p_adjusted,
            "correction": self.correction, "n_resamples": self.test.n_resamples,
        }
        mde = {"difference": self.detectable.difference, "alpha": self.detectable.alpha, "power": self.detectable.power}
        return {"test": test, "effect": self.effect.as_dict(), "mde": mde}


def all_pairs(n_runs: int) -> list[tuple[int, int]]:
    """Every unordered pair of runs once, ``(a, b)`` with ``a > b`` (b listed first)."""
    return [(a, b) for b in range(n_runs) for a in range(b + 1, n_runs)]


def pair_differences(scores, pairs: list[tuple[int, int]]) -> np.ndarray:
    arr = np.asarray(scores, dtype=np.float64)
    if arr.ndim != 2 or not pairs:
        raise ValueError(f"scores must be (questions, runs) and pairs non-empty; got shape {arr.shape}, {len(pairs)} pairs")
    return np.column_stack([arr[:, a] - arr[:, b] for a, b in pairs])


def pairwise(
    scores,
    pairs: list[tuple[int, int]],
    test: str = "randomization",
    correction: str | None = None,
    n_resamples: int = 10_000,
    seed: int = 0,
    level: float = 0.95,
    alpha: float = ALPHA,
    power: float = POWER,
    resample_means: Callable[[np.ndarray], np.ndarray] | None = None,
) -> list[PairStats]:
    """Test, correct, measure the effect and the detectable difference of each pair.

    ``resample_means(values) -> (B, m)``: bootstrap means of the columns of ``values``
    over one set of question draws, needed by ``test="bootstrap"``."""
    diffs = pair_differences(scores, pairs)
    m = diffs.shape[1]
    if test == "randomization":
        tests = significance.randomization(diffs, n_resamples, seed)
    elif test == "t":
        tests = significance.t_test(diffs)
    elif test == "bootstrap":
        if resample_means is None:
            raise ValueError("the bootstrap test needs resample_means")
        both = resample_means(np.hstack([diffs, diffs**2]))
        tests = significance.bootstrap(diffs, both[:, :m], both[:, m:])
    else:
        raise ValueError(f"unknown test {test!r}: use {', '.join(significance.TESTS)}")
    adjusted: tuple[float | None, ...] = (None,) * m
    if correction is not None:
        adjusted = corrections.correct(correction, [t.p for t in tests], diffs, n_resamples, seed).p_adjusted
    return [
        PairStats(
            a, b, float(diffs[:, j].mean()), tests[j], adjusted[j], correction,
            hedges_gz(diffs[:, j], level), minimum_detectable_difference(diffs[:, j], alpha, power),
        )
        for j, (a, b) in enumerate(pairs)
    ]
