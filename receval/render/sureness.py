"""The report's "how sure" tables: each shown pair's size (Hedges' g_z) and detectable
difference; the rank intervals; the paired procedure's A/A type I rate. Formats
:class:`receval.analysis.significance.Sureness` (the verdicts themselves are in the pair
tables: :mod:`receval.render.verdicts`)."""

from __future__ import annotations

from receval.analysis.report import Report
from receval.scoring.declared import measure_label
from receval.render import tables


def header_line(report: Report) -> str | None:
    """The smallest difference this question set can detect, for the pairs shown."""
    sure = report.sure
    span = sure.detectable_range() if sure is not None else None
    if span is None:
        return None
    lo, hi = span
    shown = f"{lo:.3f}" if round(lo, 3) == round(hi, 3) else f"{lo:.3f} to {hi:.3f}"
    return (
        f"detectable: {sure.n_questions} questions detect a {measure_label(report.metric)} difference of "
        f"{shown} (paired t, alpha {sure.alpha:.2g}, power {sure.power:.0%}; smaller true differences "
        f"are likely missed)"
    )


def pairs_table(report: Report) -> tables.Table | None:
    """One row per pair shown: B - A, its g_z with interval, MDE (and questions needed)."""
    sure = report.sure
    if sure is None or not sure.pairs:
        return None
    index = {run.run_dir: i for i, run in enumerate(report.runs)}
    label = measure_label(report.metric)
    level = f"{report.boot.level:.0%} CI"
    detect = sure.pairs[0].detect
    columns = ["pair", f"diff {label}", "g_z", f"g_z {level}", "MDE"]
    columns += [f"n for {detect:g}"] if detect is not None else []
    shown = {(p.a, p.b): p for p in report.shown_pairs()}
    rows = []
    for tested in sure.pairs:
        pair, size = shown[(tested.a, tested.b)], tested.size
        row = [f"#{index[pair.b]} vs #{index[pair.a]}", tables.fmt_signed(pair.diff.mean),
               f"{size.effect.hedges_gz:+.2f}", f"[{size.effect.lo:+.2f}, {size.effect.hi:+.2f}]",
               tables.fmt(size.detectable.difference)]
        row += [str(tested.questions_needed)] if detect is not None else []
        rows.append(row)
    return tables.Table(
        columns=columns, rows=rows, align=["l"] + ["r"] * (len(columns) - 1),
        title=f"How large: {label} per pair (effect size, smallest detectable difference)",
        note=f"g_z: Hedges' g_z (mean difference over its standard deviation, small-sample corrected), its "
        f"interval the paired verdict's in g_z's units; "
        f"MDE: smallest difference detectable at alpha {sure.alpha:.2g}, power {sure.power:.0%}"
        + (f"; n for {detect:g}: questions needed to detect {detect:g}" if detect is not None else ""),
    )


def ranks_table(report: Report) -> tables.Table | None:
    sure = report.sure
    if sure is None or sure.ranks is None:
        return None
    level = f"{report.boot.level:.0%} CI"
    rows = [
        [str(i), run.label, tables.fmt(run.metrics[report.metric].mean) if report.metric in run.metrics else "-",
         str(rank.rank), f"[{rank.lo}, {rank.hi}]"]
        for i, (run, rank) in enumerate(zip(report.runs, sure.ranks))
    ]
    return tables.Table(
        columns=["#", "run", measure_label(report.metric), "rank", f"rank {level}"], rows=rows,
        align=["r", "l", "r", "r", "r"], title=f"Ranks by {measure_label(report.metric)} over resampled questions",
        note="runs whose rank intervals overlap are not separated by these questions",
    )


def calibration_table(report: Report) -> tables.Table | None:
    sure = report.sure
    if sure is None or sure.calibration is None:
        return None
    rows = [[r.test, f"{r.rate:.1%}", f"[{r.lo:.1%}, {r.hi:.1%}]", f"{r.rejections}/{r.n_null}"]
            for r in sure.calibration]
    alpha = sure.calibration[0].alpha
    return tables.Table(
        columns=["test", "type I rate", "95% CI", "rejected"], rows=rows, align=["l", "r", "r", "r"],
        title=f"A/A calibration at alpha {alpha:.2g}",
        note="null pairs: the shown pairs' per-question differences with random signs (swapped within "
        "question); the procedure rejects at most about alpha of them, fewer where few questions change",
    )
