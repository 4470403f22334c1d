"""The report's tables: :class:`ReportTables` turns a computed
:class:`receval.results.report.Report` into :class:`receval.tables.Table` objects
(main, latency per stage, paired differences, by column, per question), its CSV
rows and its plot. Nothing here computes a statistic."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from receval import chain, stage_costs, tables
from receval.metrics import lower_is_better
from receval.results.labels import shown
from receval.results.selection import measure_label

MAX_IDS_SHOWN = 12  # question ids listed per cell in the text formats (JSON has all)


class ReportTables(tables.Rendered):
    """Rendering of a report (mixed into it); reads only its computed fields."""

    def header_lines(self) -> list[str]:
        q = self.questions
        kinds = ", ".join(f"{k} {n}" for k, n in q["kinds"].items())
        splits = ", ".join(f"{k} {n}" for k, n in q["splits"].items())
        first = (
            f"{len(self.runs)} run{'s' if len(self.runs) != 1 else ''}; "
            f"{q['n_scored']} questions scored ({kinds})"
        )
        if q["n_unanswerable"]:
            first += f", {q['n_unanswerable']} unanswerable left out"
        first += f"; split: {splits}"
        if self.where:
            first += "; where " + ", ".join(f"{c}={v}" for c, v in self.where)
        if not q["same_questions"]:
            first += "; NOTE the runs are not over the same questions (see n)"
        lines = [first, self.boot.describe(), *(f"note: {note}" for note in q.get("notes", []))]
        if self.baseline is not None:
            base = self.runs[self.baseline]
            lines.append(f"baseline: #{self.baseline} {base.label} ({base.run_dir})")
        for i, run in enumerate(self.runs):
            lines += [f"note: #{i} {run.label}: {note}" for note in run.notes]
        lines += [f"warning: {caution}" for caution in self.cautions]
        return lines

    def _params_cells(self, run) -> list[str]:
        """The run's value of each parameter column; ``-`` where it does not apply."""
        return [shown(run.params[p]) if p in run.params else "-" for p in self.params]

    def main_table(self) -> tables.Table:
        level = f"{self.boot.level:.0%} CI"
        show_n = not self.questions["same_questions"]
        show_dir = self.ambiguous_params()
        columns = ["#", *self.params] + (["run"] if show_dir else []) + ["chunks"]
        columns += ["n"] if show_n else []
        metric_cols: dict[str, int] = {}
        for name in self.metrics:
            metric_cols[name] = len(columns)
            columns.append(measure_label(name))
            if name == self.metric:
                columns.append(f"{measure_label(name)} {level}")
        columns += ["p50 ms", "p95 ms"]
        rows = []
        for i, run in enumerate(self.runs):
            row = [str(i), *self._params_cells(run)] + ([run.run_dir] if show_dir else [])
            row.append(str(run.n_chunks) if run.n_chunks is not None else "-")
            if show_n:
                row.append(str(run.n_questions))
            for name in self.metrics:
                iv = run.metrics[name]
                row.append(tables.fmt(iv.mean))
                if name == self.metric:
                    row.append(tables.fmt_ci(iv.lo, iv.hi))
            row += [tables.fmt_ms(run.latency_p50), tables.fmt_ms(run.latency_p95)]
            rows.append(row)
        bold = set()
        if len(self.runs) > 1:
            for name, col in metric_cols.items():
                pick = min if lower_is_better(name) else max  # context_tokens@k: fewer is better
                best = pick(round(run.metrics[name].mean, 3) for run in self.runs)
                bold |= {(r, col) for r, run in enumerate(self.runs) if round(run.metrics[name].mean, 3) == best}
        n_left = len(self.params) + (1 if show_dir else 0)
        align = ["r"] + ["l"] * n_left + ["r"] * (len(columns) - 1 - n_left)
        return tables.Table(columns=columns, rows=rows, align=align, bold=bold)

    def ambiguous_params(self) -> bool:
        """True when the differing config values do not tell every run apart."""
        keys = [tuple(repr(run.params.get(p)) for p in self.params) for run in self.runs]
        return not self.params or len(set(keys)) < len(keys)

    def pairs_table(self) -> tables.Table | None:
        if self.baseline is None or not self.pairs:
            return None
        base = self.runs[self.baseline]
        label = measure_label(self.metric)
        level = f"{self.boot.level:.0%} CI"
        index = {run.run_dir: i for i, run in enumerate(self.runs)}
        k = chain.cutoff(self.metric)
        columns = ["#", *self.params, label, f"diff {label}", level, "up", "down", "same", f"fixed@{k}", f"broken@{k}"]
        rows = []
        for pair in self.pairs:
            i = index[pair.b]
            rows.append([
                str(i), *self._params_cells(self.runs[i]), tables.fmt(pair.mean_b),
                tables.fmt_signed(pair.diff.mean), tables.fmt_ci(pair.diff.lo, pair.diff.hi, signed=True),
                str(pair.up), str(pair.down), str(pair.same), _ids_cell(pair.fixed), _ids_cell(pair.broken),
            ])
        align = ["r"] + ["l"] * len(self.params) + ["r"] * 6 + ["l", "l"]
        return tables.Table(
            columns=columns,
            rows=rows,
            align=align,
            title=f"Paired differences vs baseline #{self.baseline} {base.label} "
            f"({label} {base.metrics[self.metric].mean:.3f})" if self.metric in base.metrics else
            f"Paired differences vs baseline #{self.baseline} {base.label}",
            note=f"fixed@{k}: {chain.fixed_note(self.metric, 'the baseline', 'the run')}; broken@{k}: the reverse",
            wrap={len(columns) - 2, len(columns) - 1},
        )

    def by_table(self, by=None) -> tables.Table | None:
        """The ``--by`` table of ``by`` (default the first: ``--by-metric``)."""
        by = by or self.by
        if by is None:
            return None
        level = f"{self.boot.level:.0%} CI"
        columns = ["#", *self.params] + [f"{v} (n={n})" for v, n in zip(by.values, by.counts)]
        rows = []
        for i, (run, cells) in enumerate(zip(self.runs, by.cells)):
            row = [str(i), *self._params_cells(run)]
            for cell in cells:
                row.append("-" if cell is None else f"{tables.fmt(cell.mean)} {tables.fmt_ci(cell.lo, cell.hi)}")
            rows.append(row)
        align = ["r"] + ["l"] * len(self.params) + ["r"] * len(by.values)
        return tables.Table(
            columns=columns, rows=rows, align=align,
            title=f"{measure_label(by.metric)} by {by.column} (mean {level})",
        )

    def question_table(self) -> tables.Table | None:
        if self.per_question is None:
            return None
        columns = ["", "id", "kind", *(run.label for run in self.runs), "question"]
        rows, flagged = [], set()
        for r, q in enumerate(self.per_question):
            ranks = [
                "n/a" if i in q.absent else ("-" if rank is None else str(rank))
                for i, rank in enumerate(q.ranks)
            ]
            rows.append(["x" if q.missed_by_all else "", q.question_id, q.kind or "", *ranks, tables.shown(q.question)])
            if q.missed_by_all:
                flagged.add(r)
        n_missed = len(flagged)
        align = ["l", "l", "l"] + ["r"] * len(self.runs) + ["l"]
        return tables.Table(
            columns=columns, rows=rows, align=align, flagged=flagged, wrap={len(columns) - 1},
            title="Rank of the first relevant section per question (- not retrieved)",
            note=f"x: missed by every run ({n_missed} question{'s' if n_missed != 1 else ''})",
        )

    def stage_table(self) -> tables.Table | None:
        """Latency per stage, shown when a run has stages beyond one retriever and the
        top-k selection, or calls a paid API."""
        multi = any(len([s for s in run.stages if s != "select"]) > 1 for run in self.runs)
        paid = any(f["api_calls_per_1000"] for run in self.runs for f in run.stages.values())
        if not (multi or paid):
            return None
        stages = list(dict.fromkeys(s for run in self.runs for s in run.stages))
        columns = ["#", *self.params]
        for stage in stages:
            columns += [f"{stage} p50", f"{stage} p95"]
        if paid:
            columns.append("API calls / 1k questions")
        rows = []
        for i, run in enumerate(self.runs):
            row = [str(i), *self._params_cells(run)]
            for stage in stages:
                fact = run.stages.get(stage)
                row += [tables.fmt_ms(fact["p50"]), tables.fmt_ms(fact["p95"])] if fact else ["-", "-"]
            if paid:
                row.append(f"{sum(f['api_calls_per_1000'] for f in run.stages.values()):.0f}")
            rows.append(row)
        align = ["r"] + ["l"] * len(self.params) + ["r"] * (len(columns) - 1 - len(self.params))
        return tables.Table(columns=columns, rows=rows, align=align, title="Latency per stage (ms per question)")

    def tables(self) -> list[tables.Table]:
        found = [self.main_table(), stage_costs.with_costs(self.stage_table(), self.runs), self.pairs_table(),
                 chain.chain_table(self), self.by_table(), *(self.by_table(b) for b in self.by_more),
                 self.question_table()]
        return [t for t in found if t is not None]

    # ------------------------------------------------------------- csv

    def to_csv(self) -> str:
        """One row per run (params, metrics with CI bounds, latency, pairs, by);
        with per-question data: one row per question instead."""
        if self.per_question is not None:
            columns = ["question_id", "kind", "split", "missed_by_all"]
            columns += [run.label for run in self.runs] + ["question"]
            rows = [
                [q.question_id, q.kind, q.split, int(q.missed_by_all),
                 *(("" if i in q.absent else r) for i, r in enumerate(q.ranks)), q.question]
                for q in self.per_question
            ]
            return tables.to_csv(columns, rows)
        columns = ["run", "label", "run_dir", *self.params, "n_chunks", "n_questions", "n_unanswerable"]
        for name in self.metrics:
            columns += [name, f"{name}_lo", f"{name}_hi"]
        columns += ["latency_p50_ms", "latency_p95_ms"]
        pairs = {p.b: p for p in self.pairs}
        if self.baseline is not None:
            m = self.metric
            columns += [f"diff_{m}", f"diff_{m}_lo", f"diff_{m}_hi", "up", "down", "same", "fixed", "broken"]
        if self.by is not None:
            for v in self.by.values:
                base = f"{self.by.metric}[{self.by.column}={v}]"
                columns += [base, f"{base}_lo", f"{base}_hi"]
        rows = []
        for i, run in enumerate(self.runs):
            row: list[Any] = [i, run.label, run.run_dir, *self._params_cells(run), run.n_chunks, run.n_questions,
                              run.n_unanswerable]
            for name in self.metrics:
                iv = run.metrics[name]
                row += [iv.mean, iv.lo, iv.hi]
            row += [run.latency_p50, run.latency_p95]
            if self.baseline is not None:
                p = pairs.get(run.run_dir)
                if p is None:
                    row += [None] * 8
                else:
                    row += [p.diff.mean, p.diff.lo, p.diff.hi, p.up, p.down, p.same,
                            " ".join(p.fixed), " ".join(p.broken)]
            if self.by is not None:
                for cell in self.by.cells[i]:
                    row += [None] * 3 if cell is None else [cell.mean, cell.lo, cell.hi]
            rows.append(row)
        return tables.to_csv(columns, rows)

    def plot(self, path: str | Path) -> None:
        """The plot ``--plot`` writes (:func:`receval.tables.plots.plot_report`)."""
        from receval.tables.plots import plot_report

        plot_report(self, path)


def _ids_cell(ids: list[str]) -> str:
    if not ids:
        return "-"
    shown = " ".join(ids[:MAX_IDS_SHOWN])
    more = len(ids) - MAX_IDS_SHOWN
    return f"{len(ids)}: {shown}" + (f" ... (+{more})" if more > 0 else "")

