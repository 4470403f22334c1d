"""The regression gate over stored runs (the rule is :class:`receval.stats.gate.Gate`):
``report RUN --gate BASELINE_RUN`` and :func:`gate` for a test suite."""

from __future__ import annotations

from pathlib import Path

from receval.analysis import filters
from receval.analysis.derived import with_derived
from receval.analysis.pairs import paired
from receval.analysis.settings import bootstrap_settings
from receval.core.settings import BootstrapConfig
from receval.core.errors import RecevalError
from receval.results.discovery import load_one
from receval.results.stored import Run
from receval.stats.gate import Gate, check_margin


def gate_runs(
    run: Run, baseline: Run, metric: str, boot: BootstrapConfig, margin: float = 0.0, intersect: bool = False,
    option: str = "intersect=True",
) -> Gate:
    """The gate over two loaded runs: RUN paired against BASELINE on ``metric``."""
    (pair,) = paired(baseline, [run], metric, boot, intersect, option)
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
    where: dict[str, str] | None = None,
    intersect: bool = False,
    **boot_overrides,
) -> Gate:
    """Load two stored runs and gate RUN against BASELINE: it fails only when the paired
    interval of RUN - BASELINE on ``metric`` lies entirely below ``-margin``
    (``where``: only the questions whose column equals the value)."""
    both = [load_one(run, what="run"), load_one(baseline, what="baseline")]
    both = filters.filter_questions(both, filters.where_pairs(where), option="where")
    both = with_derived(both, [metric], option="metric")
    metric = filters.canonical_measure(metric, both, option="metric")
    boot = bootstrap_settings(both, **boot_overrides)
    return gate_runs(both[0], both[1], metric, boot, margin, intersect)


def split_baseline(
    runs: list[Run], selector: str, option: str = "baseline", narrow: str = "a key=value selector"
) -> tuple[list[Run], Run]:
    """``report RUN --gate BASELINE``: (the one run gated, the baseline run).

    BASELINE is a run directory or ``key=value`` naming one of the runs given."""
    index, baseline = filters.select_one(runs, selector, option=option)
    rest = [r for i, r in enumerate(runs) if i != index]
    if len(rest) != 1:
        raise RecevalError(
            f"{option} {selector}: gate one run against it, not {len(rest)}; name one run "
            f"directory, or narrow a sweep with {narrow}"
        )
    return rest, baseline
