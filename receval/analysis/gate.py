"""The regression gate over stored runs (the rule and its three outcomes are
:class:`receval.stats.gate.Gate`): ``report RUN --gate BASELINE_RUN`` and :func:`gate`
for a test suite. The gate reads what :func:`receval.analysis.pairs.paired` measures
(the paired interval and the per-question counts) and computes no interval of its own."""

from __future__ import annotations

from pathlib import Path

from receval.analysis import filters
from receval.analysis.derived import with_derived
from receval.analysis.pairs import paired
from receval.analysis.settings import bootstrap_settings
from receval.core.settings import BootstrapConfig
from receval.core.errors import RecevalError
from receval.results.door import open_run
from receval.results.stored import Run
from receval.scoring.declared import lower_is_better
from receval.stats.gate import Gate, check_margin
from receval.stats.paired import shift_nulls, tested_at


def gate_runs(
    run: Run, baseline: Run, metric: str, boot: BootstrapConfig, margin: float = 0.0, intersect: bool = False,
    option: str = "intersect=True",
) -> Gate:
    """The gate over two loaded runs: RUN paired against BASELINE on ``metric``."""
    margin = check_margin(margin)
    (pair,) = paired(baseline, [run], metric, boot, intersect, option)
    # the same test, its ends checked at the margin too (an end on it reads as the p-value there says)
    (null,) = shift_nulls(pair.d, boot.n_resamples, boot.seed)
    bound = -margin if not lower_is_better(metric) else margin
    test = tested_at(null, boot.level, pair.test.changed, bounds=(0.0, bound))
    return Gate(
        run=str(run.run_dir), baseline=str(baseline.run_dir), metric=metric,
        margin=margin, n_questions=pair.n_questions, mean_run=pair.mean_b,
        mean_baseline=pair.mean_a, test=test, level=boot.level,
        up=pair.up, down=pair.down, same=pair.same,
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
    """Load two stored runs and gate RUN against BASELINE on ``metric``: a
    :class:`~receval.stats.gate.Gate` whose ``outcome`` is pass, fail or undecided
    (``.exit_code`` 0, 1, 3; ``.passed``; ``.line`` says why), read off the paired
    interval of RUN - BASELINE at ``margin`` (``where``: only the questions whose column
    equals the value)."""
    both = [open_run(run, what="run"), open_run(baseline, what="baseline")]
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
    if not rest:
        raise RecevalError(
            f"{option} {selector}: names the only run given; give the run to gate as well "
            f"(e.g. report NEW_RUN {option} {selector})"
        )
    if len(rest) != 1:
        raise RecevalError(
            f"{option} {selector}: gate one run against it, not {len(rest)}; name one run "
            f"directory, or narrow a sweep with {narrow}"
        )
    return rest, baseline
