"""The comparison's tables: a computed :class:`receval.analysis.comparison.Comparison`
as header lines, tables and CSV: a row per measure (``--metrics``), each pair's own
fields as :class:`receval.analysis.pairs.Pair` holds them."""

from __future__ import annotations

from receval.render import tables, verdicts
from receval.stats.pairing import cutoff
from receval.render.report import fixed_note
from receval.scoring.declared import measure_label


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
        (f"{p.n_questions} questions scored in both" if not _counts_differ(comparison)
         else "questions scored in both: as each measure's n says")
        + (f" (where {', '.join(f'{c}={v}' for c, v in comparison.where)})" if comparison.where else "")
        + (f"; {p.only_a} only in A and {p.only_b} only in B left out" if p.only_a or p.only_b else "")
        + f"; {verdicts.describe(comparison.boot.level, comparison.boot.n_resamples, comparison.boot.seed)}",
    ]
    if len(comparison.pairs) > 1:
        lines.append(f"{len(comparison.pairs)} measures, each interval on its own (none corrected for the others)")
    return lines


def _counts_differ(comparison) -> bool:
    """Whether the measures score different numbers of questions (a measure null on some)."""
    return len({p.n_questions for p in comparison.pairs}) > 1


def tables_of(comparison) -> list[tables.Table]:
    level = f"{comparison.boot.level:.0%} CI"
    counts = _counts_differ(comparison)
    rows = []
    for p in comparison.pairs:
        rows.append([
            measure_label(p.metric), *([str(p.n_questions)] if counts else []), tables.fmt(p.mean_a),
            tables.fmt(p.mean_b), tables.fmt_signed(p.diff.mean), verdicts.interval(p.test),
            verdicts.p_value(p.p, comparison.boot.level), str(p.verdict), str(p.up), str(p.down), str(p.same),
        ])
    labels = [measure_label(p.metric) for p in comparison.pairs]
    tests = [p.test for p in comparison.pairs]
    notes = [verdicts.open_note(tests), verdicts.few_changed(labels, tests)]
    main = tables.Table(
        columns=["metric", *(["n"] if counts else []), "A", "B", "B - A", level, "p", "verdict", "up", "down", "same"],
        rows=rows, align=["l", *(["r"] if counts else []), "r", "r", "r", "r", "r", "l", "r", "r", "r"],
        note="; ".join(n for n in notes if n) or None,
    )
    return [main, ids_table(comparison)]


def ids_table(comparison) -> tables.Table:
    """Questions fixed and broken, per measure; measures that fix and break the same
    questions at the same cutoff share their rows (hit@3 and recall@3)."""
    shown: dict[tuple, list[str]] = {}  # (cutoff, fixed, broken) -> measures
    for p in comparison.pairs:
        shown.setdefault((cutoff(p.metric), tuple(p.fixed), tuple(p.broken)), []).append(measure_label(p.metric))
    several = len(comparison.pairs) > 1
    rows = []
    for (k, fixed, broken), names in shown.items():
        which = f" ({', '.join(names)})" if several else ""
        rows.append([f"fixed@{k}{which}", str(len(fixed)), " ".join(fixed) or "-"])
        rows.append([f"broken@{k}{which}", str(len(broken)), " ".join(broken) or "-"])
    if several:
        notes = dict.fromkeys(
            f"{measure_label(p.metric)}'s fixed@{cutoff(p.metric)}: {fixed_note(p.metric, 'A', 'B')}"
            if p.metric in ("rr", "mrr") else "fixed@k (measures): the measure 0 in A, above 0 in B"
            for p in comparison.pairs
        )
    else:
        notes = [f"fixed@{cutoff(comparison.pair.metric)}: {fixed_note(comparison.pair.metric, 'A', 'B')}"]
    return tables.Table(
        columns=["", "n", "question ids"], rows=rows, align=["l", "r", "l"],
        note="; ".join(notes) + "; broken: the reverse", wrap={2},
    )


def to_csv(comparison) -> str:
    """One row per measure."""
    return tables.to_csv(
        ["a", "b", "metric", "n_questions", "mean_a", "mean_b", "diff", "ci_lo", "ci_hi", "p", "verdict",
         "up", "down", "same", "fixed", "broken"],
        [[p.a, p.b, p.metric, p.n_questions, p.mean_a, p.mean_b, p.diff.mean, p.diff.lo,
          p.diff.hi, p.test.p, str(p.verdict), p.up, p.down, p.same, " ".join(p.fixed), " ".join(p.broken)]
         for p in comparison.pairs],
    )


def render(comparison, fmt: str) -> str:
    """The comparison in ``fmt`` (table, markdown, csv, json or latex)."""
    return tables.formatted(
        fmt, lambda: header_lines(comparison), lambda: tables_of(comparison), comparison.to_dict, lambda: to_csv(comparison)
    )
