"""Shown not worse: Holm-corrected non-inferiority of several runs against one leader.

Per run, the ``n`` per-question differences ``run - leader`` are resampled together
(:func:`receval.stats.bootstrap.bootstrap_means`, the same question draws for every run).
A run *qualifies* at margin ``d`` when the lower end of its Holm-corrected percentile
interval lies above ``-d``: its one-sided bootstrap p-value
``p = 2 * #{resampled mean <= -d} / B`` is at most the level Holm tests it at
(:func:`receval.stats.holm.holm`, family-wise ``alpha = 1 - level``), which is exactly "the
two-sided percentile interval at ``1 - a`` has its lower end above ``-d``" for
``p <= a``. The lower end of a two-sided interval is the usual non-inferiority rule
(a one-sided test at ``a / 2``; ICH E9, CONSORT for non-inferiority trials).

"Above" is strict and compared with a slack of :data:`EPS` (metric units) so that
floating-point noise in a resampled mean never decides: at margin ``d`` a run
qualifies exactly when ``d > margin_needed + EPS``. ``margin_needed`` (the smallest
margin at which the run would qualify) is found exactly: the p-values only change
where ``-d`` crosses a resampled mean, and Holm's verdicts only improve as every
p-value falls, so a binary search over those crossing points finds it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from receval.stats.bootstrap import Interval, bootstrap_means, percentile_bounds
from receval.stats.holm import HolmStep, holm
from receval.stats.power import POWER, non_inferiority_questions
from receval.core.settings import BootstrapConfig

#: Slack (metric units) under which a resampled mean counts as on the margin.
EPS = 1e-9


@dataclass(frozen=True)
class Verdict:
    """One run against the leader."""

    diff: Interval  # mean(run - leader) and its Holm-corrected percentile interval
    level: float  # that interval's confidence level
    margin_needed: float  # it qualifies at every margin above this (and none at or below)
    qualifies: bool | None  # at the given margin; None when no margin was given
    questions_needed: int | None = None  # at the given margin, when it does not qualify


def _steps(resampled: np.ndarray, threshold: float, strict: bool, alpha: float) -> list[HolmStep]:
    """Holm over the columns of ``resampled`` with p-values from how many
    resampled means lie at or below (``strict``: below) ``threshold``."""
    counts = np.count_nonzero(resampled < threshold if strict else resampled <= threshold, axis=0)
    return holm([min(1.0, 2.0 * int(c) / resampled.shape[0]) for c in counts], alpha)


def smallest_margins(resampled: np.ndarray, alpha: float) -> list[tuple[float, HolmStep]]:
    """Per column of sorted ``resampled`` means: the smallest margin ``d >= 0`` such
    that it qualifies at every margin above ``d + EPS``, and the Holm step it then
    qualifies at."""
    # qualifying at margin d counts resampled means <= EPS - d; just above a crossing
    # point t = EPS - s the count is of means < s, i.e. strictly below EPS - t
    crossings = np.unique(EPS - resampled.ravel())
    crossings = np.concatenate([[0.0], crossings[crossings > 0]])
    out = []
    for j in range(resampled.shape[1]):
        closed = _steps(resampled, EPS, False, alpha)[j]
        if closed.rejected:  # qualifies at margin 0 itself
            out.append((0.0, closed))
            continue
        low, high = 0, len(crossings) - 1  # above the last crossing every count is 0
        while low < high:
            mid = (low + high) // 2
            if _steps(resampled, EPS - crossings[mid], True, alpha)[j].rejected:
                high = mid
            else:
                low = mid + 1
        step = _steps(resampled, EPS - crossings[low], True, alpha)[j]
        out.append((max(0.0, float(crossings[low]) - EPS), step))
    return out


def verdicts(diffs: np.ndarray, margin: float | None, boot: BootstrapConfig) -> list[Verdict]:
    """A :class:`Verdict` per column of ``diffs`` (``(n_questions, m)``, run - leader).

    With a ``margin``, each interval is at the level Holm tests it at for that margin;
    without, at the level it would qualify at, just above its ``margin_needed``."""
    m = diffs.shape[1]
    alpha = 1.0 - boot.level
    matrix = diffs if m > 1 else np.column_stack([diffs, diffs])  # one BLAS path for all m
    resampled = np.sort(bootstrap_means(matrix, n_resamples=boot.n_resamples, seed=boot.seed)[:, :m], axis=0)
    needed = smallest_margins(resampled, alpha)
    if margin is None:
        steps = [step for _, step in needed]
    else:
        steps = _steps(resampled, EPS - margin, False, alpha)
    bounds = {a: percentile_bounds(resampled, 1.0 - a) for a in {s.alpha for s in steps}}
    out = []
    for j, step in enumerate(steps):
        lo, hi = bounds[step.alpha][j]
        qualifies = None if margin is None else step.rejected
        questions = None
        if margin is not None and not qualifies:
            # planned as Holm's first step tests: one-sided at alpha / (2 m)
            questions = non_inferiority_questions(diffs[:, j], margin, alpha / (2 * m), POWER)
        out.append(Verdict(
            diff=Interval(float(np.mean(diffs[:, j])), lo, hi), level=1.0 - step.alpha,
            margin_needed=needed[j][0], qualifies=qualifies, questions_needed=questions,
        ))
    return out
