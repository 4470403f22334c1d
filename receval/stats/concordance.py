"""Do two label sets rank the runs alike? Kendall's tau-b between two orderings of runs,
and its bootstrap interval over questions.

tau-b = (C - D) / sqrt((n0 - t_x)(n0 - t_y)), C and D the concordant and discordant
pairs of runs, n0 = R(R - 1)/2, t_x and t_y the pairs tied in one ordering (Kendall
1945; scipy.stats.kendalltau's default). Vectorised over resamples: every pair of runs
at once. The interval resamples questions (one draw shared by every run and both
label sets, :func:`receval.stats.bootstrap.bootstrap_means`) and takes the percentile
bounds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from receval.stats.bootstrap import bootstrap_means, percentile_bounds


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """tau-b of the last axis of ``x`` and ``y`` (shape (..., R)); NaN when one side is all tied."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    i, j = np.triu_indices(x.shape[-1], k=1)
    sx, sy = np.sign(x[..., i] - x[..., j]), np.sign(y[..., i] - y[..., j])
    numerator = (sx * sy).sum(axis=-1)
    denominator = np.sqrt((sx != 0).sum(axis=-1) * (sy != 0).sum(axis=-1).astype(np.float64))
    return np.divide(numerator, denominator, out=np.full(numerator.shape, np.nan), where=denominator > 0)


@dataclass(frozen=True)
class Concordance:
    tau: float
    lo: float
    hi: float
    level: float
    n_questions: int


def tau_interval(before: np.ndarray, after: np.ndarray, n_resamples: int = 2000, seed: int = 0,
                 level: float = 0.95) -> Concordance:
    """tau-b between the runs' means under two label sets, ``before`` and ``after`` (Q, R):
    per-question values, one column per run, questions aligned; with its percentile
    bootstrap interval over questions."""
    before, after = np.asarray(before, dtype=np.float64), np.asarray(after, dtype=np.float64)
    runs = before.shape[1]
    tau = float(kendall_tau_b(before.mean(axis=0), after.mean(axis=0)))
    means = bootstrap_means(np.hstack([before, after]), n_resamples=n_resamples, seed=seed)
    taus = kendall_tau_b(means[:, :runs], means[:, runs:])
    taus = taus[np.isfinite(taus)]
    lo, hi = percentile_bounds(taus[:, None], level)[0] if taus.size else (float("nan"), float("nan"))
    return Concordance(tau, lo, hi, level, before.shape[0])
