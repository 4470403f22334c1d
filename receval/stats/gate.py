"""A noise-aware regression gate: ``report RUN --gate BASELINE_RUN``.

Fails (exit 1) only when the paired bootstrap interval of RUN - BASELINE lies
entirely below ``-margin``: a drop the question sample cannot explain. A fixed
floor a few questions below today's score fails on noise; this does not.

From pytest (:func:`receval.analysis.gate`)::

    from receval import analysis
    result = analysis.gate("runs/new", "runs/baseline", metric="rr", margin=0.0)
    assert result.passed, result.line
"""

from __future__ import annotations

from dataclasses import dataclass

from receval.core.errors import RecevalError
from receval.core.vocabulary import measure_label
from receval.stats.bootstrap import Interval


@dataclass(frozen=True)
class Gate:
    run: str
    baseline: str
    metric: str
    margin: float
    n_questions: int
    mean_run: float
    mean_baseline: float
    diff: Interval  # mean(RUN - BASELINE) with its paired interval
    level: float

    @property
    def passed(self) -> bool:
        return not self.diff.hi < -self.margin

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    @property
    def line(self) -> str:
        label = measure_label(self.metric)
        verdict = "pass" if self.passed else "FAIL"
        why = (
            f"interval entirely below {0.0 - self.margin:g}" if not self.passed
            else f"interval reaches {0.0 - self.margin:g} or above"
        )
        return (
            f"gate {verdict}: {label} {self.mean_run:.3f} vs baseline {self.mean_baseline:.3f}, "
            f"diff {self.diff.mean:+.3f} [{self.diff.lo:+.3f}, {self.diff.hi:+.3f}] "
            f"({self.level:.0%} paired CI, {self.n_questions} questions; {why})"
        )

    def to_dict(self) -> dict:
        return {
            "run": self.run, "baseline": self.baseline, "metric": self.metric,
            "margin": self.margin, "n_questions": self.n_questions,
            "mean": self.mean_run, "mean_baseline": self.mean_baseline,
            "diff": self.diff.mean, "ci": [self.diff.lo, self.diff.hi],
            "passed": self.passed,
        }


def check_margin(margin: float, option: str = "margin") -> float:
    """``margin`` as a float >= 0 (the tolerated drop); an error naming ``option`` otherwise."""
    if not margin >= 0:
        raise RecevalError(f"{option} {margin}: use a difference >= 0, e.g. 0.02")
    return float(margin)
