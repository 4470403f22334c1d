"""Report stored runs side by side: ``python -m receval.report RUNS...``.

::

    python -m receval.report runs/2026-11-29/10-00-00            # a sweep, run dirs, or several
    python -m receval.report RUNS... --by kind --per-question --baseline retriever=tfidf
    python -m receval.report RUNS... --split test --fail-under hit@3=0.70 --format markdown

One row per run, in sweep order: the config values that differ between the runs,
the number of chunks, hit@1, hit@3, recall@3, MRR with its bootstrap interval,
nDCG@5 and per-question latency p50/p95. Every figure is derived from the stored
per-question columns (MRR = mean of ``rr`` over the answerable questions);
unanswerable questions (null measures) are left out and counted in the header.

- ``--metrics hit@1,rr,...`` picks the columns; ``--metric`` the one with the
  interval column, the baseline differences and the plot (default ``rr``).
- ``--by COLUMN`` (kind, split, ...): ``--by-metric`` (default hit@3) per value.
- ``--per-question``: each question's rank of its first relevant section per run
  (``-`` when not retrieved); questions every run misses are marked ``x``.
- ``--baseline SELECTOR`` (a run dir, or ``key=value[,key=value]`` matching one run):
  every other run's paired difference, its interval, questions fixed and broken.
- ``--by overlap``: the derived column ``overlap`` buckets each question's ROUGE-1
  precision against its relevant sections (low / medium / high,
  ``--overlap-thresholds 0.3,0.6``), to see whether scores come from copied words.
- ``--split test`` / ``--where COLUMN=VALUE``: score only those questions.
- ``--fail-under hit@3=0.70[,rr=0.6]``: exit status 1 when a run's mean is below.
- ``--format table|markdown|csv|json|latex``, ``--out FILE``, ``--plot FILE.png``.
  ``csv`` is one row per run (with ``--per-question``: one row per question).

Intervals use the first run's saved ``bootstrap`` config unless ``--n-resamples``,
``--seed``, ``--level`` or ``--method`` are given; they repeat exactly. Exit status:
0, 1 for ``--fail-under``, 2 for a user error (one line).
"""

from __future__ import annotations

import hashlib
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from receval import outputs
from receval import runs as runs_mod
from receval import tables
from receval import chain, stage_costs
from receval.bootstrap import Interval
from receval.compare import FORMATS, Pair, grouped_intervals, paired, write_output
from receval.errors import RecevalError, exit_on_error
from receval.metrics import lower_is_better
from receval.runs import BootSettings, Run, format_value, measure_label
from receval.overlap import overlap_bucket
from receval.store import LATENCY, OVERLAP, atomic_write

OVERLAP_THRESHOLDS = (0.3, 0.6)  # low < 0.3 <= medium < 0.6 <= high

DEFAULT_METRICS = ("hit@1", "hit@3", "recall@3", "rr", "ndcg@5")
MAX_IDS_SHOWN = 12  # question ids listed per cell in the text formats (JSON has all)
MAX_BY_VALUES = 32  # --by needs a column with a few values (kind, split), not question ids


@dataclass
class RunSummary:
    run_dir: str
    label: str
    params: dict[str, Any]  # short name -> config value
    n_chunks: int | None
    n_questions: int  # scored (answerable) questions, after --where
    n_unanswerable: int
    metrics: dict[str, Interval]
    latency_p50: float | None
    latency_p95: float | None
    stages: dict[str, dict] = field(default_factory=dict)  # stage -> p50, p95, api calls per 1,000
    costs: dict = field(default_factory=dict)  # pairs, $ per 1,000 questions, index $ (receval.stage_costs)

    def to_dict(self) -> dict:
        return {
            "run_dir": self.run_dir,
            "label": self.label,
            "params": {k: _jsonable(v) for k, v in self.params.items()},
            "n_chunks": self.n_chunks,
            "n_questions": self.n_questions,
            "n_unanswerable": self.n_unanswerable,
            "metrics": {name: iv.as_dict() for name, iv in self.metrics.items()},
            "latency_ms": {"p50": self.latency_p50, "p95": self.latency_p95},
            "stages": self.stages,
            "costs": self.costs,
        }


@dataclass
class ByTable:
    column: str
    metric: str
    values: list[str]
    counts: list[int]  # scored questions per value (first run)
    cells: list[list[Interval | None]]  # [run][value]

    def to_dict(self, runs: list[RunSummary]) -> dict:
        return {
            "column": self.column,
            "metric": self.metric,
            "values": [
                {"value": v, "n_questions": n} for v, n in zip(self.values, self.counts)
            ],
            "runs": [
                {
                    "run_dir": run.run_dir,
                    "label": run.label,
                    "values": {
                        v: (cell.as_dict() if cell is not None else None)
                        for v, cell in zip(self.values, row)
                    },
                }
                for run, row in zip(runs, self.cells)
            ],
        }


@dataclass
class QuestionRow:
    question_id: str
    kind: str | None
    split: str | None
    question: str | None
    ranks: list[int | None]  # per run; None: not retrieved (or absent, see below)
    absent: list[int]  # runs that do not have this question
    missed_by_all: bool

    def to_dict(self) -> dict:
        out = {
            "question_id": self.question_id,
            "kind": self.kind,
            "split": self.split,
            "question": self.question,
            "ranks": self.ranks,
            "missed_by_all": self.missed_by_all,
        }
        if self.absent:
            out["absent"] = self.absent
        return out


@dataclass
class Report(tables.Rendered):
    """Everything the report shows, computed once; ``to_*`` only format it."""

    runs: list[RunSummary]
    params: list[str]  # short names of the differing config keys, in order
    metrics: list[str]  # canonical measure names, in column order
    metric: str  # the measure with the CI column, the baseline pairs and the plot
    questions: dict  # header counts
    boot: BootSettings
    where: list[tuple[str, str]] = field(default_factory=list)
    baseline: int | None = None  # index into runs
    pairs: list[Pair] = field(default_factory=list)
    by: ByTable | None = None
    per_question: list[QuestionRow] | None = None
    floors: dict[str, float] = field(default_factory=dict)  # --fail-under
    chain: list[Pair] = field(default_factory=list)  # --chain: each run against the one before (receval.chain)

    # ------------------------------------------------------------- dict / json

    def to_dict(self) -> dict:
        out: dict[str, Any] = {
            "runs": [run.to_dict() for run in self.runs],
            "pairs": [self._pair_dict(p) for p in self.pairs],
            "params": self.params,
            "metrics": self.metrics,
            "metric": self.metric,
            "questions": self.questions,
            "where": {c: v for c, v in self.where},
            "bootstrap": self.boot.kwargs(),
            "baseline": self.runs[self.baseline].run_dir if self.baseline is not None else None,
        }
        if self.floors:
            out["fail_under"] = {
                "floors": self.floors,
                "failures": self.failures(),
            }
        if self.chain:
            out["chain"] = [self._pair_dict(p) for p in self.chain]
        if self.by is not None:
            out["by"] = self.by.to_dict(self.runs)
        if self.per_question is not None:
            out["per_question"] = [row.to_dict() for row in self.per_question]
        return out

    @staticmethod
    def _pair_dict(pair: Pair) -> dict:
        return {
            "baseline": pair.a,
            "run_dir": pair.b,
            "mean_baseline": pair.mean_a,
            "mean": pair.mean_b,
            **pair.to_dict(),
        }


    # ------------------------------------------------------------- text tables

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
        lines = [first, self.boot.describe()]
        if self.baseline is not None:
            base = self.runs[self.baseline]
            lines.append(f"baseline: #{self.baseline} {base.label} ({base.run_dir})")
        return lines

    def _params_cells(self, run: RunSummary) -> list[str]:
        return [format_value(run.params.get(p)) for p in self.params]

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
                pick = min if lower_is_better(name) else max
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
            note=f"fixed@{k}: {chain.fixed_note(self.metric)} (baseline -> run); broken@{k}: the reverse",
            wrap={len(columns) - 2, len(columns) - 1},
        )

    def by_table(self) -> tables.Table | None:
        if self.by is None:
            return None
        by = self.by
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
        columns = ["", "id", "kind", *(f"#{i}" for i in range(len(self.runs))), "question"]
        rows, flagged = [], set()
        for r, q in enumerate(self.per_question):
            ranks = [
                "n/a" if i in q.absent else ("-" if rank is None else str(rank))
                for i, rank in enumerate(q.ranks)
            ]
            rows.append(["x" if q.missed_by_all else "", q.question_id, q.kind or "", *ranks, q.question or ""])
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
                 chain.chain_table(self),
                 self.by_table(), self.question_table()]
        return [t for t in found if t is not None]

    # ------------------------------------------------------------- csv

    def to_csv(self) -> str:
        """One row per run (params, metrics with CI bounds, latency, pairs, by);
        with per-question data: one row per question instead."""
        if self.per_question is not None:
            columns = ["question_id", "kind", "split", "missed_by_all"]
            columns += [f"rank_{i}" for i in range(len(self.runs))] + ["question"]
            rows = [
                [q.question_id, q.kind, q.split, int(q.missed_by_all),
                 *(("" if i in q.absent else r) for i, r in enumerate(q.ranks)), q.question]
                for q in self.per_question
            ]
            return tables.to_csv(columns, rows)
        columns = ["run", "run_dir", *self.params, "n_chunks", "n_questions", "n_unanswerable"]
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
            row: list[Any] = [i, run.run_dir, *self._params_cells(run), run.n_chunks, run.n_questions, run.n_unanswerable]
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


    # ------------------------------------------------------------- checks and plot

    def failures(self) -> list[str]:
        """One line per run and metric whose mean is below its ``--fail-under`` floor."""
        lines = []
        for metric, floor in self.floors.items():
            for i, run in enumerate(self.runs):
                mean = run.metrics[metric].mean
                if mean < floor:
                    lines.append(
                        f"fail-under: #{i} {run.label}: {metric} {mean:.3f} < {floor:g} ({run.run_dir})"
                    )
        return lines

    def plot(self, path: str | Path, metric: str | None = None) -> None:
        """Each run's mean with its interval as error bars (needs matplotlib)."""
        metric = metric or self.metric
        try:
            from matplotlib.figure import Figure
        except ImportError:
            raise RecevalError(
                "--plot needs matplotlib: install receval[plot] (pip install 'receval[plot]')"
            ) from None
        path = Path(path)
        labels = [f"#{i} {run.label}" for i, run in enumerate(self.runs)]
        means = np.array([run.metrics[metric].mean for run in self.runs])
        lo = np.array([run.metrics[metric].lo for run in self.runs])
        hi = np.array([run.metrics[metric].hi for run in self.runs])
        figure = Figure(figsize=(max(4.0, 0.8 * len(self.runs) + 2), 3.5), layout="constrained")
        axes = figure.add_subplot()
        x = np.arange(len(self.runs))
        axes.errorbar(x, means, yerr=[means - lo, hi - means], fmt="o", capsize=4)
        axes.set_xticks(x, labels, rotation=30 if len(self.runs) > 4 else 0, ha="right" if len(self.runs) > 4 else "center")
        axes.set_ylabel(f"{measure_label(metric)} ({self.boot.level:.0%} CI)")
        axes.grid(axis="y", alpha=0.3)
        fmt = path.suffix.lstrip(".").lower() or "png"
        atomic_write(path, lambda tmp: figure.savefig(tmp, format=fmt, dpi=150))


def _ids_cell(ids: list[str]) -> str:
    if not ids:
        return "-"
    shown = " ".join(ids[:MAX_IDS_SHOWN])
    more = len(ids) - MAX_IDS_SHOWN
    return f"{len(ids)}: {shown}" + (f" ... (+{more})" if more > 0 else "")


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


# ----------------------------------------------------------------- computing


def _labels(runs: list[Run], keys: list[str]) -> list[str]:
    if keys:
        labels = [" ".join(format_value(r.flat.get(k)) for k in keys) for r in runs]
    else:
        labels = [r.run_dir.name for r in runs]
        if len(set(labels)) < len(labels):
            labels = [f"{r.run_dir.parent.name}/{r.run_dir.name}" for r in runs]
    counts = Counter(labels)
    return [f"{label} #{i}" if counts[label] > 1 else label for i, label in enumerate(labels)]


def _mask_key(run: Run, mask: np.ndarray) -> bytes:
    digest = hashlib.blake2b(run.ids_digest, digest_size=16)
    digest.update(np.packbits(mask).tobytes())
    digest.update(str(len(mask)).encode())
    return digest.digest()


def _question_counts(runs: list[Run], metric: str) -> dict:
    first = runs[0]
    scored = ~np.isnan(first.values(metric))
    kinds = Counter(k for k, ok in zip(first.strings("kind"), scored) if ok)
    splits = Counter(first.strings("split"))
    same = all(len(r.ids) == len(first.ids) and r.ids_digest == first.ids_digest for r in runs)
    return {
        "n_questions": int(len(first.ids)),
        "n_scored": int(scored.sum()),
        "n_unanswerable": int((~scored).sum()),
        "kinds": {str(k): n for k, n in kinds.items()},
        "splits": {str(k): n for k, n in splits.items()},
        "same_questions": same,
    }


def parse_metrics(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise RecevalError("--metrics: list measures, e.g. hit@1,hit@3,rr")
    return names


def parse_floors(items: list[str]) -> dict[str, str]:
    """``["hit@3=0.70,rr=0.6"]`` -> {"hit@3": "0.70", "rr": "0.6"} (checked later)."""
    floors: dict[str, str] = {}
    for item in items:
        for part in item.split(","):
            part = part.strip()
            name, sep, value = part.partition("=")
            if not sep or not name.strip() or not value.strip():
                raise RecevalError(
                    f"--fail-under {item!r}: use METRIC=FLOOR[,METRIC=FLOOR], e.g. hit@3=0.70"
                )
            if name.strip() in floors:
                raise RecevalError(
                    f"--fail-under {name.strip()} is given twice; give each metric one floor"
                )
            floors[name.strip()] = value.strip()
    return floors


def _check_floors(floors: dict[str, str], runs: list[Run]) -> dict[str, float]:
    out = {}
    for name, text in floors.items():
        try:
            value = float(text)
        except ValueError:
            raise RecevalError(
                f"--fail-under {name}={text}: {text!r} is not a number; use e.g. {name}=0.70"
            ) from None
        if not 0 <= value <= 1:
            raise RecevalError(
                f"--fail-under {name}={text}: floors are means between 0 and 1 (0.70, not 70)"
            )
        canonical = runs_mod.canonical_measure(name, runs, option="--fail-under")
        if canonical in out:
            raise RecevalError(
                f"--fail-under {name}={text}: {canonical} is given twice; give each metric one floor"
            )
        out[canonical] = value
    return out


def build_report(
    paths: list[str | Path],
    metrics: list[str] | None = None,
    metric: str = "rr",
    by: str | None = None,
    by_metric: str = "hit@3",
    per_question: bool = False,
    baseline: str | None = None,
    where: list[tuple[str, str]] | None = None,
    floors: dict[str, str] | None = None,
    n_resamples: int | None = None,
    seed: int | None = None,
    level: float | None = None,
    method: str | None = None,
    intersect: bool = False,
    overlap_thresholds: tuple[float, float] = OVERLAP_THRESHOLDS,
    overlap_measure: str = "rouge1_p",
    qrels: str | Path | None = None,
    chain_steps: bool = False,
) -> Report:
    """Read the runs under ``paths`` and compute everything the report shows.

    With ``qrels``, a path that is a file is an external TREC run, scored beside the
    stored runs by the same measures (:mod:`receval.external`)."""
    where = list(where or [])
    loaded = [
        with_overlap(run, overlap_measure, overlap_thresholds)
        for run in runs_mod.load_runs(paths, qrels=qrels)
    ]
    base_index = None
    if baseline is not None:
        base_index, base_run = runs_mod.select_one(loaded, baseline)
        if base_index is None:  # a run directory outside RUNS: show it first
            loaded.insert(0, base_run)
            base_index = 0
    loaded = runs_mod.filter_questions(loaded, where)

    # measures: explicit ones must exist; missing defaults are dropped
    metric = runs_mod.canonical_measure(metric, loaded, option="--metric")
    if metrics is None:
        names = [m for m in DEFAULT_METRICS if all(m in r.table.column_names for r in loaded)]
    else:
        names = [runs_mod.canonical_measure(m, loaded, option="--metrics") for m in metrics]
    checked_floors = _check_floors(floors or {}, loaded)
    for extra in [metric, *checked_floors]:
        if extra not in names:
            names.append(extra)
    names = list(dict.fromkeys(names))
    if by is not None:
        for run in loaded:
            if by not in run.table.column_names:
                raise RecevalError(
                    f"--by {by}: no column {by!r} in {run.run_dir}; use kind, split or "
                    "another string column"
                )
        by_metric = runs_mod.canonical_measure(by_metric, loaded, option="--by-metric")

    boot = runs_mod.bootstrap_settings(loaded, n_resamples, seed, level, method)
    keys = runs_mod.differing_params([r.flat for r in loaded], [r.overrides for r in loaded])
    names_of = runs_mod.short_names(keys)
    labels = _labels(loaded, keys)

    # every run x measure interval: one bootstrap call per question set
    items = []
    for run in loaded:
        for name in names:
            values = run.values(name)
            scored = ~np.isnan(values)
            if not scored.any():
                raise RecevalError(f"{run.run_dir}: no question has a {name} value (all unanswerable?)")
            items.append((_mask_key(run, scored), values[scored]))
    intervals = iter(grouped_intervals(items, boot))

    summaries = []
    for run, label in zip(loaded, labels):
        metric_ivs = {name: next(intervals) for name in names}
        scored = ~np.isnan(run.values(metric))
        latency = run.values("latency_ms") if "latency_ms" in run.table.column_names else np.array([np.nan])
        p50, p95 = (
            (float(v) for v in np.nanpercentile(latency, [50, 95]))
            if not np.isnan(latency).all() else (None, None)
        )
        summaries.append(
            RunSummary(
                run_dir=str(run.run_dir),
                label=label,
                params={names_of[k]: run.flat.get(k) for k in keys},
                n_chunks=run.n_chunks,
                n_questions=int(scored.sum()),
                n_unanswerable=int((~scored).sum()),
                metrics=metric_ivs,
                latency_p50=p50,
                latency_p95=p95,
                stages=stage_latency(run),
                costs=stage_costs.cost_facts(run),
            )
        )

    pairs: list[Pair] = []
    if base_index is not None and len(loaded) > 1:
        others = [r for i, r in enumerate(loaded) if i != base_index]
        pairs = paired(loaded[base_index], others, metric, boot, intersect)

    report = Report(
        runs=summaries,
        params=[names_of[k] for k in keys],
        metrics=names,
        metric=metric,
        questions=_question_counts(loaded, metric),
        boot=boot,
        where=where,
        baseline=base_index,
        pairs=pairs,
        floors=checked_floors,
    )
    if chain_steps and len(loaded) > 1:
        report.chain = chain.chain_pairs(loaded, metric, boot, intersect)
    if by is not None:
        report.by = _by_table(loaded, by, by_metric, boot)
    if per_question:
        report.per_question = _per_question(loaded)
    return report


def with_overlap(run: Run, measure: str, thresholds: tuple[float, float]) -> Run:
    """Add the derived column ``overlap`` (low / medium / high ``measure`` of each
    question against its relevant sections), for ``--by overlap`` and ``--where``."""
    if measure not in OVERLAP:
        raise RecevalError(f"--overlap-measure {measure}: use one of {', '.join(OVERLAP)}")
    if measure not in run.table.column_names or "overlap" in run.table.column_names:
        return run
    buckets = overlap_bucket(run.table.column(measure).to_pylist(), thresholds)
    return run.filtered(run.table.append_column("overlap", pa.array(buckets, pa.string())))


def stage_latency(run: Run) -> dict[str, dict]:
    """Per stage: p50 / p95 ms and API calls per 1,000 questions while answering them."""
    facts = run.info.get("stages", {}) if isinstance(run.info.get("stages"), dict) else {}
    n_questions = max(run.table.num_rows, 1)
    out = {}
    for name in run.table.column_names:
        if not name.startswith(f"{LATENCY}."):
            continue
        stage = name[len(LATENCY) + 1:]
        values = run.values(name)
        p50, p95 = (float(v) for v in np.nanpercentile(values, [50, 95])) if not np.isnan(values).all() else (None, None)
        calls = (facts.get(stage) or {}).get("search_api_calls", 0) or 0
        out[stage] = {"p50": p50, "p95": p95, "api_calls_per_1000": 1000.0 * calls / n_questions}
    return out


def _by_table(runs: list[Run], column: str, metric: str, boot: BootSettings) -> ByTable:
    values: list[str] = []
    for run in runs:
        for v in run.strings(column):
            if v is not None and str(v) not in values:
                values.append(str(v))
    if column == "overlap":  # buckets in their natural order
        values = [v for v in ("low", "medium", "high") if v in values] + [v for v in values if v not in ("low", "medium", "high")]
    if len(values) > MAX_BY_VALUES:
        raise RecevalError(
            f"--by {column}: {len(values)} distinct values; pick a column with a few "
            f"(at most {MAX_BY_VALUES}), e.g. kind or split"
        )
    items, where_item = [], {}
    counts = [0] * len(values)
    for r, run in enumerate(runs):
        scores = run.values(metric)
        col = np.asarray([None if v is None else str(v) for v in run.strings(column)], dtype=object)
        for j, v in enumerate(values):
            mask = (col == v) & ~np.isnan(scores)
            if r == 0:
                counts[j] = int(mask.sum())
            if mask.any():
                where_item[(r, j)] = len(items)
                items.append((_mask_key(run, mask), scores[mask]))
    intervals = grouped_intervals(items, boot)
    keep = [j for j in range(len(values)) if any((r, j) in where_item for r in range(len(runs)))]
    cells = [
        [intervals[where_item[(r, j)]] if (r, j) in where_item else None for j in keep]
        for r in range(len(runs))
    ]
    return ByTable(
        column=column, metric=metric, values=[values[j] for j in keep],
        counts=[counts[j] for j in keep], cells=cells,
    )


def _per_question(runs: list[Run]) -> list[QuestionRow]:
    """Answerable questions (a non-null rr in some run), first run's order first."""
    order: list[str] = []
    info: dict[str, tuple] = {}
    per_run: list[dict[str, int | None]] = []
    for run in runs:
        scored = ~np.isnan(run.values("rr"))
        ranks = run.values("first_relevant_rank")
        kinds, splits, texts = run.strings("kind"), run.strings("split"), run.strings("question")
        mapping: dict[str, int | None] = {}
        for i, qid in enumerate(run.ids):
            if not scored[i]:
                continue
            mapping[qid] = None if np.isnan(ranks[i]) else int(ranks[i])
            if qid not in info:
                info[qid] = (kinds[i], splits[i], texts[i])
                order.append(qid)
        per_run.append(mapping)
    rows = []
    for qid in order:
        ranks = [m.get(qid) for m in per_run]
        absent = [i for i, m in enumerate(per_run) if qid not in m]
        present = [r for i, r in enumerate(ranks) if i not in absent]
        kind, split, text = info[qid]
        rows.append(QuestionRow(qid, kind, split, text, ranks, absent, all(r is None for r in present)))
    return rows


# ----------------------------------------------------------------- command line


def build_parser() -> runs_mod.ArgumentParser:
    parser = runs_mod.ArgumentParser(
        prog="python -m receval.report",
        description="Report stored runs side by side, with bootstrap intervals.",
    )
    parser.add_argument(
        "runs", nargs="+", metavar="RUN",
        help="run directories or sweep directories; with --qrels also TREC run files",
    )
    parser.add_argument(
        "--qrels", metavar="FILE",
        help="judgements (TREC qrels or BEIR qrels tsv) to score TREC run files given as RUN",
    )
    parser.add_argument(
        "--metrics", help="columns, comma-separated (default hit@1,hit@3,recall@3,rr,ndcg@5)"
    )
    parser.add_argument(
        "--metric", default="rr",
        help="measure with the CI column, baseline differences and plot (default rr = MRR)",
    )
    parser.add_argument("--by", metavar="COLUMN", help="one measure per value of COLUMN (kind, split, ...)")
    parser.add_argument("--by-metric", default="hit@3", help="the measure of --by (default hit@3)")
    parser.add_argument(
        "--overlap-thresholds", default="0.3,0.6", metavar="LOW,HIGH",
        help="bucket edges of the derived 'overlap' column (--by overlap): low < LOW <= medium < HIGH <= high",
    )
    parser.add_argument(
        "--overlap-measure", default="rouge1_p", choices=OVERLAP,
        help="ROUGE precision the overlap buckets use (default rouge1_p)",
    )
    parser.add_argument("--per-question", action="store_true", help="each question's rank per run")
    parser.add_argument(
        "--baseline", metavar="SELECTOR",
        help="a run dir, or KEY=VALUE[,KEY=VALUE] naming one run: paired differences against it",
    )
    parser.add_argument(
        "--chain", action="store_true",
        help="pair each run with the one before it, in the order given: a paired difference per step",
    )
    parser.add_argument(
        "--intersect", action="store_true",
        help="pair runs over different question sets on the questions they share",
    )
    runs_mod.add_question_filters(parser)
    parser.add_argument(
        "--fail-under", action="append", default=[], metavar="METRIC=FLOOR",
        help="exit status 1 if a run's mean is below FLOOR, e.g. hit@3=0.70 (repeatable)",
    )
    parser.add_argument("--format", choices=FORMATS, default="table")
    parser.add_argument("--out", metavar="FILE", help="write to FILE (atomically) instead of stdout")
    parser.add_argument("--plot", metavar="FILE.png", help="plot each run's --metric with its interval")
    outputs.add_force(parser)
    runs_mod.add_bootstrap_args(parser)
    return parser


def parse_thresholds(text: str) -> tuple[float, float]:
    try:
        low, high = (float(part) for part in text.split(","))
    except ValueError:
        raise RecevalError(f"--overlap-thresholds {text!r}: give LOW,HIGH, e.g. 0.3,0.6") from None
    if not 0 <= low <= high <= 1:
        raise RecevalError(f"--overlap-thresholds {text!r}: need 0 <= LOW <= HIGH <= 1")
    return low, high


def main(argv: list[str] | None = None) -> int:
    with exit_on_error():
        args = build_parser().parse_args(argv)
        inputs = [*args.runs, *([args.qrels] if args.qrels else [])]
        for flag in ("out", "plot"):
            outputs.check_output(getattr(args, flag), force=args.force, protected_dirs=inputs, flag=f"--{flag}")
        report = build_report(
            args.runs,
            metrics=parse_metrics(args.metrics),
            metric=args.metric,
            by=args.by,
            by_metric=args.by_metric,
            per_question=args.per_question,
            baseline=args.baseline,
            where=runs_mod.question_filters(args),
            floors=parse_floors(args.fail_under),
            n_resamples=args.n_resamples,
            seed=args.seed,
            level=args.level,
            method=args.method,
            intersect=args.intersect,
            overlap_thresholds=parse_thresholds(args.overlap_thresholds),
            overlap_measure=args.overlap_measure,
            qrels=args.qrels,
            chain_steps=args.chain,
        )
        if args.plot:
            report.plot(args.plot)
        if args.format == "table" and args.out is None:
            tables.print_rich(report.header_lines(), report.tables())
        else:
            write_output(report.render(args.format), args.out)
        if args.plot:
            print(f"receval: wrote {args.plot}", file=sys.stderr)
        failures = report.failures()
        for line in failures:
            print(f"receval: {line}", file=sys.stderr)
        sys.stderr.flush()
        return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
