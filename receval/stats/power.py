"""How many questions a paired comparison needs: the sample size of a one-sided paired t-test.

``receval select`` asks it when no cheaper run is shown not worse at the user's margin:
how many questions would show non-inferiority if the differences observed held. The
power formula itself lives in :mod:`receval.stats.detectable` (two-sided and one-sided);
this module keeps select's one-sided, margin-shifted use of it.
"""

from __future__ import annotations

import math

import numpy as np

from receval.stats.detectable import POWER
from receval.stats.detectable import questions_needed as questions_needed_for


def questions_needed(effect_size: float, alpha: float, power: float = POWER) -> float:
    """Questions ``n`` (real-valued; round up) at which a one-sided paired t-test at level
    ``alpha`` rejects with probability ``power`` when the true standardised effect is
    ``effect_size`` (mean difference over its per-question standard deviation, > 0):
    :func:`receval.stats.detectable.questions_needed` with ``alternative="larger"``, the
    one home of the noncentral-t power formula (statsmodels' ``TTestPower``)."""
    return questions_needed_for(effect_size, alpha, power, alternative="larger")


def non_inferiority_questions(diffs, margin: float, alpha: float, power: float = POWER) -> int | None:
    """Questions needed to show ``mean(diffs) > -margin`` (non-inferiority) with a
    one-sided paired test at ``alpha`` and ``power``, if the observed mean and standard
    deviation of the per-question differences ``diffs`` (run - leader) were the truth:
    :func:`questions_needed` at effect ``(mean + margin) / sd``, rounded up.

    None when no number of questions shows it: the observed mean is at or below
    ``-margin``. With no spread (every difference equal, above ``-margin``) 2 suffice."""
    diffs = np.asarray(diffs, dtype=np.float64)
    gap = float(np.mean(diffs)) + margin
    if not gap > 0:
        return None
    sd = float(np.std(diffs, ddof=1)) if diffs.size > 1 else 0.0
    if sd <= 1e-12 * gap:  # no spread beyond rounding
        return 2
    return math.ceil(questions_needed(gap / sd, alpha, power) - 1e-9)
