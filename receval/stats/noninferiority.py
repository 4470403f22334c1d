"""Shown not worse: Holm-corrected non-inferiority of several runs against one leader,
by the one paired procedure (:mod:`receval.stats.paired`).

Per run, the per-question differences ``run - leader`` are tested as the paired
procedure tests any shift: the run *qualifies* at margin ``d`` when the procedure rejects
"the run is worse by ``d`` or more", i.e. its two-sided mid-p value at the shift ``-d``
(for a run whose mean lies above ``-d``; otherwise 1) is at most the level Holm tests it
at (:func:`receval.stats.holm.holm`, family-wise ``alpha = 1 - level``). That is exactly
"its two-sided interval at ``1 - a`` lies above ``-d``" for the Holm level ``a``: the lower
end of a two-sided interval, the usual non-inferiority rule (a one-sided test at
``a / 2``; ICH E9, CONSORT for non-inferiority trials). The interval shown is drawn at
that level, so it reads as the verdict.

``margin_needed`` (the smallest margin above which the run qualifies) is found exactly:
the p-values change only where ``-d`` crosses one of the subset means the procedure's
interval is built from, and Holm's verdicts only improve as every p-value falls, so a
binary search over those crossing points finds it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from receval.core.settings import BootstrapConfig
from receval.stats.bootstrap import Interval
from receval.stats.holm import HolmStep, holm
from receval.stats.paired import PairedTest, ShiftNull, shift_nulls, tested_at
from receval.stats.power import POWER, non_inferiority_questions


@dataclass(frozen=True)
class Verdict:
    """One run against the leader."""

    test: PairedTest  # mean(run - leader), its interval at the level Holm tests it at
    margin_needed: float  # it qualifies at every margin above this
    qualifies: bool | None  # at the given margin; None when no margin was given
    questions_needed: int | None = None  # at the given margin, when it does not qualify

    @property
    def diff(self) -> Interval:
        return self.test.interval

    @property
    def level(self) -> float:
        return self.test.level


def _p(null: ShiftNull, margin: float) -> float:
    """The p-value of "worse by ``margin`` or more": the mid-p at ``-margin`` on the
    run's side of it, 1 when its mean lies at or below ``-margin``."""
    return null.p_at(-margin) if null.mean > -margin + null.tie else 1.0


def _steps(nulls: list[ShiftNull], margin: float, alpha: float) -> list[HolmStep]:
    return holm([_p(null, margin) for null in nulls], alpha)


def smallest_margins(nulls: list[ShiftNull], alpha: float) -> list[float]:
    """Per run: the smallest margin ``d >= 0`` above which it qualifies (Holm over all):
    searched over the crossing points, or by bisection under the normal limit (where the
    p-values are continuous in ``d``)."""
    tie = max(null.tie for null in nulls)
    out = []
    for j in range(len(nulls)):
        def qualifies(margin: float) -> bool:
            return _steps(nulls, margin, alpha)[j].rejected

        if qualifies(0.0):  # qualifies at margin 0 itself: shown better
            out.append(0.0)
        elif nulls[j].lower is None:
            low, high = 0.0, 1.0
            while not qualifies(high):
                low, high = high, 2 * high
            for _ in range(200):
                if high - low <= 1e-12 * max(high, 1.0):
                    break
                mid = (low + high) / 2
                low, high = (low, mid) if qualifies(mid) else (mid, high)
            out.append(high)
        else:
            crossings = np.unique(np.concatenate([-null.lower for null in nulls]))
            crossings = np.concatenate([[0.0], crossings[crossings > 0]])
            low, high = 0, len(crossings) - 1  # beyond the last crossing every p is at its least
            while low < high:  # just above crossing ``mid``: does it qualify?
                mid = (low + high) // 2
                low, high = (low, mid) if qualifies(crossings[mid] + 2 * tie) else (mid + 1, high)
            out.append(float(crossings[low]))
    return out


def verdicts(diffs: np.ndarray, margin: float | None, boot: BootstrapConfig) -> list[Verdict]:
    """A :class:`Verdict` per column of ``diffs`` (``(n_questions, m)``, run - leader).

    With a ``margin``, each interval is at the level Holm tests it at for that margin;
    without, at the level it would qualify at just above its ``margin_needed``."""
    m = diffs.shape[1]
    alpha = 1.0 - boot.level
    nulls = shift_nulls(diffs, boot.n_resamples, boot.seed)
    needed = smallest_margins(nulls, alpha)
    tie = max(null.tie for null in nulls)
    if margin is None:
        steps = [_steps(nulls, d + 2 * tie, alpha)[j] for j, d in enumerate(needed)]
    else:
        steps = _steps(nulls, margin, alpha)
    changed = (np.abs(diffs) > np.array([null.tie for null in nulls])).sum(axis=0)
    out = []
    for j, (null, step) in enumerate(zip(nulls, steps)):
        bounds = (0.0,) if margin is None else (0.0, -margin)
        test = tested_at(null, 1.0 - step.alpha, int(changed[j]), bounds)
        qualifies = None if margin is None else step.rejected
        questions = None
        if margin is not None and not qualifies:
            # planned as Holm's first step tests: one-sided at alpha / (2 m)
            questions = non_inferiority_questions(diffs[:, j], margin, alpha / (2 * m), POWER)
        out.append(Verdict(test=test, margin_needed=needed[j], qualifies=qualifies, questions_needed=questions))
    return out
