"""The selection's header, table, JSON and CSV: :class:`SelectionTables` turns a computed
:class:`receval.choice.Selection` into every output format (mixed into it; it reads only
the computed fields)."""

from __future__ import annotations

from receval import tables
from receval.power import POWER
from receval.results.selection import measure_label

COST_TITLES = {"p50_ms": "p50 ms", "chunks": "chunks", "money": "$ / 1k q"}
RULE = ("a run cheaper than the leader by {by} is a contender only when shown not worse: the "
        "lower end of its Holm-corrected interval of (run - leader) lies above -margin")


def fmt_cost(cost: float | None, by: str) -> str:
    if cost is None or cost != cost:
        return "-"
    if by == "p50_ms":
        return tables.fmt_ms(cost)
    if by == "chunks":
        return str(int(cost))
    return f"{cost:.4f}"


def status(c, leader: int) -> str:
    """leader; in / out (a cheaper run that does / does not qualify at the margin);
    cheaper (no margin given); not cheaper (never a contender: the leader is better)."""
    if c.index == leader:
        return "leader"
    if not c.cheaper:
        return "not cheaper"
    if c.qualifies is None:
        return "cheaper"
    return "in" if c.qualifies else "out"


def fmt_questions(c) -> str:
    if not c.cheaper or c.qualifies is not False:
        return ""
    return "never" if c.questions_needed is None else str(c.questions_needed)


class SelectionTables(tables.Rendered):
    """Rendering of a selection (mixed into it)."""

    def header_lines(self) -> list[str]:
        label = measure_label(self.metric)
        where = f"split {self.split}" if self.split else "all questions"
        lead = self.candidates[self.leader]
        n = len(self.candidates)
        if n == 1:
            lines = [f"select on {where}: {label}, 1 run: nothing to compare it with"]
        else:
            lines = [
                f"select on {where}: {label}, {n} runs; leader #{self.leader} {lead.label} "
                f"(best mean {lead.mean.mean:.3f})",
                "rule: " + RULE.format(by=self.cost_by),
            ]
            if self.margin is None:
                lines.append(
                    "margin: none given (--margin, in " + label + " units): nothing can be shown "
                    "not worse, so the leader is chosen; 'margin >' is the smallest margin at "
                    "which each cheaper run would qualify"
                )
            else:
                lines.append(
                    f"margin: {self.margin:g} ({label} units, --margin): a cheaper run qualifies "
                    f"when its interval's lower end lies above {-self.margin:g}"
                )
        lines.append(f"mean: {self.boot.describe()}")
        if self.tested:
            lines.append(
                f"diff = run - leader over {self.n_questions} paired questions; Holm CI: percentile "
                f"bootstrap corrected by {self.correction} (family-wise "
                f"{self.boot.level:.0%}; same question draws for every run); level: the one it "
                + ("is tested at" if self.margin is not None else "would qualify at")
            )
        lines += self.notes
        lines += self.shortfall_lines()
        chosen = self.candidates[self.chosen]
        lines.append(f"chosen: #{self.chosen} {chosen.label} -- {self.why}")
        if self.held_out:
            h = self.held_out
            lines.append(
                f"held out ({h['split']}, {h['n_questions']} questions, scored once): {label} "
                f"{h['mean']:.3f} {tables.fmt_ci(*h['ci'])}; on {self.split or 'all'} "
                f"{h['selection_mean']:.3f}: "
                + (f"{self.split or 'selection'} overstated it by {h['overstated']:.3f}" if h["overstated"] >= 0
                   else f"{self.split or 'selection'} understated it by {-h['overstated']:.3f}")
            )
        return lines

    def shortfall_lines(self) -> list[str]:
        """When a margin was given and no cheaper run qualifies: the questions each needs."""
        tested = self.tested
        if self.margin is None or not tested or any(c.qualifies for c in tested):
            return []
        parts = [
            f"#{c.index} " + (f"{c.questions_needed}" if c.questions_needed is not None else
                              f"never (its mean difference {c.diff_mean:+.3f} is not above {-self.margin:g})")
            for c in tested
        ]
        return [
            f"no cheaper run is shown not worse at margin {self.margin:g}. Questions needed to show "
            f"it (have {self.n_questions}; one-sided paired t at {100 * self.planning_alpha:.3g}%, "
            f"power {POWER:g}, if the observed mean difference and spread held): " + "; ".join(parts)
        ]

    def tables(self) -> list[tables.Table]:
        rows, flagged = [], set()
        show_questions = self.margin is not None and any(c.qualifies is False for c in self.candidates)
        for c in self.candidates:
            diff = "leader" if c.diff_mean is None else tables.fmt_signed(c.diff_mean)
            ci = tables.fmt_ci(c.diff.lo, c.diff.hi, signed=True) if c.diff else ""
            level = f"{100 * c.level:.4g}%" if c.level is not None else ""
            needed = f"{c.margin_needed:.3f}" if c.margin_needed is not None else ""
            row = [f"#{c.index}", c.label, tables.fmt(c.mean.mean), tables.fmt_ci(c.mean.lo, c.mean.hi),
                   diff, ci, level, needed]
            if show_questions:
                row.append(fmt_questions(c))
            row += [status(c, self.leader), fmt_cost(c.cost, self.cost_by), str(c.stages),
                    "chosen" if c.index == self.chosen else ""]
            rows.append(row)
            if c.index == self.chosen:
                flagged.add(len(rows) - 1)
        columns = ["#", "run", measure_label(self.metric), f"{self.boot.level:.0%} CI", "diff",
                   "Holm CI", "level", "margin >"]
        align = ["r", "l", "r", "r", "r", "r", "r", "r"]
        if show_questions:
            columns.append("questions")
            align.append("r")
        columns += ["", COST_TITLES[self.cost_by], "stages", ""]
        align += ["l", "r", "r", "l"]
        return [tables.Table(columns=columns, rows=rows, align=align, flagged=flagged)]

    def to_dict(self) -> dict:
        return {
            "metric": self.metric,
            "split": self.split,
            "prefer": self.prefer,
            "cost_by": self.cost_by,
            "margin": self.margin,
            "rule": RULE.format(by=self.cost_by),
            "correction": self.correction,
            "n_questions": self.n_questions,
            "power": POWER,
            "planning_alpha": self.planning_alpha,
            "bootstrap": self.boot.kwargs(),
            "leader": self.leader,
            "chosen": self.chosen,
            "why": self.why,
            "notes": list(self.notes),
            "runs": [
                {
                    "index": c.index, "label": c.label, "run_dir": c.run_dir,
                    "mean": c.mean.mean, "ci": [c.mean.lo, c.mean.hi],
                    "diff": c.diff_mean,
                    "diff_ci": None if c.diff is None else [c.diff.lo, c.diff.hi],
                    "level": c.level, "status": status(c, self.leader), "cheaper": c.cheaper,
                    "qualifies": c.qualifies, "margin_needed": c.margin_needed,
                    "questions_needed": c.questions_needed, "contender": c.contender,
                    "cost": c.cost, "costs": c.costs, "stages": c.stages,
                }
                for c in self.candidates
            ],
            "held_out": self.held_out,
        }

    def to_csv(self) -> str:
        return tables.to_csv(
            ["index", "run", "run_dir", "mean", "ci_lo", "ci_hi", "diff", "diff_lo", "diff_hi",
             "level", "status", "cheaper", "margin", "qualifies", "margin_needed", "questions_needed",
             "contender", self.cost_by, "stages", "chosen"],
            [[c.index, c.label, c.run_dir, c.mean.mean, c.mean.lo, c.mean.hi, c.diff_mean,
              None if c.diff is None else c.diff.lo, None if c.diff is None else c.diff.hi,
              c.level, status(c, self.leader), c.cheaper, self.margin, c.qualifies, c.margin_needed,
              c.questions_needed, c.contender, c.cost, c.stages, c.index == self.chosen]
             for c in self.candidates],
        )
