"""Two stored runs paired question by question (:func:`paired`, :class:`Pair`): the
pairing that ``report --baseline``, ``--chain``, ``--all-pairs``, ``--gate``, ``compare``
and the Python API share. Every pair's interval, p-value and verdict come from the one
paired procedure (:mod:`receval.stats.paired`), corrected over the pairs shown with
:func:`corrected`; fixed and broken questions from :mod:`receval.stats.pairing`."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from receval.core.errors import RunError
from receval.core.settings import BootstrapConfig
from receval.scoring.declared import lower_is_better
from receval.results.stored import Run
from receval.stats.bootstrap import Interval
from receval.stats.corrections import adjusted_levels, correct
from receval.stats.paired import PairedTest, paired_tests, shift_nulls, tested_at
from receval.stats.pairing import align_ids, cutoff, fixed_broken, rows_key
from receval.stats.verdict import Direction, direction


@dataclass(frozen=True)
class Pair:
    """Run B against run A on one metric, over the questions both score."""

    a: str
    b: str
    metric: str
    n_questions: int
    mean_a: float
    mean_b: float
    test: PairedTest  # mean(B - A), its interval and p-value (receval.stats.paired)
    fixed: list[str]  # fixed@k going from A to B (receval.stats.pairing.fixed_broken)
    broken: list[str]  # broken@k
    up: int
    down: int
    same: int
    only_a: int = 0  # questions left out by --intersect
    only_b: int = 0
    d: np.ndarray = field(default=None, repr=False, compare=False)  # per-question B - A, for corrections
    correction: str | None = None  # holm or bh: ``test`` is at the corrected level, ``p_adjusted`` beside it
    p_adjusted: float | None = None

    @property
    def diff(self) -> Interval:
        """mean(B - A) with its paired interval."""
        return self.test.interval

    @property
    def verdict(self) -> Direction:
        """better, worse or not shown, in the measure's direction (receval.stats.verdict)."""
        return direction(higher_is_better=not lower_is_better(self.metric), **self.test.ends)

    @property
    def p(self) -> float:
        """The p-value the verdict reads: corrected when the pair is."""
        return self.test.p if self.p_adjusted is None else self.p_adjusted

    def to_dict(self) -> dict:
        return {
            "metric": self.metric,
            "n_questions": self.n_questions,
            "diff": self.diff.mean,
            "ci": [self.diff.lo, self.diff.hi],
            "ci_open": [self.test.lo_open, self.test.hi_open],
            "level": self.test.level,
            "p": self.test.p,
            "p_adjusted": self.p_adjusted,
            "correction": self.correction,
            "verdict": str(self.verdict),
            "changed": self.test.changed,
            "null": self.test.null,
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
    if a.table.num_rows == b.table.num_rows and a.ids_digest == b.ids_digest:
        rows = np.arange(a.table.num_rows)
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
    """Each run of ``others`` against ``baseline``, each pair's interval and p-value from
    the paired procedure (pairs over the same questions share its sign vectors). Runs
    over different questions are paired on the shared ones only with ``intersect`` (an
    error naming ``option`` otherwise)."""
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
    tests = grouped_tests([(p["key"], p["diff"]) for p in pending], boot)
    return [
        Pair(
            a=str(baseline.run_dir),
            b=str(p["run"].run_dir),
            metric=metric,
            n_questions=p["n"],
            mean_a=p["mean_a"],
            mean_b=p["mean_b"],
            test=test,
            fixed=p["fixed"],
            broken=p["broken"],
            up=p["up"],
            down=p["down"],
            same=p["same"],
            only_a=p["only_a"],
            only_b=p["only_b"],
            d=p["diff"],
        )
        for p, test in zip(pending, tests)
    ]


def grouped_tests(items: list[tuple[bytes, np.ndarray]], boot: BootstrapConfig) -> list[PairedTest]:
    """One :class:`PairedTest` per ``(question key, differences)`` item: items over the
    same questions (same key) are tested in one call, sharing their sign vectors."""
    groups: dict[bytes, list[int]] = {}
    for i, (key, _) in enumerate(items):
        groups.setdefault(key, []).append(i)
    out: list[PairedTest | None] = [None] * len(items)
    for indices in groups.values():
        found = paired_tests(np.column_stack([items[i][1] for i in indices]), boot.level, boot.n_resamples, boot.seed)
        for i, test in zip(indices, found):
            out[i] = test
    return out  # type: ignore[return-value]


def corrected(pairs: list[Pair], method: str | None, boot: BootstrapConfig) -> list[Pair]:
    """``pairs`` as one family corrected by ``method`` (holm or bh; None: as they are):
    each p-value adjusted, each interval at the level its correction tests it at
    (:func:`receval.stats.corrections.adjusted_levels`), so an adjusted p <= alpha is an
    interval that excludes 0, and the verdicts read the corrected intervals."""
    if method is None or not pairs:
        return pairs
    alpha = 1.0 - boot.level
    family = correct(method, [pair.test.p for pair in pairs])
    levels = adjusted_levels(method, [pair.test.p for pair in pairs], alpha)
    out = []
    for pair, p_adjusted, level in zip(pairs, family.p_adjusted, levels):
        (null,) = shift_nulls(pair.d, boot.n_resamples, boot.seed)
        test = tested_at(null, 1.0 - level, pair.test.changed)
        out.append(replace(pair, test=test, correction=method, p_adjusted=float(p_adjusted)))
    return out


def every_pair(
    runs: list[Run], metric: str, boot: BootstrapConfig, intersect: bool = False, option: str = "intersect=True"
) -> list[Pair]:
    """Every run against every earlier one (``report --all-pairs``): A the earlier run."""
    return [pair for i in range(len(runs) - 1) for pair in paired(runs[i], runs[i + 1:], metric, boot, intersect, option)]
