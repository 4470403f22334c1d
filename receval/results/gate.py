"""A noise-aware regression gate: ``report RUN --gate BASELINE_RUN``.

Fails (exit 1) only when the paired bootstrap interval of RUN - BASELINE lies
entirely below ``-margin``: a drop the question sample cannot explain. A fixed
floor a few questions below today's score fails on noise; this does not.

From pytest::

    from receval.results.gate import gate
    result = gate("runs/new", "runs/baseline", metric="rr", margin=0.0)
    assert result.passed, result.line
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from receval.bootstrap import Interval
from receval.core.errors import RecevalError
from receval.results import selection
from receval.results.derived import with_derived
from receval.results.discovery import load_one
from receval.results.pairing import bootstrap_settings, paired
from receval.results.selection import measure_label


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


def check_margin(margin: float) -> float:
    if not margin >= 0:
        raise RecevalError(f"--margin {margin}: use a difference >= 0, e.g. 0.02")
    return float(margin)


def gate_runs(run, baseline, metric: str, boot, margin: float = 0.0, intersect: bool = False) -> Gate:
    """The gate over two loaded runs (:class:`receval.results.Run`)."""
    (pair,) = paired(baseline, [run], metric, boot, intersect)
    return Gate(
        run=str(run.run_dir), baseline=str(baseline.run_dir), metric=metric,
        margin=check_margin(margin), n_questions=pair.n_questions, mean_run=pair.mean_b,
        mean_baseline=pair.mean_a, diff=pair.diff, level=boot.level,
    )


def gate(
    run: str | Path,
    baseline: str | Path,
    metric: str = "rr",
    margin: float = 0.0,
    where: list[tuple[str, str]] | None = None,
    intersect: bool = False,
    **boot_overrides,
) -> Gate:
    """Load two stored runs and gate RUN against BASELINE (see the module docstring)."""
    both = [load_one(run, what="RUN"), load_one(baseline, what="--gate")]
    both = selection.filter_questions(both, list(where or []))
    both = with_derived(both, [metric], option="--metric")
    metric = selection.canonical_measure(metric, both, option="--metric")
    boot = bootstrap_settings(both, **boot_overrides)
    return gate_runs(both[0], both[1], metric, boot, margin, intersect)


def split_baseline(runs: list, selector: str) -> tuple[list, object]:
    """``report RUN --gate BASELINE``: (the one run gated, the baseline run).

    BASELINE is a run directory or ``key=value`` naming one of the runs given."""
    index, baseline = selection.select_one(runs, selector, option="--gate")
    rest = [r for i, r in enumerate(runs) if i != index]
    if len(rest) != 1:
        raise RecevalError(
            f"--gate {selector}: gate one run against it, not {len(rest)}; name one run "
            "directory, or narrow a sweep with --runs KEY=VALUE"
        )
    return rest, baseline
