"""Choose a configuration from a sweep: ``receval select SWEEP``.

::

    receval select runs/SWEEP --split dev --metric rr      # smallest margins
    receval select runs/SWEEP --split dev --prefer chunks --margin 0.05 \\
        --out best.yaml --report-on test --plot choice.png

The leader is the best mean on ``--split``; a run cheaper than it by ``--prefer``
is a contender only when shown not worse: the lower end of its Holm-corrected
interval of ``run - leader`` lies above ``-margin``. The cheapest contender is
chosen (ties in cost: the higher mean, then fewer stages, then the smaller index)
and its complete config written to ``--out`` (re-run it with the command it prints,
``receval -cp /abs/folder -cn best``, from any folder: its relative paths are made
absolute), after the trust check ``reproduce`` makes (a config
that sends requests or names code needs ``--allow-remote`` / ``--allow-code``; no
interpolation is evaluated or written). Without ``--margin`` the leader is chosen and each
cheaper run's smallest qualifying margin printed. ``--report-on test`` then scores
that one config on the held-out questions and says how far the selection split
overstated it. A note says when the split's questions cannot decide between the runs on
``--metric`` (:mod:`receval.analysis.decidable`). ``--suite``: runs of the same configurations on several collections; the
choice is made on the difference pooled over the collections (random effects; Holm over
the cheaper configurations; :mod:`receval.analysis.suite_choice`). The computation is :mod:`receval.analysis.choice`; the table
:mod:`receval.render.select`; the plot :mod:`receval.render.choice_plot`; best.yaml
:mod:`receval.render.best_yaml`. Exit status 0, or 2 with one line for a user error.
"""

from __future__ import annotations

import sys

from receval.analysis import choice
from receval.analysis.derived import with_derived
from receval.analysis.filters import canonical_measure, filter_questions, pick
from receval.analysis.settings import bootstrap_settings
from receval.analysis.summary import replay_note
from receval.cli.options import FLAGS, FORMATS, ArgumentParser, parse_where, write_output
from receval.core import outputs
from receval.core.errors import RecevalError, exit_on_error
from receval.render import best_yaml, choice_plot, tables
from receval.render import select as rendered
from receval.results.discovery import load_runs
from receval.results.stored import Run


def own_default():
    """The run side's fallback for a setting that does not change results saved as an
    interpolation (:func:`receval.run.written.own_default`), imported only for ``--out``."""
    from receval.run.written import own_default as fallback

    return fallback


def select(
    paths: list[str], metric: str = "rr", split: str | None = "dev", prefer: str = "p50_ms",
    margin: float | None = None, report_on: str | None = None, where: list[tuple[str, str]] | None = None,
    n_resamples: int | None = None, seed: int | None = None, level: float | None = None,
    select_runs: str | None = None,
) -> tuple[choice.Selection, Run]:
    """Load the runs (those ``select_runs`` matches, ``--runs``), choose among them on
    ``split``; returns the selection and the chosen run (unfiltered, for ``best.yaml``
    and the held-out score)."""
    if report_on is not None and report_on == split:
        raise RecevalError(
            f"--report-on {report_on}: the same split as --split; report on questions the "
            "choice never saw (e.g. --split dev --report-on test)"
        )
    runs = load_runs(paths)
    if select_runs is not None:
        runs = pick(runs, select_runs, option="--runs")
    filters = ([("split", split)] if split else []) + list(where or [])
    runs = with_derived(runs, [metric], option="--metric")  # a budget's (recall@1000tok), rr@k: held-out too
    scored = filter_questions(runs, filters, option="--where")
    metric = canonical_measure(metric, scored, option="--metric")
    boot = bootstrap_settings(scored, n_resamples, seed, level, overridden_by=FLAGS["bootstrap"])
    selection = choice.choose(scored, metric, prefer, margin, boot, split=split, names=FLAGS)
    selection.notes += [f"#{c.index} {c.label}: {note}" for c, run in zip(selection.candidates, scored)
                        if (note := replay_note(run.info or {}))]
    best = runs[selection.chosen]
    if report_on is not None:
        selection.held_out = choice.held_out(
            best, report_on, metric, boot, selection.candidates[selection.chosen].mean.mean, option="--report-on"
        )
    return selection, best


def select_suite(args) -> int:
    """``--suite``: the choice on the pooled effect (:mod:`receval.analysis.suite_choice`)."""
    from receval.analysis.suite_choice import choose_on_suite
    from receval.analysis.suite import group
    from receval.render import suite as rendered_suite

    for flag in ("report_on", "plot"):
        if getattr(args, flag) is not None:
            raise RecevalError(f"--{flag.replace('_', '-')} is not taken with --suite; leave it out")
    runs = load_runs(args.paths)
    if args.select_runs is not None:
        runs = pick(runs, args.select_runs, option="--runs")
    where = ([("split", args.split)] if args.split else []) + list(parse_where(args.where))
    scored = filter_questions(runs, where, option="--where")
    boot = bootstrap_settings(scored, args.n_resamples, args.seed, args.level, overridden_by=FLAGS["bootstrap"])
    selection = choose_on_suite(scored, args.metric, args.prefer, args.margin, boot)
    written = None
    if args.out:  # the chosen configuration as run on the first collection
        _, _, grid = group(runs)
        best = grid[0][selection.chosen]
        config = best_yaml.best_config(best, allow_remote=args.allow_remote, allow_code=args.allow_code,
                                       fallback=own_default())
        why = f"{selection.why}; dataset: its run on {selection.suite.collections[0].name}"
        written = best_yaml.write_best(best, args.out, why, config)
    if args.format == "table":
        tables.print_rich(rendered_suite.selection_lines(selection), [rendered_suite.selection_table(selection)])
    else:
        write_output(rendered_suite.render_selection(selection, args.format), None)
    if written:
        print(f"receval: wrote {written} (the dataset of {selection.suite.collections[0].name}: set dataset=... "
              f"for another); re-run it with: {best_yaml.rerun_command(written)}", file=sys.stderr)
    return 0


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="receval select",
        description="Choose the cheapest configuration shown not worse than the best one "
        "(within --margin; the paired sign-flip test, Holm-corrected) and write its config.",
    )
    parser.add_argument("paths", nargs="+", metavar="RUNS", help="sweep or run directories")
    parser.add_argument("--split", default=None,
                        help="questions the choice is made on (default dev; with --suite every question)")
    parser.add_argument(
        "--suite", action="store_true",
        help="RUNS are configurations x collections: choose on the difference pooled over the collections",
    )
    parser.add_argument("--metric", default="rr", help="per-question measure (default rr = MRR)")
    parser.add_argument("--prefer", choices=choice.PREFERENCES, default="p50_ms",
                        help="cost to minimise among contenders (default p50_ms)")
    parser.add_argument("--margin", type=float, default=None,
                        help="how much worse than the leader still counts as not worse, in the "
                        "metric's units (e.g. 0.05); a cheaper run qualifies when the lower end of "
                        "its corrected interval lies above -MARGIN. Without it the leader is chosen "
                        "and each cheaper run's smallest qualifying margin printed")
    parser.add_argument("--out", metavar="FILE.yaml", help="write the chosen run's complete config here")
    parser.add_argument(
        "--allow-remote", action="store_true",
        help="--out may write a config that sends requests (an http backend, a base_url): trust the run",
    )
    parser.add_argument(
        "--allow-code", action="store_true", help="--out may write a config that names code to import (target)",
    )
    parser.add_argument("--report-on", metavar="SPLIT",
                        help="score the chosen config once on this held-out split, e.g. test")
    parser.add_argument("--plot", metavar="FILE", help="quality-vs-cost plot (png, svg, pdf)")
    parser.add_argument("--format", choices=FORMATS, default="table")
    outputs.add_force(parser)
    parser.add_argument(
        "--where", action="append", default=[], metavar="COLUMN=VALUE",
        help="also keep only the questions whose COLUMN equals VALUE (repeatable)",
    )
    parser.add_argument(
        "--runs", dest="select_runs", metavar="KEY=VALUE[,KEY=VALUE]",
        help="choose among the runs whose saved config matches (e.g. max_words=120); "
        "--where selects questions, --runs selects runs",
    )
    group = parser.add_argument_group("bootstrap (default: the runs' saved bootstrap config)")
    group.add_argument("--n-resamples", type=int, help="bootstrap resamples, e.g. 2000")
    group.add_argument("--seed", type=int, help="bootstrap seed (same seed, same intervals)")
    group.add_argument("--level", type=float, help="family-wise confidence level, e.g. 0.95")
    return parser


def main(argv: list[str] | None = None) -> int:
    with exit_on_error():
        args = build_parser().parse_args(argv)
        if args.out:
            best_yaml.check_out(args.out)
        if args.plot:
            choice_plot.check_path(args.plot)
        for flag in ("out", "plot"):  # before any work: never over an input or another file
            outputs.check_output(getattr(args, flag), force=args.force, protected_dirs=args.paths,
                                 flag=f"--{flag}")
        if args.suite:
            return select_suite(args)
        selection, best = select(
            args.paths, metric=args.metric, split="dev" if args.split is None else args.split or None, prefer=args.prefer,
            margin=args.margin, report_on=args.report_on, where=parse_where(args.where),
            n_resamples=args.n_resamples, seed=args.seed, level=args.level,
            select_runs=args.select_runs,
        )
        config = None
        if args.out:  # the trust check reproduce makes, before anything is written
            config = best_yaml.best_config(best, allow_remote=args.allow_remote, allow_code=args.allow_code,
                                       fallback=own_default())
        if args.plot:
            choice_plot.plot(selection, args.plot)
        written = best_yaml.write_best(best, args.out, selection.why, config) if args.out else None
        if args.format == "table":
            tables.print_rich(rendered.header_lines(selection), rendered.tables_of(selection))
        else:
            write_output(rendered.render(selection, args.format), None)
        if written:
            print(f"receval: wrote {written}; re-run it with: {best_yaml.rerun_command(written)}", file=sys.stderr)
        if args.plot:
            print(f"receval: wrote {args.plot}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
