"""Pairing runs by question and bootstrap intervals: the statistics that the report,
compare and the Python API share.

- :class:`BootSettings` / :func:`bootstrap_settings`: the saved ``bootstrap`` config,
  overridable.
- :func:`grouped_intervals`: many means' intervals, one bootstrap call per question set.
- :func:`paired`: runs against a baseline question by question (:class:`Pair`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from receval import config as config_schema
from receval.bootstrap import MAX_RESAMPLES, Interval, confidence_intervals
from receval.chain import cutoff, fixed_broken
from receval.core.errors import RecevalError, RunError
from receval.results.discovery import warn
from receval.results.stored import Run


@dataclass(frozen=True)
class BootSettings:
    n_resamples: int = 2000
    level: float = 0.95
    seed: int = 0
    method: str = "percentile"

    def kwargs(self) -> dict:
        return {
            "n_resamples": self.n_resamples,
            "level": self.level,
            "seed": self.seed,
            "method": self.method,
        }

    def describe(self) -> str:
        return (
            f"{self.level:.0%} CI: {self.method} bootstrap over questions, "
            f"{self.n_resamples} resamples, seed {self.seed}"
        )


def bootstrap_settings(
    runs: list[Run],
    n_resamples: int | None = None,
    seed: int | None = None,
    level: float | None = None,
    method: str | None = None,
) -> BootSettings:
    """The first run's saved ``bootstrap`` config, with command-line overrides."""
    defaults = config_schema.BootstrapConfig()
    saved = [r.config.get("bootstrap") or {} for r in runs]
    first = saved[0] if saved else {}
    values = {
        "n_resamples": first.get("n_resamples", defaults.n_resamples),
        "level": first.get("level", defaults.level),
        "seed": first.get("seed", defaults.seed),
        "method": first.get("method", defaults.method),
    }
    given = {"n_resamples": n_resamples, "seed": seed, "level": level, "method": method}
    differ = [
        k for k in values if given[k] is None and len({repr(s.get(k, values[k])) for s in saved}) > 1
    ]
    if differ:
        warn(
            "runs differ in saved bootstrap settings (" + ", ".join(differ) + "); using the "
            f"first run's ({runs[0].run_dir}); set them with --n-resamples/--seed/--level"
        )
    values.update({k: v for k, v in given.items() if v is not None})
    problems = []
    if not isinstance(values["n_resamples"], int) or values["n_resamples"] < 1:
        problems.append(f"n_resamples={values['n_resamples']}: use an integer >= 1")
    elif values["n_resamples"] > MAX_RESAMPLES:
        problems.append(
            f"n_resamples={values['n_resamples']}: use at most {MAX_RESAMPLES:,} (2000 to 10000 "
            "is usual; every resample is held in memory)"
        )
    if not isinstance(values["seed"], int) or values["seed"] < 0:
        problems.append(f"seed={values['seed']}: use an integer >= 0")
    if not isinstance(values["level"], int | float) or not 0 < values["level"] < 1:
        problems.append(f"level={values['level']}: use a value between 0 and 1, e.g. 0.95")
    if values["method"] not in ("percentile", "bca"):
        problems.append(f"method={values['method']!r}: use percentile or bca")
    if problems:
        raise RecevalError(["bootstrap " + p for p in problems])
    return BootSettings(
        n_resamples=int(values["n_resamples"]),
        level=float(values["level"]),
        seed=int(values["seed"]),
        method=str(values["method"]),
    )


def grouped_intervals(items: list[tuple[bytes, np.ndarray]], boot: BootSettings) -> list[Interval]:
    """One interval per ``(question key, values)`` item, one bootstrap call per key.

    Items with the same key are over the same questions in the same order, so they
    are stacked into one ``(n_questions, n_items)`` matrix and resampled with the
    same question draws; equal columns are resampled once and share the interval
    (BLAS may round the same column differently at another position). A lone column is duplicated before the call: a
    one-column matrix takes another BLAS path whose last bits differ, and a run's
    interval should not depend on which other runs share its report. The mean is
    ``np.mean`` of the column itself (not the bootstrap module's centred mean), so
    it equals the mean of the stored values exactly.
    """
    groups: dict[bytes, list[int]] = {}
    for i, (key, _) in enumerate(items):
        groups.setdefault(key, []).append(i)
    out: list[Interval | None] = [None] * len(items)
    for indices in groups.values():
        unique: dict[bytes, int] = {}  # equal columns (an imported copy of a run) share one
        column_of = [unique.setdefault(items[i][1].tobytes(), len(unique)) for i in indices]
        first = {c: i for i, c in reversed(list(zip(indices, column_of)))}
        matrix = np.column_stack([items[first[c]][1] for c in range(len(unique))])
        if matrix.shape[1] == 1:
            matrix = np.column_stack([matrix, matrix])
        intervals = confidence_intervals(matrix, **boot.kwargs())
        for i, c in zip(indices, column_of):
            out[i] = Interval(float(np.mean(items[i][1])), intervals[c].lo, intervals[c].hi)
    return out  # type: ignore[return-value]


def rows_key(run: Run, rows: np.ndarray) -> bytes:
    """Identifies the questions ``run.ids[rows]`` (which, in which order) cheaply."""
    digest = hashlib.blake2b(run.ids_digest, digest_size=16)
    digest.update(np.asarray(rows, dtype=np.int64).tobytes())
    return digest.digest()



def mask_key(run: Run, mask: np.ndarray) -> bytes:
    """Identifies the questions ``run.ids[mask]`` cheaply (see :func:`rows_key`)."""
    digest = hashlib.blake2b(run.ids_digest, digest_size=16)
    digest.update(np.packbits(mask).tobytes())
    digest.update(str(len(mask)).encode())
    return digest.digest()


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
    fixed: list[str]  # fixed@k going from A to B (receval.chain.fixed_broken)
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


def align(a: Run, b: Run, intersect: bool = False) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Row indices into A and B of their shared questions (A's order), and how many
    questions only A and only B have. Different question sets are an error unless
    ``intersect``."""
    if len(a.ids) == len(b.ids) and a.ids_digest == b.ids_digest:
        rows = np.arange(len(a.ids))
        return rows, rows, 0, 0
    for run in (a, b):
        if len(set(run.ids)) != len(run.ids):
            raise RunError(f"{run.run_dir}: question ids repeat; cannot pair questions by id")
    index_b = {qid: i for i, qid in enumerate(b.ids)}
    rows_a = [i for i, qid in enumerate(a.ids) if qid in index_b]
    rows_b = [index_b[a.ids[i]] for i in rows_a]
    only_a = len(a.ids) - len(rows_a)
    only_b = len(b.ids) - len(rows_b)
    if (only_a or only_b) and not intersect:
        raise RunError(
            f"{a.run_dir} and {b.run_dir} are over different questions: {only_a} ids only "
            f"in the first, {only_b} only in the second, {len(rows_a)} shared; pass "
            "--intersect to pair the shared ones"
        )
    if not rows_a:
        raise RunError(f"{a.run_dir} and {b.run_dir} share no question ids")
    return np.asarray(rows_a), np.asarray(rows_b), only_a, only_b


def paired(
    baseline: Run, others: list[Run], metric: str, boot: BootSettings, intersect: bool = False
) -> list[Pair]:
    """Each run of ``others`` against ``baseline``; every paired interval from one
    bootstrap call per question set (a matrix of per-question differences)."""
    rank_a_all = baseline.values("first_relevant_rank")
    values_a_all = baseline.values(metric)
    pending = []
    for run in others:
        rows_a, rows_b, only_a, only_b = align(baseline, run, intersect)
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
                key=rows_key(baseline, rows_a[scored]),
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
