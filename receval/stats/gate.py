"""A regression gate with three outcomes: ``report RUN --gate BASELINE_RUN [--margin M]``.

The paired interval of ``mean(RUN - BASELINE)`` on one measure is read by
:func:`receval.stats.verdict.gate_outcome`, in the measure's own direction:

- **pass** (exit 0): RUN is shown not worse than the baseline by more than the margin
  (the whole interval lies on the better side of ``-margin``), or no question scored
  differently at all;
- **fail** (exit 1): RUN is shown worse (the whole interval lies on the worse side of 0)
  and not shown within the margin;
- **undecided** (exit 3): neither is shown: the interval reaches both 0 and ``-margin``.
  More questions, or a margin stated in advance, decide it.

A shown drop never passes unless the margin tolerates it, and a question set too small
to tell the runs apart says so rather than passing. From pytest
(:func:`receval.analysis.gate`)::

    from receval import analysis
    result = analysis.gate("runs/new", "runs/baseline", metric="rr", margin=0.02)
    assert result.passed, result.line
"""

from __future__ import annotations

from dataclasses import dataclass

from receval.core.errors import RecevalError
from receval.core.numeric import fmt_ci, fmt_p
from receval.scoring.declared import lower_is_better, measure_label
from receval.stats.bootstrap import Interval
from receval.stats.paired import PairedTest
from receval.stats.verdict import GateOutcome, gate_outcome

SHOUTED = {GateOutcome.passed: "pass", GateOutcome.failed: "FAIL", GateOutcome.undecided: "UNDECIDED"}


@dataclass(frozen=True)
class Gate:
    """RUN gated against BASELINE on ``metric``: the paired procedure's test of the
    difference (its interval with both ends checked at 0 and at the margin:
    :mod:`receval.stats.paired`), the per-question counts (what
    :func:`receval.analysis.pairs.paired` measured), and the outcome read off them."""

    run: str
    baseline: str
    metric: str
    margin: float
    n_questions: int
    mean_run: float
    mean_baseline: float
    test: PairedTest  # mean(RUN - BASELINE), its interval and p-value
    level: float
    up: int = 0  # questions scoring higher in RUN than in BASELINE
    down: int = 0  # lower
    same: int = 0  # exactly the same

    @property
    def diff(self) -> Interval:
        """mean(RUN - BASELINE) with its paired interval."""
        return self.test.interval

    @property
    def bounds(self) -> tuple[float, ...]:
        """Where the verdict reads the interval: 0, and the margin on the worse side."""
        return (0.0, -self.margin if self.higher_is_better else self.margin)

    @property
    def higher_is_better(self) -> bool:
        return not lower_is_better(self.metric)

    @property
    def unchanged(self) -> bool:
        """Every paired per-question difference is exactly 0: nothing moved to infer from."""
        return self.up == 0 and self.down == 0

    @property
    def outcome(self) -> GateOutcome:
        return gate_outcome(self.diff.lo, self.diff.hi, self.margin, self.higher_is_better, self.unchanged,
                            **{k: v for k, v in self.test.ends.items() if k not in ("lo", "hi")})

    @property
    def passed(self) -> bool:
        return self.outcome is GateOutcome.passed

    @property
    def exit_code(self) -> int:
        """0 pass, 1 fail, 3 undecided."""
        return self.outcome.exit_code

    @property
    def passing_margin(self) -> float:
        """The margin above which this interval would pass: how far it reaches on the worse side of 0."""
        worst = self.diff.lo if self.higher_is_better else -self.diff.hi
        return max(0.0, -worst)

    @property
    def why(self) -> str:
        """The outcome's reason, in the words of the rule and the measure's direction."""
        worse, better = ("below", "above") if self.higher_is_better else ("above", "below")
        bound = f"{(0.0 - self.margin if self.higher_is_better else self.margin):+g}" if self.margin else "0"
        outcome = self.outcome
        if outcome is GateOutcome.passed and self.unchanged:
            return f"no question scored differently on {measure_label(self.metric)}"
        if outcome is GateOutcome.passed:
            return f"shown not worse by more than the margin: the whole interval lies {better} {bound}"
        if outcome is GateOutcome.failed:
            shown = f"shown worse: the whole interval lies {worse} 0"
            return shown if not self.margin else f"{shown} and reaches {bound}, so it is not shown within the margin"
        reaches, within = (f"both 0 and {bound}", "within the margin") if self.margin else ("0", "not worse")
        return (
            f"not decided: the interval reaches {reaches}, so these {self.n_questions} questions show neither "
            f"that the run is worse nor that it is {within}; more questions, or a margin stated in advance, "
            "decide it " + (f"(this interval would pass at a margin above {self.passing_margin:.3f})"
                            if self.passing_margin < float("inf") else "(no margin would pass this interval)")
        )

    @property
    def line(self) -> str:
        """One line for a CI log: outcome and exit code, the means, the interval, the margin and why."""
        return (
            f"gate {SHOUTED[self.outcome]} (exit {self.exit_code}): {measure_label(self.metric)} "
            f"{self.mean_run:.3f} vs baseline {self.mean_baseline:.3f}, diff {self.diff.mean:+.3f} "
            f"{fmt_ci(self.diff.lo, self.diff.hi, signed=True, **dict(zip(('lo_open', 'hi_open'), self.test.shown_open(self.bounds))))} "
            f"(p {fmt_p(self.test.p, 1.0 - self.level)}; {self.level:.0%} paired CI, {self.n_questions} "
            f"question{'s' if self.n_questions != 1 else ''}: {self.up} up, {self.down} down, {self.same} same); "
            f"margin {self.margin:g}: {self.why}"
        )

    def to_dict(self) -> dict:
        return {
            "outcome": self.outcome.value, "exit_code": self.exit_code, "passed": self.passed,
            "run": self.run, "baseline": self.baseline, "metric": self.metric,
            "higher_is_better": self.higher_is_better, "margin": self.margin,
            "n_questions": self.n_questions, "mean": self.mean_run, "mean_baseline": self.mean_baseline,
            "diff": self.diff.mean, "ci": [self.diff.lo, self.diff.hi],
            "ci_open": [self.test.lo_open, self.test.hi_open], "p": self.test.p, "level": self.level,
            "up": self.up, "down": self.down, "same": self.same, "unchanged": self.unchanged,
            "why": self.why, "line": self.line,
        }


def check_margin(margin: float, option: str = "margin") -> float:
    """``margin`` as a float >= 0 (the tolerated drop); an error naming ``option`` otherwise."""
    if not margin >= 0 or margin == float("inf"):
        raise RecevalError(f"{option} {margin}: use a difference >= 0, e.g. 0.02")
    return float(margin)
