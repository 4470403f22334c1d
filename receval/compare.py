"""Compare two stored runs question by question: ``python -m receval.compare A B``.

::

    python -m receval.compare runs/2026-11-29/10-00-00/0 runs/2026-11-30/09-12-44
    python -m receval.compare A B --metric hit@3 --split test --format json

The runs may come from any sweeps. Questions are paired by id; runs over different
question sets are refused (naming how many ids differ) unless ``--intersect``.
Reported: mean of A, mean of B, ``diff`` = mean(B - A) over the questions both
score (unanswerable ones left out), its paired bootstrap interval (the questions
are resampled once, so how hard a question is cancels out), the ids of questions
``fixed`` (a relevant section first in B, not in A) and ``broken`` (the reverse),
and how many questions went up, down or stayed the same on the metric.

The pairing (:func:`receval.results.pairing.paired`) is also what ``receval.report --baseline`` uses.
Exit status 0, or 2 with one line for a user error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from receval import tables
from receval.errors import exit_on_error
from receval.results import cli, configs, selection
from receval.results.discovery import load_one, warn
from receval.results.pairing import BootSettings, Pair, bootstrap_settings, paired


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
        fv = configs.format_value
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
        label = selection.measure_label(p.metric)
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
                ["fixed", str(len(p.fixed)), " ".join(p.fixed) or "-"],
                ["broken", str(len(p.broken)), " ".join(p.broken) or "-"],
            ],
            align=["l", "r", "l"],
            note="fixed: a relevant section first in B, not in A; broken: the reverse",
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
    run_a = load_one(a, what="A")
    run_b = load_one(b, what="B")
    both = selection.filter_questions([run_a, run_b], list(where or []))
    metric = selection.canonical_measure(metric, both, option="--metric")
    fa = run_a.metadata.get("dataset_fingerprint")
    fb = run_b.metadata.get("dataset_fingerprint")
    if fa and fb and fa != fb:
        warn("A and B were run on different dataset files (fingerprints differ)")
    boot = bootstrap_settings(both, n_resamples, seed, level, method)
    (pair,) = paired(both[0], [both[1]], metric, boot, intersect)
    keys = configs.differing_params([r.flat for r in both], [r.overrides for r in both])
    names = configs.short_names(keys)
    params = {
        names[k]: [_jsonable(r.flat.get(k)) for r in both] for k in keys
    }
    return Comparison(pair=pair, params=params, boot=boot, where=list(where or []))


def _jsonable(value):
    return list(value) if isinstance(value, tuple) else value


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
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
    parser.add_argument("--format", choices=cli.FORMATS, default="table")
    parser.add_argument("--out", metavar="FILE", help="write to FILE (atomically) instead of stdout")
    cli.add_question_filters(parser)
    cli.add_bootstrap_args(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    with exit_on_error():
        args = build_parser().parse_args(argv)
        comparison = compare(
            args.a, args.b, metric=args.metric, intersect=args.intersect,
            where=cli.question_filters(args), n_resamples=args.n_resamples,
            seed=args.seed, level=args.level, method=args.method,
        )
        if args.format == "table" and args.out is None:
            tables.print_rich(comparison.header_lines(), comparison.tables())
        else:
            cli.write_output(comparison.render(args.format), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
