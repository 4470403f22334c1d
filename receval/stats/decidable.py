"""Whether a question set can decide between runs on one measure, from their
per-question scores (a ``(questions, runs)`` matrix over the questions every run scores).

The rule, stated once (``docs/pages/explanation/statistics.md``):

- A pair of runs is *decided* when its observed mean paired difference is not zero and
  reaches the pair's minimum detectable difference (MDE: the smallest mean difference the
  two-sided paired t-test on these questions detects with ``power`` at ``alpha``, from
  the differences' spread; :func:`receval.stats.detectable.minimum_detectable_difference`).
  A pair no question separates (every paired difference zero) is never decided.
- The set *can decide* when at least one pair of runs is decided; otherwise it cannot. A
  pair the one paired procedure (:mod:`receval.stats.paired`) shows better or worse is
  decided too, whatever its MDE: a note never sits beside a verdict.
  Since every pair has the same number of questions, every pair's MDE is the same
  standardised effect times its own spread, so the set can decide exactly when the pair
  with the largest ``|mean| / sd`` is decided: that pair alone is checked.
- Why it cannot (:attr:`Decidability.cause`), for a measure bounded in [0, 1]: *at the
  ceiling* when at least half the questions score the maximum (1) in every run, *at the
  floor* when at least half score the minimum (0) in every run (ceiling first on a tie);
  those questions cannot separate any two runs. Otherwise (or for an unbounded measure)
  the cause is the set's *size*: the differences seen are smaller than it detects.
  Every question at the maximum in every run is the plain ceiling (all runs' means 1).

Observed difference >= MDE is the planning statement "if this were the true difference,
a set of this size would detect it at least ``power`` of the time" (Webber, Moffat &
Zobel, "Statistical power in retrieval experimentation", CIKM 2008; Sakai, "Topic set
size design", Inf. Retr. J. 19, 2016); below it, another set of this size would miss the
difference seen more often than ``1 - power``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from receval.stats.paired import paired_tests
from receval.stats.detectable import (
    ALPHA, POWER, Detectable, detectable_effect, minimum_detectable_difference, questions_for,
)

#: Causes of a set that cannot decide, in the order they are tried.
CAUSES = ("ceiling", "floor", "size")
#: A score this close to a bound is at it (an nDCG of a perfect ranking summed in another order).
SAME = 1e-12


@dataclass(frozen=True)
class Decidability:
    """What a question set can decide on one measure (module docstring)."""

    n_questions: int
    n_runs: int
    alpha: float
    power: float
    at_top: int  # questions scoring the measure's maximum in every run (0 when unbounded)
    at_bottom: int  # questions scoring its minimum in every run
    separating: int  # questions on which some two runs differ
    low: int  # column of the run with the lowest mean (the first of equals)
    high: int  # column of the run with the highest mean (the first of equals)
    largest: float  # mean(high - low) >= 0: the largest paired difference
    detectable: Detectable | None  # the MDE of high - low; None when it is 0 (no spread)
    decided_by: tuple[int, int] | None  # (a, b): a pair whose mean(b - a) reaches its MDE
    questions_needed: int | None  # to detect ``largest`` between high and low at this spread (undecided only)

    @property
    def decides(self) -> bool:
        return self.decided_by is not None

    @property
    def cause(self) -> str | None:
        """ceiling, floor or size (:data:`CAUSES`); None when the set decides."""
        if self.decides:
            return None
        if 2 * self.at_top >= self.n_questions and self.at_top:
            return "ceiling"
        if 2 * self.at_bottom >= self.n_questions and self.at_bottom:
            return "floor"
        return "size"


def separating(scores: np.ndarray) -> int:
    """Questions on which some two runs (columns) score differently."""
    s = np.asarray(scores)
    return int((s != s[:, :1]).any(axis=1).sum())


def _most_separated(scores: np.ndarray, effect: float) -> tuple[int, int, float]:
    """The pair (a, b) with the largest ``|mean(b - a)| / sd(b - a)`` (infinite for a
    non-zero difference without spread, 0 for none), stopping at the first pair whose
    ratio reaches ``effect``: one run's pairs at a time, so memory stays ``questions x runs``."""
    best = (0, 1, -1.0)
    n_runs = scores.shape[1]
    for a in range(n_runs - 1):
        diffs = scores[:, a + 1:] - scores[:, [a]]
        means = np.abs(diffs.mean(axis=0))
        spread = diffs.std(axis=0, ddof=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(spread > 0, means / np.where(spread > 0, spread, 1.0), np.where(means > 0, np.inf, 0.0))
        j = int(np.argmax(ratio))
        if ratio[j] > best[2]:
            best = (a, a + 1 + j, float(ratio[j]))
        if best[2] >= effect:
            break
    return best


def decidability(
    scores, alpha: float = ALPHA, power: float = POWER, bounds: tuple[float, float] | None = (0.0, 1.0),
    n_resamples: int = 2000, seed: int = 0,
) -> Decidability:
    """Whether the questions of ``scores`` (questions x runs, finite, at least 2 of each)
    can decide between the runs at ``alpha`` and ``power`` (module docstring). ``bounds``:
    the measure's minimum and maximum (None for an unbounded measure: no ceiling or floor).
    The most separated pair also counts as decided when the one paired procedure
    (:mod:`receval.stats.paired`, with ``n_resamples`` and ``seed``) shows it better or
    worse: a note never sits beside a verdict."""
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 2 or s.shape[0] < 2 or s.shape[1] < 2 or not np.isfinite(s).all():
        raise ValueError(f"deciding needs finite scores of at least 2 questions x 2 runs, got shape {s.shape}")
    n, r = s.shape
    top = bottom = 0
    if bounds is not None:
        top = int((np.abs(s - bounds[1]) <= SAME).all(axis=1).sum())
        bottom = int((np.abs(s - bounds[0]) <= SAME).all(axis=1).sum())
    apart = separating(s)
    means = s.mean(axis=0)
    low, high = int(np.argmin(means)), int(np.argmax(means))
    wide = s[:, high] - s[:, low]
    largest = float(wide.mean())
    largest = largest if largest > SAME else 0.0  # equal means summed in another order are equal
    mde = minimum_detectable_difference(wide, alpha, power) if largest else None
    decided_by = None
    if apart:
        a, b, _ = _most_separated(s, detectable_effect(n, alpha, power))
        d = s[:, b] - s[:, a]
        shift = abs(float(d.mean()))
        if shift > 0 and shift >= minimum_detectable_difference(d, alpha, power).difference:
            decided_by = (a, b)
        elif shift > 0 and paired_tests(d, 1.0 - alpha, n_resamples, seed)[0].p <= alpha:
            decided_by = (a, b)  # below its MDE, yet shown: the verdict stands
    needed = questions_for(largest, wide, alpha, power) if largest and decided_by is None else None
    return Decidability(
        n_questions=n, n_runs=r, alpha=alpha, power=power, at_top=top, at_bottom=bottom,
        separating=apart, low=low, high=high, largest=largest,
        detectable=mde if mde is not None and mde.difference > 0 else None,
        decided_by=decided_by, questions_needed=needed,
    )
