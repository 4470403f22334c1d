"""The number a run returns to a Hydra sweeper: one measure's mean on one split.

``objective: {metric: rr, split: dev}`` in the run config names it. Hydra's Optuna
sweeper (``hydra/sweeper=optuna``) maximises what the task function returns, so
:func:`receval.cli.run.run_one` returns :func:`value` of the run it just stored (or of
the finished run it skipped). The search therefore only ever sees the dev questions;
the test questions stay for ``receval select --report-on test``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from receval.run import metrics
from receval.core.errors import ConfigError, RecevalError


def value(cfg, run_dir: str | Path, required: bool = False) -> float | None:
    """Mean of ``objective.metric`` over the run's ``objective.split`` questions (null:
    all), unanswerable ones left out. When that split is empty: None, or with
    ``required`` (a sweeper that uses the value) a ConfigError saying what to set."""
    import pyarrow.compute as pc  # here: a grid sweep's jobs never need it (see receval.cli.run.run_one)

    from receval.results.door import open_run

    objective = cfg.get("objective")
    if objective is None:
        return None
    try:
        metric = metrics.parse_measure(str(objective.metric)).name
    except ValueError as error:
        raise ConfigError(f"objective.metric={objective.metric}: {error}") from None
    run = open_run(run_dir)
    if metric not in run.table.column_names:  # a token budget's (recall@300tok): derived from the stored ranks
        from receval.analysis.derived import with_derived

        try:
            run = with_derived([run], [metric], option="objective.metric")[0]
        except RecevalError:
            pass
    table = run.table
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
        if required:
            raise ConfigError(
                f"objective.split={objective.split}: no scored question of that split in "
                f"{run_dir}, so the sweeper has nothing to maximise; set objective.split to a "
                "split the questions have, or objective.split=null for all of them"
            )
        return None
    return float(scores.mean())


def sweeper_uses_it() -> bool:
    """True inside a Hydra job launched by a sweeper other than a grid one (Hydra's
    basic sweeper, or receval's built on it), which ignore what jobs return."""
    from hydra.core.hydra_config import HydraConfig

    from receval.run.config import SWEEPER
    from receval.run.hydra_internals import BASIC_SWEEPER

    target = str(HydraConfig.get().sweeper.get("_target_", ""))
    return target not in (SWEEPER["_target_"], BASIC_SWEEPER)


def missing_extra(argv: list[str]) -> str | None:
    """The message for ``hydra/sweeper=optuna`` without its plugin installed, else None."""
    import importlib.util

    if any(arg.replace("hydra.sweeper", "hydra/sweeper").startswith("hydra/sweeper=optuna") for arg in argv):
        if importlib.util.find_spec("hydra_plugins.hydra_optuna_sweeper") is None:
            return (
                "hydra/sweeper=optuna needs the optuna extra: pip install 'receval[optuna]' "
                "(Hydra's Optuna sweeper)"
            )
    return None
