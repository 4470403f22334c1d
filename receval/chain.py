"""Stage by stage: ``python -m receval.report RUNS --chain`` pairs each run with the
one before it, in the order given (keyword -> vector -> hybrid -> hybrid + re-rank),
so each step's gain is a paired difference with its interval and the questions it
fixed and broke.

Fixed and broken follow the metric (one rule, :func:`fixed_broken`): a question is
fixed at k when the metric at cutoff k goes from 0 in the earlier run to above 0 in
the later one (``fixed@3`` for ``hit@3``, ``recall@3``, ``ndcg@3``...), broken the
reverse. ``rr`` has no cutoff, so for it they are named ``fixed@1``/``broken@1``: a
relevant section first in one run and not in the other. Either way a fixed question
also went up on the metric, and a broken one down.
"""

from __future__ import annotations

import re

import numpy as np

from receval import tables

_CUTOFF = re.compile(r"@(\d+)$")


def cutoff(metric: str) -> int:
    """The k of fixed@k for ``metric``: its cutoff (``hit@3``, ``rr@3``, ``token_recall@3``),
    or 1 for rr and for columns without one."""
    match = _CUTOFF.search(metric.strip())
    return int(match[1]) if match else 1


def fixed_broken(metric: str, a: np.ndarray, b: np.ndarray, rank_a: np.ndarray, rank_b: np.ndarray):
    """Masks of the questions fixed and broken going from run A to run B on ``metric``
    (``a``, ``b``: its values; ``rank_*``: first relevant rank, NaN when none)."""
    if metric.strip().lower() in ("rr", "mrr"):  # rr: first relevant at rank 1
        top_a, top_b = rank_a == 1, rank_b == 1
        return top_b & ~top_a, top_a & ~top_b
    return (a == 0) & (b > 0), (a > 0) & (b == 0)


def chain_pairs(loaded: list, metric: str, boot, intersect: bool = False) -> list:
    """Each run against the one before it (``compare.paired`` per step)."""
    from receval.results.pairing import paired

    return [paired(earlier, [later], metric, boot, intersect)[0] for earlier, later in zip(loaded, loaded[1:])]


def chain_table(report) -> tables.Table | None:
    """One row per step: the two runs (rows of the main table), their means, the difference with its interval,
    up / down, and the fixed and broken question ids."""
    steps = getattr(report, "chain", None)
    if not steps:
        return None
    from receval.results.selection import measure_label
    from receval.tables.report import _ids_cell

    label = measure_label(report.metric)
    k = cutoff(report.metric)
    level = f"{report.boot.level:.0%} CI"
    index = {run.run_dir: i for i, run in enumerate(report.runs)}
    rows = []
    for step in steps:
        a, b = index[step.a], index[step.b]
        rows.append([
            f"#{a} -> #{b}", tables.fmt(step.mean_a), tables.fmt(step.mean_b),
            tables.fmt_signed(step.diff.mean), tables.fmt_ci(step.diff.lo, step.diff.hi, signed=True),
            str(step.up), str(step.down), _ids_cell(step.fixed), _ids_cell(step.broken),
        ])
    return tables.Table(
        columns=["step", f"{label} before", f"{label} after", "diff", level, "up", "down",
                 f"fixed@{k}", f"broken@{k}"],
        rows=rows,
        align=["l", "r", "r", "r", "r", "r", "r", "l", "l"],
        wrap={7, 8},
        title=f"Stage by stage: each run against the one before it ({label}, paired)",
        note=f"fixed@{k}: {fixed_note(report.metric)}; broken@{k}: the reverse",
    )


def fixed_note(metric: str, earlier: str = "the run before", later: str = "the step's run") -> str:
    """What fixed@k means for ``metric``, going from ``earlier`` to ``later``."""
    if metric.strip().lower() in ("rr", "mrr"):
        return f"a relevant section first in {later}, not in {earlier}"
    return f"{metric} 0 in {earlier}, above 0 in {later}"
