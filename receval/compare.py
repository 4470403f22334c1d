"""Compare two stored runs question by question: ``python -m receval.compare A B``.

::

    python -m receval.compare runs/2026-11-29/10-00-00/0 runs/2026-11-30/09-12-44
    python -m receval.compare A B --metric hit@3 --split test --format json

The runs may come from any sweeps. Questions are paired by id; runs over different
question sets are refused (naming how many ids differ) unless ``--intersect``.
Reported: mean of A, mean of B, ``diff`` = mean(B - A) over the questions both
score (unanswerable ones left out), its paired bootstrap interval (the questions
are resampled once, so how hard a question is cancels out), the ids of questions
``fixed@k`` and ``broken@k`` (the metric at cutoff k from 0 to above 0 and the reverse;
for rr, first relevant at rank 1 or not: :func:`receval.chain.fixed_broken`),
and how many questions went up, down or stayed the same on the metric.

The pairing here (:func:`paired`) is also what ``receval.report --baseline`` uses.
Exit status 0, or 2 with one line for a user error.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from receval import outputs
from receval.chain import cutoff, fixed_broken, fixed_note
from receval import runs as runs_mod
from receval import tables
from receval.bootstrap import Interval, confidence_intervals
from receval.errors import RunError, exit_on_error
from receval.runs import BootSettings, Run
from receval.store import atomic_write

FORMATS = ("table", "markdown", "csv", "json", "latex")


# ----------------------------------------------------------------- intervals


def grouped_intervals(items: list[tuple[bytes, np.ndarray]], boot: BootSettings) -> list[Interval]:
    """One interval per ``(question key, values)`` item, one bootstrap call per key.

    Items with the same key are over the same questions in the same order, so they
    are stacked into one ``(n_questions, n_items)`` matrix and resampled with the
    same question draws. A lone column is duplicated before the call: a
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
        matrix = np.column_stack([items[i][1] for i in indices])
        if matrix.shape[1] == 1:
            matrix = np.column_stack([matrix, matrix])
        intervals = confidence_intervals(matrix, **boot.kwargs())
        for i, interval in zip(indices, intervals):
            out[i] = Interval(float(np.mean(items[i][1])), interval.lo, interval.hi)
    return out  # type: ignore[return-value]


def rows_key(run: Run, rows: np.ndarray) -> bytes:
    """Identifies the questions ``run.ids[rows]`` (which, in which order) cheaply."""
    digest = hashlib.blake2b(run.ids_digest, digest_size=16)
    digest.update(np.asarray(rows, dtype=np.int64).tobytes())
    return digest.digest()


# ----------------------------------------------------------------- pairing


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


# ----------------------------------------------------------------- comparison


@dataclass(frozen=True)
class Comparison(tables.Rendered):
    pair: Pair
    params: dict[str, list[str]]  # differing config values: short name -> [A, B]
    boot: BootSettings
    where: list[tuple[str, str]]

    def to_dict(self) -> dict:
        p = self.pair
        return {
            "a": p.a,
            "b": p.b,
            "params": self.params,
            "mean_a": p.mean_a,
            "mean_b": p.mean_b,
            **p.to_dict(),
            "where": {c: v for c, v in self.where},
            "bootstrap": self.boot.kwargs(),
        }

    def header_lines(self) -> list[str]:
        p = self.pair
        fv = runs_mod.format_value
        params = "; ".join(f"{k}: {fv(a)} -> {fv(b)}" for k, (a, b) in self.params.items())
        lines = [
            f"A {p.a}",
            f"B {p.b}",
            f"config: {params}" if params else "config: identical",
            f"{p.n_questions} questions scored in both"
            + (f" (where {', '.join(f'{c}={v}' for c, v in self.where)})" if self.where else "")
            + (f"; {p.only_a} only in A and {p.only_b} only in B left out" if p.only_a or p.only_b else "")
            + f"; {self.boot.describe()}",
        ]
        return lines

    def tables(self) -> list[tables.Table]:
        p = self.pair
        level = f"{self.boot.level:.0%} CI"
        label = runs_mod.measure_label(p.metric)
        main = tables.Table(
            columns=["metric", "A", "B", "B - A", level, "up", "down", "same"],
            rows=[[
                label, tables.fmt(p.mean_a), tables.fmt(p.mean_b), tables.fmt_signed(p.diff.mean),
                tables.fmt_ci(p.diff.lo, p.diff.hi, signed=True), str(p.up), str(p.down), str(p.same),
            ]],
        )
        ids = tables.Table(
            columns=["", "n", "question ids"],
            rows=[
                [f"fixed@{cutoff(p.metric)}", str(len(p.fixed)), " ".join(p.fixed) or "-"],
                [f"broken@{cutoff(p.metric)}", str(len(p.broken)), " ".join(p.broken) or "-"],
            ],
            align=["l", "r", "l"],
            note=f"fixed@{cutoff(p.metric)}: {fixed_note(p.metric)} (A -> B); broken: the reverse",
            wrap={2},
        )
        return [main, ids]

    def to_csv(self) -> str:
        p = self.pair
        return tables.to_csv(
            ["a", "b", "metric", "n_questions", "mean_a", "mean_b", "diff", "ci_lo", "ci_hi",
             "up", "down", "same", "fixed", "broken"],
            [[p.a, p.b, p.metric, p.n_questions, p.mean_a, p.mean_b, p.diff.mean, p.diff.lo,
              p.diff.hi, p.up, p.down, p.same, " ".join(p.fixed), " ".join(p.broken)]],
        )




def compare(
    a: str | Path,
    b: str | Path,
    metric: str = "rr",
    intersect: bool = False,
    where: list[tuple[str, str]] | None = None,
    n_resamples: int | None = None,
    seed: int | None = None,
    level: float | None = None,
    method: str | None = None,
) -> Comparison:
    """Pair run B against run A by question id (see the module docstring)."""
    run_a = runs_mod.load_one(a, what="A")
    run_b = runs_mod.load_one(b, what="B")
    both = runs_mod.filter_questions([run_a, run_b], list(where or []))
    metric = runs_mod.canonical_measure(metric, both, option="--metric")
    fa = run_a.metadata.get("dataset_fingerprint")
    fb = run_b.metadata.get("dataset_fingerprint")
    if fa and fb and fa != fb:
        runs_mod.warn("A and B were run on different dataset files (fingerprints differ)")
    boot = runs_mod.bootstrap_settings(both, n_resamples, seed, level, method)
    (pair,) = paired(both[0], [both[1]], metric, boot, intersect)
    keys = runs_mod.differing_params([r.flat for r in both], [r.overrides for r in both])
    names = runs_mod.short_names(keys)
    params = {
        names[k]: [_jsonable(r.flat.get(k)) for r in both] for k in keys
    }
    return Comparison(pair=pair, params=params, boot=boot, where=list(where or []))


def _jsonable(value):
    return list(value) if isinstance(value, tuple) else value


def write_output(text: str, out: str | None) -> None:
    if out is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    target = Path(out)
    atomic_write(target, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    print(f"receval: wrote {target}", file=sys.stderr)


def build_parser() -> runs_mod.ArgumentParser:
    parser = runs_mod.ArgumentParser(
        prog="python -m receval.compare",
        description="Pair two stored runs by question id: mean(B - A), its paired "
        "bootstrap interval, questions fixed and broken.",
    )
    parser.add_argument("a", metavar="RUN_A", help="the reference run directory")
    parser.add_argument("b", metavar="RUN_B", help="the run compared with it")
    parser.add_argument("--metric", default="rr", help="per-question measure (default rr = MRR)")
    parser.add_argument(
        "--intersect", action="store_true",
        help="pair only the questions both runs have (default: refuse different question sets)",
    )
    parser.add_argument("--format", choices=FORMATS, default="table")
    parser.add_argument("--out", metavar="FILE", help="write to FILE (atomically) instead of stdout")
    outputs.add_force(parser)
    runs_mod.add_question_filters(parser)
    runs_mod.add_bootstrap_args(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    with exit_on_error():
        args = build_parser().parse_args(argv)
        outputs.check_output(args.out, force=args.force, protected_dirs=[args.a, args.b])
        comparison = compare(
            args.a, args.b, metric=args.metric, intersect=args.intersect,
            where=runs_mod.question_filters(args), n_resamples=args.n_resamples,
            seed=args.seed, level=args.level, method=args.method,
        )
        if args.format == "table" and args.out is None:
            tables.print_rich(comparison.header_lines(), comparison.tables())
        else:
            write_output(comparison.render(args.format), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
