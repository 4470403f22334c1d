"""The report's "how sure" tables: each shown pair's test, corrected p (a dagger when
significant after the correction), Hedges' g_z and detectable difference; the rank
intervals; the A/A type I rates. Formats :class:`receval.analysis.significance.Sureness`."""

from __future__ import annotations

from receval.analysis.report import Report
from receval.core.vocabulary import measure_label
from receval.render import tables

DAGGER = "†"


def _p(value: float | None) -> str:
    if value is None:
        return "-"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


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
    """One row per pair shown: B - A, its interval, p, corrected p, g_z, MDE."""
    sure = report.sure
    if sure is None or not sure.pairs:
        return None
    index = {run.run_dir: i for i, run in enumerate(report.runs)}
    label = measure_label(report.metric)
    level = f"{report.boot.level:.0%} CI"
    detect = sure.pairs[0].detect
    columns = ["pair", f"diff {label}", level, f"p ({sure.test})"]
    columns += [f"p {sure.correction}"] if sure.correction else []
    columns += ["g_z", f"g_z {level}", "MDE"]
    columns += [f"n for {detect:g}"] if detect is not None else []
    shown = {(p.a, p.b): p for p in report.shown_pairs()}
    rows = []
    for tested in sure.pairs:
        pair, s = shown[(tested.a, tested.b)], tested.stats
        mark = DAGGER if tested.significant(sure.alpha) else ""
        row = [f"#{index[pair.b]} vs #{index[pair.a]}", tables.fmt_signed(pair.diff.mean),
               tables.fmt_ci(pair.diff.lo, pair.diff.hi, signed=True)]
        row += [_p(s.test.p) + ("" if sure.correction else mark)]
        row += [_p(s.p_adjusted) + mark] if sure.correction else []
        row += [f"{s.effect.hedges_gz:+.2f}", f"[{s.effect.lo:+.2f}, {s.effect.hi:+.2f}]",
                tables.fmt(s.detectable.difference)]
        row += [str(tested.questions_needed)] if detect is not None else []
        rows.append(row)
    after = f"after {sure.correction} over {len(sure.pairs)} pairs" if sure.correction else "uncorrected"
    return tables.Table(
        columns=columns, rows=rows, align=["l"] + ["r"] * (len(columns) - 1),
        title=f"How sure: {label}, {sure.n_questions} questions paired",
        note=f"{DAGGER} p <= {sure.alpha:.2g} {after}; g_z: Hedges' g_z (mean difference over its "
        f"standard deviation, small-sample corrected); MDE: smallest difference detectable at alpha "
        f"{sure.alpha:.2g}, power {sure.power:.0%}"
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
        "question); a well-calibrated test rejects about alpha of them",
    )
