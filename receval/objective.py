"""The number a run returns to a Hydra sweeper: one measure's mean on one split.

``objective: {metric: rr, split: dev}`` in the run config names it. Hydra's Optuna
sweeper (``hydra/sweeper=optuna``) maximises what the task function returns, so
:func:`receval.cli.run_one` returns :func:`value` of the run it just stored (or of
the finished run it skipped). The search therefore only ever sees the dev questions;
the test questions stay for ``python -m receval.select --report-on test``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.compute as pc

from receval import metrics
from receval.errors import ConfigError
from receval.runs import read_results, warn


def value(cfg, run_dir: str | Path) -> float | None:
    """Mean of ``objective.metric`` over the run's ``objective.split`` questions (null:
    all), unanswerable ones left out; None (with a warning) when that split is empty."""
    objective = cfg.get("objective")
    if objective is None:
        return None
    try:
        metric = metrics.parse_measure(str(objective.metric)).name
    except ValueError as error:
        raise ConfigError(f"objective.metric={objective.metric}: {error}") from None
    table = read_results(run_dir).table
    if metric not in table.column_names:
        raise ConfigError(
            f"objective.metric={objective.metric}: not stored by this run; add its cutoff "
            "to metrics.ks (e.g. metrics.ks=[1,3,5,10])"
        )
    if objective.split is not None:
        table = table.filter(pc.fill_null(pc.equal(table.column("split"), str(objective.split)), False))
    scores = np.asarray(table.column(metric).to_pylist(), dtype=float)
    scores = scores[~np.isnan(scores)]
    if scores.size == 0:
        warn(
            f"objective: no scored question of split {objective.split!r} in {run_dir}; "
            "the run returns no objective (set objective.split=null to use every question)"
        )
        return None
    return float(scores.mean())
