"""The report rendered: a computed :class:`receval.analysis.report.Report` turned into
header lines and :class:`receval.render.tables.Table` objects (main, latency with its
intervals and verdicts, latency per stage and cost (:mod:`receval.render.costs`),
paired differences, stage by stage, by column, per question), its CSV rows
(:func:`to_csv`), every format (:func:`render`) and its plot (:func:`plot`). Nothing
here computes a statistic."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from receval.analysis.holes import ppi_lines
from receval.analysis.humans import stratified_lines
from receval.analysis.report import Report
from receval.core.formatting import shown
from receval.scoring.declared import lower_is_better, measure_label
from receval.render import sureness, tables, verdicts
from receval.render.costs import cost_table, latency_table, stage_table
from receval.render.costs import params_cells as _params_cells
from receval.render.gated import verdict_markdown, with_gate
from receval.render.plots import plot_report
from receval.stats.pairing import cutoff

MAX_IDS_SHOWN = 12  # question ids listed per cell in the text formats (JSON has all)


def header_lines(report: Report, verdict: bool = True) -> list[str]:
    """The lines above the tables: the gate's verdict first when there is one (``verdict``
    false leaves it out, for a page that shows it apart), then what was scored and how."""
    q = report.questions
    kinds = ", ".join(f"{k} {n}" for k, n in q["kinds"].items())
    splits = ", ".join(f"{k} {n}" for k, n in q["splits"].items())
    first = (
        f"{len(report.runs)} run{'s' if len(report.runs) != 1 else ''}; "
        f"{q['n_scored']} questions scored ({kinds})"
    )
    if q["n_unanswerable"]:
        first += f", {q['n_unanswerable']} unanswerable left out"
    first += f"; split: {splits}"
    if report.where:
        first += "; where " + ", ".join(f"{c}={v}" for c, v in report.where)
    if not q["same_questions"]:
        first += "; NOTE the runs are not over the same questions (see n)"
    lines = [report.gate.line] if verdict and report.gate is not None else []
    lines += [first, tables.describe_boot(report.boot, max((run.n_questions for run in report.runs), default=0))]
    if report.shown_pairs():
        boot = report.boot
        lines.append(verdicts.describe(boot.level, boot.n_resamples, boot.seed)
                     + (f"; {report.pairs_correction()}" if report.pairs_correction() else ""))
    lines += [f"note: {note}" for note in q.get("notes", [])]
    if report.baseline is not None:
        base = report.runs[report.baseline]
        lines.append(f"baseline: #{report.baseline} {base.label} ({base.run_dir})")
    for i, run in enumerate(report.runs):
        lines += [f"note: #{i} {run.label}: {note}" for note in run.notes]
    lines += [f"warning: {caution}" for caution in report.cautions]
    lines += [u.text for u in report.undecided]  # receval.analysis.decidable: a set that cannot decide
    lines += [f"latency: {conflict}" for conflict in (report.latency.conflicts if report.latency else [])]
    lines += [f"labels: {line}" for line in report.relabelled]
    if report.estimation is not None:
        lines += report.estimation.lines([run.label for run in report.runs])
    if report.label_agreement is not None:
        lines += report.label_agreement.lines([run.label for run in report.runs])
    lines += ppi_lines(report.ppi, [run.label for run in report.runs], report.metric)
    lines += stratified_lines(report.stratified_ppi, [run.label for run in report.runs], report.metric, report.boot.level)
    lines += [certified.line() for certified in report.certify]
    if (detectable := sureness.header_line(report)) is not None:
        lines.append(detectable)
    return lines


def main_table(report: Report) -> tables.Table:
    level = f"{report.boot.level:.0%} CI"
    show_n = not report.questions["same_questions"]
    show_dir = ambiguous_params(report)
    columns = ["#", *report.params] + (["run"] if show_dir else []) + ["chunks"]
    columns += ["n"] if show_n else []
    metric_cols: dict[str, int] = {}
    for name in report.metrics:
        metric_cols[name] = len(columns)
        columns.append(measure_label(name))
        if name == report.metric:
            columns.append(f"{measure_label(name)} {level}")
    rows = []
    for i, run in enumerate(report.runs):
        row = [str(i), *_params_cells(report, run)] + ([run.run_dir] if show_dir else [])
        row.append(str(run.n_chunks) if run.n_chunks is not None else "-")
        if show_n:
            row.append(str(run.n_questions))
        for name in report.metrics:
            iv = run.metrics[name]
            row.append(tables.fmt(iv.mean))
            if name == report.metric:
                row.append(tables.fmt_ci(iv.lo, iv.hi))
        rows.append(row)
    bold = set()
    if len(report.runs) > 1:
        for name, col in metric_cols.items():
            pick = min if lower_is_better(name) else max  # context_tokens@k: fewer is better
            best = pick(round(run.metrics[name].mean, 3) for run in report.runs)
            bold |= {(r, col) for r, run in enumerate(report.runs) if round(run.metrics[name].mean, 3) == best}
    n_left = len(report.params) + (1 if show_dir else 0)
    align = ["r"] + ["l"] * n_left + ["r"] * (len(columns) - 1 - n_left)
    return tables.Table(columns=columns, rows=rows, align=align, bold=bold)


def ambiguous_params(report: Report) -> bool:
    """True when the differing config values do not tell every run apart."""
    keys = [tuple(repr(run.params.get(p)) for p in report.params) for run in report.runs]
    return not report.params or len(set(keys)) < len(keys)


def _level(report: Report) -> str:
    correction = report.shown_pairs()[0].correction if report.shown_pairs() else None
    return f"{report.boot.level:.0%} CI" + (f" ({correction})" if correction else "")


def _pair_cells(pair, level: float) -> list[str]:
    """diff, interval, p (adjusted when corrected; against the report's alpha), verdict: the
    same four cells everywhere."""
    return [tables.fmt_signed(pair.diff.mean), verdicts.interval(pair.test), verdicts.p_value(pair.p, level),
            str(pair.verdict)]


def _pair_notes(report: Report, pairs, labels: list[str]) -> list[str]:
    notes = [verdicts.open_note([p.test for p in pairs]), verdicts.few_changed(labels, [p.test for p in pairs])]
    return [note for note in notes if note]


def pairs_table(report: Report) -> tables.Table | None:
    if report.baseline is None or not report.pairs:
        return None
    base = report.runs[report.baseline]
    label = measure_label(report.metric)
    index = {run.run_dir: i for i, run in enumerate(report.runs)}
    k = cutoff(report.metric)
    p_name = f"p {report.pairs[0].correction}" if report.pairs[0].correction else "p"
    columns = ["#", *report.params, label, f"diff {label}", _level(report), p_name, "verdict", "up", "down", "same",
               f"fixed@{k}", f"broken@{k}"]
    rows = []
    for pair in report.pairs:
        i = index[pair.b]
        rows.append([
            str(i), *_params_cells(report, report.runs[i]), tables.fmt(pair.mean_b),
            *_pair_cells(pair, report.boot.level),
            str(pair.up), str(pair.down), str(pair.same), _ids_cell(pair.fixed), _ids_cell(pair.broken),
        ])
    align = ["r"] + ["l"] * len(report.params) + ["r"] * 4 + ["l"] + ["r"] * 3 + ["l", "l"]
    notes = [f"fixed@{k}: {fixed_note(report.metric, 'the baseline', 'the run')}; broken@{k}: the reverse",
             *_pair_notes(report, report.pairs, [f"#{index[p.b]}" for p in report.pairs])]
    return tables.Table(
        columns=columns,
        rows=rows,
        align=align,
        title=f"Paired differences vs baseline #{report.baseline} {base.label} "
        f"({label} {base.metrics[report.metric].mean:.3f})" if report.metric in base.metrics else
        f"Paired differences vs baseline #{report.baseline} {base.label}",
        note="; ".join(notes),
        wrap={len(columns) - 2, len(columns) - 1},
    )


def all_pairs_table(report: Report) -> tables.Table | None:
    """``--all-pairs``: every run against every earlier one, with its verdict."""
    if not report.all_pairs:
        return None
    label = measure_label(report.metric)
    index = {run.run_dir: i for i, run in enumerate(report.runs)}
    p_name = f"p {report.all_pairs[0].correction}" if report.all_pairs[0].correction else "p"
    names = [f"#{index[p.b]} vs #{index[p.a]}" for p in report.all_pairs]
    rows = [[name, *_pair_cells(pair, report.boot.level), str(pair.up), str(pair.down)]
            for name, pair in zip(names, report.all_pairs)]
    return tables.Table(
        columns=["pair", f"diff {label}", _level(report), p_name, "verdict", "up", "down"], rows=rows,
        align=["l", "r", "r", "r", "l", "r", "r"],
        title=f"Every pair ({label}, paired: the later run minus the earlier)",
        note="; ".join(_pair_notes(report, report.all_pairs, names)) or None,
    )


def by_table(report: Report, by=None) -> tables.Table | None:
    """The ``--by`` table of ``by`` (default the first: ``--by-metric``)."""
    by = by or report.by
    if by is None:
        return None
    level = f"{report.boot.level:.0%} CI"
    columns = ["#", *report.params] + [f"{v} (n={n})" for v, n in zip(by.values, by.counts)]
    rows = []
    for i, (run, cells) in enumerate(zip(report.runs, by.cells)):
        row = [str(i), *_params_cells(report, run)]
        for cell in cells:
            row.append("-" if cell is None else f"{tables.fmt(cell.mean)} {tables.fmt_ci(cell.lo, cell.hi)}")
        rows.append(row)
    align = ["r"] + ["l"] * len(report.params) + ["r"] * len(by.values)
    return tables.Table(
        columns=columns, rows=rows, align=align,
        title=f"{measure_label(by.metric)} by {by.column} (mean {level})",
    )


def question_table(report: Report) -> tables.Table | None:
    if report.per_question is None:
        return None
    columns = ["", "id", "kind", *(run.label for run in report.runs), "question"]
    rows, flagged = [], set()
    for r, q in enumerate(report.per_question):
        ranks = [
            "n/a" if i in q.absent else ("-" if rank is None else str(rank))
            for i, rank in enumerate(q.ranks)
        ]
        rows.append(["x" if q.missed_by_all else "", q.question_id, q.kind or "", *ranks, shown(q.question)])
        if q.missed_by_all:
            flagged.add(r)
    n_missed = len(flagged)
    align = ["l", "l", "l"] + ["r"] * len(report.runs) + ["l"]
    return tables.Table(
        columns=columns, rows=rows, align=align, flagged=flagged, wrap={len(columns) - 1},
        title="Rank of the first relevant section per question (- not retrieved)",
        note=f"x: missed by every run ({n_missed} question{'s' if n_missed != 1 else ''})",
    )


def tables_of(report: Report) -> list[tables.Table]:
    """Every table the report shows, in order (those with nothing to show left out)."""
    found = [main_table(report), latency_table(report), stage_table(report), cost_table(report), pairs_table(report),
             chain_table(report), all_pairs_table(report), sureness.pairs_table(report), sureness.ranks_table(report),
             sureness.calibration_table(report), by_table(report), *(by_table(report, b) for b in report.by_more),
             question_table(report)]
    return [t for t in found if t is not None]


# ------------------------------------------------------------- csv


def to_csv(report: Report) -> str:
    """One row per run (params, metrics with CI bounds, latency, pairs, by);
    with per-question data: one row per question instead."""
    if report.per_question is not None:
        columns = ["question_id", "kind", "split", "missed_by_all"]
        columns += [run.label for run in report.runs] + ["question"]
        rows = [
            [q.question_id, q.kind, q.split, int(q.missed_by_all),
             *(("" if i in q.absent else r) for i, r in enumerate(q.ranks)), q.question]
            for q in report.per_question
        ]
        return tables.to_csv(*with_gate(report.gate, columns, rows))
    columns = ["run", "label", "run_dir", *report.params, "n_chunks", "n_questions", "n_unanswerable"]
    for name in report.metrics:
        columns += [name, f"{name}_lo", f"{name}_hi"]
    columns += [f"latency_{q}_ms{end}" for q in ("p50", "p95") for end in ("", "_lo", "_hi")]
    priced = any(run.costs.get("usd_per_1000") is not None for run in report.runs)
    columns += ["usd_per_1000", "usd_per_1000_lo", "usd_per_1000_hi"] if priced else []
    order = report.latency
    columns += ["latency_faster_than"] if order else []
    columns += ["latency_vs_baseline"] if order and report.baseline is not None else []
    pairs = {p.b: p for p in report.pairs}
    if report.baseline is not None:
        m = report.metric
        columns += [f"diff_{m}", f"diff_{m}_lo", f"diff_{m}_hi", "p", "p_adjusted", "verdict",
                    "up", "down", "same", "fixed", "broken"]
    sure = report.sure
    tested = sure is not None and bool(sure.pairs) and report.baseline is not None
    if tested:
        columns += ["hedges_gz", "hedges_gz_lo", "hedges_gz_hi", "mde"]
    if sure is not None and sure.ranks is not None:
        columns += ["rank", "rank_lo", "rank_hi"]
    if report.by is not None:
        for v in report.by.values:
            base = f"{report.by.metric}[{report.by.column}={v}]"
            columns += [base, f"{base}_lo", f"{base}_hi"]
    rows = []
    for i, run in enumerate(report.runs):
        row: list[Any] = [i, run.label, run.run_dir, *_params_cells(report, run), run.n_chunks, run.n_questions,
                          run.n_unanswerable]
        for name in report.metrics:
            iv = run.metrics[name]
            row += [iv.mean, iv.lo, iv.hi]
        for q in ("p50", "p95"):
            found = run.latency.get(q)
            row += [found.value, found.lo, found.hi] if found else [None] * 3
        if priced:
            row += [run.costs.get("usd_per_1000"), *(run.costs.get("usd_per_1000_ci") or [None, None])]
        if order:
            row.append(" ".join(str(j) for j in order.faster_than(i)))
        if order and report.baseline is not None:
            row.append("baseline" if i == report.baseline else order.verdict(i, report.baseline))
        if report.baseline is not None:
            p = pairs.get(run.run_dir)
            if p is None:
                row += [None] * 11
            else:
                row += [p.diff.mean, p.diff.lo, p.diff.hi, p.test.p, p.p_adjusted, str(p.verdict), p.up, p.down,
                        p.same, " ".join(p.fixed), " ".join(p.broken)]
        if tested:
            t = sure.for_pair(pairs[run.run_dir]) if run.run_dir in pairs else None
            row += [None] * 4 if t is None else [
                t.size.effect.hedges_gz, t.size.effect.lo, t.size.effect.hi, t.size.detectable.difference,
            ]
        if sure is not None and sure.ranks is not None:
            r = sure.ranks[i]
            row += [r.rank, r.lo, r.hi]
        if report.by is not None:
            for cell in report.by.cells[i]:
                row += [None] * 3 if cell is None else [cell.mean, cell.lo, cell.hi]
        rows.append(row)
    return tables.to_csv(*with_gate(report.gate, columns, rows))


def plot(report: Report, path: str | Path) -> None:
    """The plot ``--plot`` writes (:func:`receval.render.plots.plot_report`)."""
    plot_report(report, path)


def _ids_cell(ids: list[str]) -> str:
    if not ids:
        return "-"
    shown = " ".join(ids[:MAX_IDS_SHOWN])
    more = len(ids) - MAX_IDS_SHOWN
    return f"{len(ids)}: {shown}" + (f" ... (+{more})" if more > 0 else "")


def chain_table(report: Report) -> tables.Table | None:
    """One row per step: the two runs (rows of the main table), their means, the difference with its interval,
    up / down, and the fixed and broken question ids."""
    steps = getattr(report, "chain", None)
    if not steps:
        return None
    label = measure_label(report.metric)
    k = cutoff(report.metric)
    index = {run.run_dir: i for i, run in enumerate(report.runs)}
    p_name = f"p {steps[0].correction}" if steps[0].correction else "p"
    names = [f"#{index[step.a]} -> #{index[step.b]}" for step in steps]
    rows = [
        [name, tables.fmt(step.mean_a), tables.fmt(step.mean_b), *_pair_cells(step, report.boot.level),
         str(step.up), str(step.down), _ids_cell(step.fixed), _ids_cell(step.broken)]
        for name, step in zip(names, steps)
    ]
    return tables.Table(
        columns=["step", f"{label} before", f"{label} after", "diff", _level(report), p_name, "verdict", "up", "down",
                 f"fixed@{k}", f"broken@{k}"],
        rows=rows,
        align=["l", "r", "r", "r", "r", "r", "l", "r", "r", "l", "l"],
        wrap={9, 10},
        title=f"Stage by stage: each run against the one before it ({label}, paired)",
        note="; ".join([f"fixed@{k}: {fixed_note(report.metric)}; broken@{k}: the reverse",
                        *_pair_notes(report, steps, names)]),
    )


def fixed_note(metric: str, earlier: str = "the run before", later: str = "the step's run") -> str:
    """What fixed@k means for ``metric``, going from ``earlier`` to ``later``."""
    if metric.strip().lower() in ("rr", "mrr"):
        return f"a relevant section first in {later}, not in {earlier}"
    return f"{metric} 0 in {earlier}, above 0 in {later}"


def render(report: Report, fmt: str) -> str:
    """The report in ``fmt`` (table, markdown, csv, json or latex); in Markdown the
    gate's verdict is a bold paragraph of its own."""
    if fmt == "markdown" and report.gate is not None:
        return verdict_markdown(report.gate) + tables.to_markdown(header_lines(report, verdict=False), tables_of(report))
    return tables.formatted(
        fmt, lambda: header_lines(report), lambda: tables_of(report), report.to_dict, lambda: to_csv(report)
    )
