"""Prediction-powered inference for a mean: a judge's labels on every question, a person's
on a few, and an interval for the mean under the person's labels.

With Y the person's per-question values on the n questions they labelled, f the judge's
values there and f~ the judge's on the N other questions, the estimate is

    theta = mean(lam * f~) + mean(Y - lam * f)

(the judge's mean, corrected by its error measured where both labelled), with the
normal interval theta +- z * sqrt(var(lam * f~) / N + var(Y - lam * f) / n).
``lam = 1`` is PPI (Angelopoulos, Bates, Fannjiang, Jordan, Zrnic, "Prediction-powered
inference", Science 2023); ``lam = 0`` the person's labels alone (the classical
interval); by default ``lam`` is PPI++'s power-tuned value
cov(Y, f) / ((1 + n / N) var(f, f~)), clipped to [0, 1] (Angelopoulos, Duchi, Zrnic,
"PPI++", 2023), so the interval is never much wider than the classical one and is
narrower the better the judge agrees. Variances as ppi-python computes them (its
``ppi_mean_ci``, the test oracle).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm


@dataclass(frozen=True)
class PpiInterval:
    estimate: float
    lo: float
    hi: float
    lam: float
    n_labelled: int  # questions the person labelled
    n_unlabelled: int  # questions only the judge labelled
    classical: tuple[float, float, float]  # the person's labels alone: mean, lo, hi


def tuned_lambda(human: np.ndarray, judged: np.ndarray, judged_rest: np.ndarray) -> float:
    """PPI++'s power-tuning parameter for a mean, clipped to [0, 1]."""
    n, big_n = human.size, judged_rest.size
    covariance = 2.0 / n * np.sum((human - human.mean()) * (judged - judged.mean()))
    variance = np.var(np.concatenate([judged, judged_rest]), ddof=1)
    if not variance > 0:
        return 0.0
    return float(np.clip(covariance / (2.0 * (1.0 + n / big_n) * variance), 0.0, 1.0))


def ppi_mean(human, judged, judged_rest, level: float = 0.95, lam: float | None = None) -> PpiInterval:
    """The prediction-powered interval of the mean (see the module docstring): ``human`` and
    ``judged`` aligned on the n questions the person labelled, ``judged_rest`` the judge's
    values on the others."""
    human, judged, judged_rest = (np.asarray(a, dtype=np.float64).ravel() for a in (human, judged, judged_rest))
    if human.size != judged.size or human.size < 2 or judged_rest.size < 1:
        raise ValueError("ppi_mean: need >= 2 questions labelled by both and >= 1 by the judge alone, aligned")
    lam = tuned_lambda(human, judged, judged_rest) if lam is None else float(lam)
    estimate = float(np.mean(lam * judged_rest) + np.mean(human - lam * judged))
    se = float(np.sqrt(np.std(lam * judged_rest) ** 2 / judged_rest.size + np.std(human - lam * judged) ** 2 / human.size))
    z = float(norm.ppf(0.5 + level / 2.0))
    plain_se = float(np.std(human) / np.sqrt(human.size))
    plain = float(human.mean())
    return PpiInterval(estimate, estimate - z * se, estimate + z * se, lam, int(human.size), int(judged_rest.size),
                       (plain, plain - z * plain_se, plain + z * plain_se))
