"""Judgment holes: how much of what the runs shown retrieved carries a label at all.

A run is scored only on the units its labels know; an unlabelled unit counts as not
relevant. When the labels cover little of a run's top k (a synthetic question set
labels one passage per question), its scores measure agreement with those few labels,
and a run that retrieves many unlabelled units is punished for them whether they
answer the question or not. The report says so, from the stored ``judged@k`` column
(:mod:`receval.metrics`):

- **low**: a run's mean judged@k below :data:`LOW_JUDGED` (0.5) at the largest k the
  runs store: more than half of what it shows there is unlabelled.
- **far apart**: two runs' mean share of unlabelled units at that k differs by more
  than :data:`UNJUDGED_GAP` (0.2, i.e. 2 more unlabelled units in 10).

The remedy is to pool and judge what the runs retrieved (``python -m receval.pool``,
``python -m receval.judge``) and re-score (``report --labels``).
"""

from __future__ import annotations

import numpy as np

from receval.results.stored import Run

LOW_JUDGED = 0.5
UNJUDGED_GAP = 0.2


def judged_column(runs: list[Run]) -> str | None:
    """The ``judged@k`` column every run holds, at the largest such k (None: a run made
    before the column existed lacks it)."""
    shared = None
    for run in runs:
        ks = {int(name.split("@")[1]) for name in run.table.column_names if name.startswith("judged@")}
        shared = ks if shared is None else shared & ks
    return f"judged@{max(shared)}" if shared else None


def judged_cautions(runs: list[Run], labels: list[str]) -> list[str]:
    """The report's notes on judgment holes (see the module docstring); none when the
    runs lack ``judged@k`` or are well judged."""
    column = judged_column(runs)
    if column is None or not runs:
        return []
    means = np.array([np.nanmean(run.values(column)) if run.table.num_rows else np.nan for run in runs])
    notes = []
    low = [f"#{i} {labels[i]} {means[i]:.2f}" for i in np.flatnonzero(means < LOW_JUDGED)]
    if low:
        notes.append(
            f"{column} below {LOW_JUDGED} ({', '.join(low)}): most of what these runs show is unlabelled and "
            "counted as not relevant; pool and judge it (python -m receval.pool, receval.judge) and "
            "re-score with --labels"
        )
    if len(runs) > 1 and np.isfinite(means).all():
        most, least = int(np.argmin(means)), int(np.argmax(means))
        if means[least] - means[most] > UNJUDGED_GAP:
            notes.append(
                f"#{most} {labels[most]} retrieved far more unlabelled units than #{least} {labels[least]} "
                f"(unlabelled share of the top {column.split('@')[1]}: {1 - means[most]:.2f} vs "
                f"{1 - means[least]:.2f}); their difference may be the labels', not the retrieval's"
            )
    return notes
