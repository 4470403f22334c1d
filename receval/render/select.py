"""The selection's header, table, JSON and CSV: :class:`SelectionTables` turns a computed
:class:`receval.analysis.choice.Selection` into every output format (mixed into it; it reads only
the computed fields)."""

from __future__ import annotations

from receval.render import tables, verdicts
from receval.analysis.choice import RULE, fmt_cost, status
from receval.stats.power import POWER
from receval.scoring.declared import measure_label

COST_TITLES = {"p50_ms": "p50 ms", "chunks": "chunks", "money": "$ / 1k q"}


def fmt_questions(c) -> str:
    if not c.cheaper or c.qualifies is not False:
        return ""
    return "never" if c.questions_needed is None else str(c.questions_needed)


def header_lines(selection) -> list[str]:
    label = measure_label(selection.metric)
    where = f"split {selection.split}" if selection.split else "all questions"
    lead = selection.candidates[selection.leader]
    n = len(selection.candidates)
    if n == 1:
        lines = [f"select on {where}: {label}, 1 run: nothing to compare it with"]
    else:
        lines = [
            f"select on {where}: {label}, {n} runs; leader #{selection.leader} {lead.label} "
            f"(best mean {lead.mean.mean:.3f})",
            "rule: " + RULE.format(by=selection.cost_by),
        ]
        if selection.margin is None:
            lines.append(
                "margin: none given (--margin, in " + label + " units): nothing can be shown "
                "not worse, so the leader is chosen; 'margin >' is the smallest margin at "
                "which each cheaper run would qualify"
            )
        else:
            lines.append(
                f"margin: {selection.margin:g} ({label} units, --margin): a cheaper run qualifies "
                f"when its interval's lower end lies above {-selection.margin:g}"
            )
    lines.append(f"mean: {tables.describe_boot(selection.boot, selection.n_questions or 0)}")
    if selection.tested:
        lines.append(
            f"diff = run - leader over {selection.n_questions} paired questions; Holm CI: the paired "
            f"procedure's interval corrected by {selection.correction} (family-wise {selection.boot.level:.0%}); "
            "level: the one it " + ("is tested at" if selection.margin is not None else "would qualify at")
        )
        boot = selection.boot
        lines.append(verdicts.describe(boot.level, boot.n_resamples, boot.seed, margin=False))
        tested = [c for c in selection.tested if c.test is not None]
        few = verdicts.few_changed([f"#{c.index}" for c in tested], [c.test for c in tested])
        lines += [few] if few else []
    lines += selection.notes
    lines += shortfall_lines(selection)
    chosen = selection.candidates[selection.chosen]
    lines.append(f"chosen: #{selection.chosen} {chosen.label} -- {selection.why}")
    if selection.held_out:
        h = selection.held_out
        lines.append(
            f"held out ({h['split']}, {h['n_questions']} questions, scored once): {label} "
            f"{h['mean']:.3f} {tables.fmt_ci(*h['ci'])}; on {selection.split or 'all'} "
            f"{h['selection_mean']:.3f}: "
            + (f"{selection.split or 'selection'} overstated it by {h['overstated']:.3f}" if h["overstated"] >= 0
               else f"{selection.split or 'selection'} understated it by {-h['overstated']:.3f}")
        )
    return lines


def shortfall_lines(selection) -> list[str]:
    """When a margin was given and no cheaper run qualifies: the questions each needs."""
    tested = selection.tested
    if selection.margin is None or not tested or any(c.qualifies for c in tested):
        return []
    parts = [
        f"#{c.index} " + (f"{c.questions_needed}" if c.questions_needed is not None else
                          f"never (its mean difference {c.diff_mean:+.3f} is not above {-selection.margin:g})")
        for c in tested
    ]
    return [
        f"no cheaper run is shown not worse at margin {selection.margin:g}. Questions needed to show "
        f"it (have {selection.n_questions}; one-sided paired t at {100 * selection.planning_alpha:.3g}%, "
        f"power {POWER:g}, if the observed mean difference and spread held): " + "; ".join(parts)
    ]


def tables_of(selection) -> list[tables.Table]:
    rows, flagged = [], set()
    show_questions = selection.margin is not None and any(c.qualifies is False for c in selection.candidates)
    for c in selection.candidates:
        diff = "leader" if c.diff_mean is None else tables.fmt_signed(c.diff_mean)
        bounds = (0.0,) if selection.margin is None else (0.0, -selection.margin)
        ci = verdicts.interval(c.test, bounds) if c.test else ""
        level = f"{100 * c.level:.4g}%" if c.level is not None else ""
        needed = f"{c.margin_needed:.3f}" if c.margin_needed is not None else ""
        row = [f"#{c.index}", c.label, tables.fmt(c.mean.mean), tables.fmt_ci(c.mean.lo, c.mean.hi),
               diff, ci, level, needed]
        if show_questions:
            row.append(fmt_questions(c))
        row += [status(c, selection.leader), fmt_cost(c.cost, selection.cost_by), str(c.stages),
                "chosen" if c.index == selection.chosen else ""]
        rows.append(row)
        if c.index == selection.chosen:
            flagged.add(len(rows) - 1)
    columns = ["#", "run", measure_label(selection.metric), f"{selection.boot.level:.0%} CI", "diff",
               "Holm CI", "level", "margin >"]
    align = ["r", "l", "r", "r", "r", "r", "r", "r"]
    if show_questions:
        columns.append("questions")
        align.append("r")
    columns += ["", COST_TITLES[selection.cost_by], "stages", ""]
    align += ["l", "r", "r", "l"]
    return [tables.Table(columns=columns, rows=rows, align=align, flagged=flagged)]


def to_csv(selection) -> str:
    return tables.to_csv(
        ["index", "run", "run_dir", "mean", "ci_lo", "ci_hi", "diff", "diff_lo", "diff_hi",
         "level", "status", "cheaper", "margin", "qualifies", "margin_needed", "questions_needed",
         "contender", selection.cost_by, "stages", "chosen"],
        [[c.index, c.label, c.run_dir, c.mean.mean, c.mean.lo, c.mean.hi, c.diff_mean,
          None if c.diff is None else c.diff.lo, None if c.diff is None else c.diff.hi,
          c.level, status(c, selection.leader), c.cheaper, selection.margin, c.qualifies, c.margin_needed,
          c.questions_needed, c.contender, c.cost, c.stages, c.index == selection.chosen]
         for c in selection.candidates],
    )


def render(selection, fmt: str) -> str:
    """The selection in ``fmt`` (table, markdown, csv, json or latex)."""
    return tables.formatted(
        fmt, lambda: header_lines(selection), lambda: tables_of(selection), selection.to_dict, lambda: to_csv(selection)
    )
