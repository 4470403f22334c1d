"""The comparison's tables: :class:`ComparisonTables` turns a computed
:class:`receval.analysis.comparison.Comparison` into header lines, tables and CSV."""

from __future__ import annotations

from receval.render import tables, verdicts
from receval.stats.pairing import cutoff
from receval.render.report import fixed_note
from receval.core.vocabulary import measure_label


def header_lines(comparison) -> list[str]:
    p = comparison.pair
    results = [d.text for d in comparison.differences if d.affects_results]
    others = [d.text for d in comparison.differences if not d.affects_results]
    lines = [
        f"A {comparison.labels[0]}  ({p.a})",
        f"B {comparison.labels[1]}  ({p.b})",
        ("config: " + "; ".join(results)) if results else (
            "config: identical" + (" in every setting that changes results" if others else "")
        ),
    ]
    if others:
        lines.append("also differ (results unaffected): " + "; ".join(others))
    lines += [
        f"{p.n_questions} questions scored in both"
        + (f" (where {', '.join(f'{c}={v}' for c, v in comparison.where)})" if comparison.where else "")
        + (f"; {p.only_a} only in A and {p.only_b} only in B left out" if p.only_a or p.only_b else "")
        + f"; {verdicts.describe(comparison.boot.level, comparison.boot.n_resamples, comparison.boot.seed)}",
    ]
    return lines


def tables_of(comparison) -> list[tables.Table]:
    p = comparison.pair
    level = f"{comparison.boot.level:.0%} CI"
    label = measure_label(p.metric)
    notes = [verdicts.open_note([p.test]), verdicts.few_changed([label], [p.test])]
    main = tables.Table(
        columns=["metric", "A", "B", "B - A", level, "p", "verdict", "up", "down", "same"],
        rows=[[
            label, tables.fmt(p.mean_a), tables.fmt(p.mean_b), tables.fmt_signed(p.diff.mean),
            verdicts.interval(p.test), verdicts.p_value(p.p), str(p.verdict), str(p.up), str(p.down), str(p.same),
        ]],
        align=["l", "r", "r", "r", "r", "r", "l", "r", "r", "r"],
        note="; ".join(n for n in notes if n) or None,
    )
    ids = tables.Table(
        columns=["", "n", "question ids"],
        rows=[
            [f"fixed@{cutoff(p.metric)}", str(len(p.fixed)), " ".join(p.fixed) or "-"],
            [f"broken@{cutoff(p.metric)}", str(len(p.broken)), " ".join(p.broken) or "-"],
        ],
        align=["l", "r", "l"],
        note=f"fixed@{cutoff(p.metric)}: {fixed_note(p.metric, 'A', 'B')}; broken: the reverse",
        wrap={2},
    )
    return [main, ids]


def to_csv(comparison) -> str:
    p = comparison.pair
    return tables.to_csv(
        ["a", "b", "metric", "n_questions", "mean_a", "mean_b", "diff", "ci_lo", "ci_hi", "p", "verdict",
         "up", "down", "same", "fixed", "broken"],
        [[p.a, p.b, p.metric, p.n_questions, p.mean_a, p.mean_b, p.diff.mean, p.diff.lo,
          p.diff.hi, p.test.p, str(p.verdict), p.up, p.down, p.same, " ".join(p.fixed), " ".join(p.broken)]],
    )


def render(comparison, fmt: str) -> str:
    """The comparison in ``fmt`` (table, markdown, csv, json or latex)."""
    return tables.formatted(
        fmt, lambda: header_lines(comparison), lambda: tables_of(comparison), comparison.to_dict, lambda: to_csv(comparison)
    )
