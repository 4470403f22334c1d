"""A/A calibration: how often each test rejects when there is nothing to find.

Null pairs come from the runs' own per-question scores: swapping the two runs' scores
within a question, at random and independently per question, gives two "runs" that
differ only by chance, with the real spread and ties of the measure; a pair's null
differences are its differences with random signs (the exchangeability the
randomization test assumes; Smucker, Allan & Carterette, CIKM 2007; the A/A check of
Urbano, Lima & Hanjalic, "Statistical significance testing in information retrieval:
an empirical analysis of type I, type II and type III errors", SIGIR 2019). A test whose
type I rate on them is far from ``alpha`` is miscalibrated for this measure and
question set. The rate comes with its Clopper-Pearson interval.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from receval.stats import significance

#: Null pairs tested at once (bounds the resampled means held in memory).
_BLOCK = 1000


@dataclass(frozen=True)
class TypeOneRate:
    """Share of null pairs a test rejected at ``alpha``, with a 95% Clopper-Pearson interval."""

    test: str
    rate: float
    rejections: int
    n_null: int
    alpha: float
    lo: float
    hi: float


def null_differences(diffs, n_null: int, seed: int) -> np.ndarray:
    """``(n, m * n_null)``: each pair's differences (columns of ``diffs``) with random
    signs per question, ``n_null`` times per pair (pair-major)."""
    d = np.asarray(diffs, dtype=np.float64)
    d = d[:, None] if d.ndim == 1 else d
    rng = np.random.default_rng(seed)
    signs = np.where(rng.random((d.shape[0], d.shape[1], n_null)) < 0.5, -1.0, 1.0)
    return (d[:, :, None] * signs).reshape(d.shape[0], -1)


def type_one_rates(
    diffs,
    alpha: float = 0.05,
    n_null: int = 1000,
    n_resamples: int = 1000,
    seed: int = 0,
    tests: tuple[str, ...] = significance.TESTS,
    resample_means: Callable[[np.ndarray], np.ndarray] | None = None,
) -> list[TypeOneRate]:
    """Type I rate of each named test on ``n_null`` null pairs built from each column of
    ``diffs`` (one column per real pair). ``resample_means(values) -> (B, m)``: the
    bootstrap means of the columns of ``values`` over one set of question draws (the
    report's own bootstrap), needed for the ``bootstrap`` test only."""
    from scipy import stats

    for name in tests:
        if name not in significance.TESTS:
            raise ValueError(f"unknown test {name!r}: use {', '.join(significance.TESTS)}")
        if name == "bootstrap" and resample_means is None:
            raise ValueError("the bootstrap test's calibration needs resample_means")
    null = null_differences(diffs, n_null, seed)
    rejections = dict.fromkeys(tests, 0)
    for start in range(0, null.shape[1], _BLOCK):  # bounded memory: (resamples, block) at a time
        block = null[:, start : start + _BLOCK]
        for name in tests:
            rejections[name] += sum(t.p <= alpha for t in _run(name, block, n_resamples, seed, resample_means))
    out = []
    for name, rejected in rejections.items():
        ci = stats.binomtest(rejected, null.shape[1]).proportion_ci(0.95, method="exact")
        out.append(TypeOneRate(name, rejected / null.shape[1], rejected, null.shape[1], alpha, ci.low, ci.high))
    return out


def _run(name: str, null: np.ndarray, n_resamples: int, seed: int, resample_means) -> list[significance.Test]:
    if name == "randomization":
        return significance.randomization(null, n_resamples, seed + 1)
    if name == "t":
        return significance.t_test(null)
    resampled = resample_means(np.hstack([null, null**2]))
    return significance.bootstrap(null, resampled[:, : null.shape[1]], resampled[:, null.shape[1] :])
