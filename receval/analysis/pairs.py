"""Two stored runs paired question by question (:func:`paired`, :class:`Pair`): the
pairing that ``report --baseline``, ``--chain``, ``--gate``, ``compare`` and the Python
API share (the statistics are :mod:`receval.stats.pairing`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from receval.core.settings import BootstrapConfig
from receval.core.errors import RunError
from receval.results.stored import Run
from receval.stats.bootstrap import Interval
from receval.stats.pairing import align_ids, cutoff, fixed_broken, grouped_intervals, rows_key


@dataclass(frozen=True)
class Pair:
    """Run B against run A on one metric, over the questions both score."""

    a: str
    b: str
    metric: str
    n_questions: int
    mean_a: float
    mean_b: float
    diff: Interval  # mean(B - A) and its paired bootstrap interval
    fixed: list[str]  # fixed@k going from A to B (receval.stats.pairing.fixed_broken)
    broken: list[str]  # broken@k
    up: int
    down: int
    same: int
    only_a: int = 0  # questions left out by --intersect
    only_b: int = 0

    def to_dict(self) -> dict:
        return {
            "metric": self.metric,
            "n_questions": self.n_questions,
            "diff": self.diff.mean,
            "ci": [self.diff.lo, self.diff.hi],
            "fixed": list(self.fixed),
            "broken": list(self.broken),
            "fixed_at": cutoff(self.metric),  # the k of fixed@k and broken@k
            "up": self.up,
            "down": self.down,
            "same": self.same,
            "only_a": self.only_a,
            "only_b": self.only_b,
        }

    def against_baseline(self) -> dict:
        """:meth:`to_dict` with A named the baseline: how the report and the Python API
        list a run against ``--baseline``."""
        return {"baseline": self.a, "run_dir": self.b, "mean_baseline": self.mean_a, "mean": self.mean_b, **self.to_dict()}


def align(a: Run, b: Run, intersect: bool = False, option: str | None = "intersect=True") -> tuple[np.ndarray, np.ndarray, int, int]:
    """Row indices into A and B of their shared questions (A's order), and how many
    questions only A and only B have. Different question sets are an error unless
    ``intersect`` (the message names ``option``, how the caller asks for it)."""
    if len(a.ids) == len(b.ids) and a.ids_digest == b.ids_digest:
        rows = np.arange(len(a.ids))
        return rows, rows, 0, 0
    for run in (a, b):
        if len(set(run.ids)) != len(run.ids):
            raise RunError(f"{run.run_dir}: question ids repeat; cannot pair questions by id")
    rows_a, rows_b, only_a, only_b = align_ids(a.ids, b.ids)
    if (only_a or only_b) and not intersect:
        raise RunError(
            f"{a.run_dir} and {b.run_dir} are over different questions: {only_a} ids only "
            f"in the first, {only_b} only in the second, {len(rows_a)} shared"
            + (f"; pass {option} to pair the shared ones" if option else "")
        )
    if not len(rows_a):
        raise RunError(f"{a.run_dir} and {b.run_dir} share no question ids")
    return rows_a, rows_b, only_a, only_b


def paired(
    baseline: Run, others: list[Run], metric: str, boot: BootstrapConfig, intersect: bool = False,
    option: str = "intersect=True",
) -> list[Pair]:
    """Each run of ``others`` against ``baseline``; every paired interval from one
    bootstrap call per question set (a matrix of per-question differences). Runs over
    different questions are paired on the shared ones only with ``intersect`` (an error
    naming ``option`` otherwise)."""
    rank_a_all = baseline.values("first_relevant_rank")
    values_a_all = baseline.values(metric)
    pending = []
    for run in others:
        rows_a, rows_b, only_a, only_b = align(baseline, run, intersect, option)
        a = values_a_all[rows_a]
        b = run.values(metric)[rows_b]
        scored = ~np.isnan(a) & ~np.isnan(b)
        if not scored.any():
            raise RunError(
                f"{baseline.run_dir} and {run.run_dir}: no question scored in both "
                f"(every shared question has a null {metric})"
            )
        ids = baseline.ids[rows_a][scored]
        a, b = a[scored], b[scored]
        rank_a = rank_a_all[rows_a][scored]
        rank_b = run.values("first_relevant_rank")[rows_b][scored]
        fixed, broken = fixed_broken(metric, a, b, rank_a, rank_b)
        pending.append(
            dict(
                key=rows_key(baseline.ids_digest, rows_a[scored]),
                diff=b - a,
                run=run,
                n=int(scored.sum()),
                mean_a=float(np.mean(a)),
                mean_b=float(np.mean(b)),
                fixed=[str(q) for q in ids[fixed]],
                broken=[str(q) for q in ids[broken]],
                up=int((b > a).sum()),
                down=int((b < a).sum()),
                same=int((b == a).sum()),
                only_a=only_a,
                only_b=only_b,
            )
        )
    intervals = grouped_intervals([(p["key"], p["diff"]) for p in pending], boot)
    return [
        Pair(
            a=str(baseline.run_dir),
            b=str(p["run"].run_dir),
            metric=metric,
            n_questions=p["n"],
            mean_a=p["mean_a"],
            mean_b=p["mean_b"],
            diff=interval,
            fixed=p["fixed"],
            broken=p["broken"],
            up=p["up"],
            down=p["down"],
            same=p["same"],
            only_a=p["only_a"],
            only_b=p["only_b"],
        )
        for p, interval in zip(pending, intervals)
    ]


def every_pair(
    runs: list[Run], metric: str, boot: BootstrapConfig, intersect: bool = False, option: str = "intersect=True"
) -> list[Pair]:
    """Every run against every earlier one (``report --all-pairs``): A the earlier run."""
    return [pair for i in range(len(runs) - 1) for pair in paired(runs[i], runs[i + 1:], metric, boot, intersect, option)]
