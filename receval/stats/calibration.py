"""A/A calibration: how often the paired procedure rejects when there is nothing to find.

Null pairs come from the runs' own per-question scores: swapping the two runs' scores
within a question, at random and independently per question, gives two "runs" that
differ only by chance, with the real spread and ties of the measure; a pair's null
differences are its differences with random signs (the exchangeability the
randomization test assumes; Smucker, Allan & Carterette, CIKM 2007; the A/A check of
Urbano, Lima & Hanjalic, "Statistical significance testing in information retrieval:
an empirical analysis of type I, type II and type III errors", SIGIR 2019). The rate of
:mod:`receval.stats.paired`'s verdicts on them (intervals excluding 0) comes with its
Clopper-Pearson interval: near ``alpha`` for measures with many values, below it where
few questions change (a test cannot reject what so few can show).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from receval.stats.paired import paired_tests

#: Null pairs tested at once (bounds the sign-vector products held in memory).
_BLOCK = 1000
PROCEDURE = "paired sign-flip (mid-p)"


@dataclass(frozen=True)
class TypeOneRate:
    """Share of null pairs the procedure rejected at ``alpha``, with a 95% Clopper-Pearson interval."""

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


def type_one_rate(diffs, level: float = 0.95, n_null: int = 1000, n_resamples: int = 2000, seed: int = 0) -> TypeOneRate:
    """The paired procedure's type I rate at ``1 - level`` on ``n_null`` null pairs built
    from each column of ``diffs`` (one column per real pair)."""
    from scipy import stats

    null = null_differences(diffs, n_null, seed)
    alpha = 1.0 - level
    rejected = 0
    for start in range(0, null.shape[1], _BLOCK):  # bounded memory: (sign vectors, block) at a time
        rejected += sum(t.p <= alpha for t in paired_tests(null[:, start : start + _BLOCK], level, n_resamples, seed + 1))
    ci = stats.binomtest(rejected, null.shape[1]).proportion_ci(0.95, method="exact")
    return TypeOneRate(PROCEDURE, rejected / null.shape[1], rejected, null.shape[1], alpha, ci.low, ci.high)
