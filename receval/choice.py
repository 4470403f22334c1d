"""Choosing a configuration from stored runs: the cheapest one not shown worse than the best.

``python -m receval.select`` (the shell in :mod:`receval.select`) calls :func:`choose`:

1. Every run is scored on the selection split only (``--split dev``): its mean and
   bootstrap interval of one measure.
2. The *leader* is the best mean (ties: the smaller index).
3. Each other run is paired with the leader question by question
   (:func:`receval.results.pairing.align`); the ``m`` differences ``run - leader`` are
   resampled together (:func:`receval.bootstrap.bootstrap_means`, the same question
   draws for all). A run is *out* when its interval lies entirely below ``-margin``,
   with the family-wise level held at ``1 - level`` by Holm's step-down correction
   (:func:`receval.holm.holm`): the one-sided bootstrap p-value
   ``2 * #{resampled diff >= -margin} / B`` is exactly "the percentile interval at
   level ``1 - a`` excludes ``-margin``" for ``p <= a``, so each shown corrected interval
   is a percentile interval at the level Holm tested it at.
4. The *contenders* (the leader and every run not out) are ranked by cost
   (``--prefer``: median latency ``p50_ms``, ``chunks`` indexed, or ``money`` per 1,000
   questions), then fewer stages, then the smaller index; the first is chosen.

Nothing here retrieves: everything is read from the stored runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from receval import tables
from receval.bootstrap import Interval, bootstrap_means, confidence_intervals
from receval.errors import RecevalError, RunError
from receval.holm import holm
from receval.results import selection
from receval.results.labels import run_labels
from receval.results.pairing import BootSettings, align, grouped_intervals, rows_key
from receval.results.stored import Run
from receval.store import LATENCY

PREFERENCES = ("p50_ms", "chunks", "money")
#: Per-question cost columns (US dollars): ``cost_usd`` for the whole search, or one
#: ``cost_usd.<stage>`` per stage that calls a paid API (summed).
COST_COLUMN = "cost_usd"
CORRECTION = "Holm (1979) step-down over {m} comparisons with the leader"


@dataclass
class Candidate:
    """One run as the selection sees it."""

    index: int
    label: str
    run_dir: str
    mean: Interval  # on the selection split
    diff: Interval | None  # run - leader, Holm-corrected interval; None for the leader
    level: float | None  # confidence level of ``diff`` after the correction
    contender: bool
    cost: float | None
    stages: int
    costs: dict[str, float | None] = field(default_factory=dict)  # every preference


@dataclass
class Selection(tables.Rendered):
    metric: str
    split: str | None
    prefer: str  # asked for
    cost_by: str  # used (money falls back to p50_ms when no cost is recorded)
    margin: float
    boot: BootSettings
    candidates: list[Candidate]
    leader: int
    chosen: int
    why: str
    notes: list[str] = field(default_factory=list)
    held_out: dict | None = None  # --report-on: the chosen config on the held-out split

    # ------------------------------------------------------------ rendering

    def header_lines(self) -> list[str]:
        label = selection.measure_label(self.metric)
        m = len(self.candidates) - 1
        where = f"split {self.split}" if self.split else "all questions"
        lines = [
            f"select on {where}: {label}, {len(self.candidates)} runs; leader #{self.leader} "
            f"(best mean); margin {self.margin:g}",
            f"mean: {self.boot.describe()}",
            f"diff = run - leader, paired by question; interval corrected by "
            f"{CORRECTION.format(m=m)} (family-wise {self.boot.level:.0%}; percentile "
            "bootstrap, same question draws for every run)",
            f"in: the corrected interval reaches -margin ({-self.margin:g}); out: it lies "
            "entirely below" if self.margin else
            "in: the corrected interval reaches 0; out: it lies entirely below 0 (worse beyond chance)",
            *self.notes,
            f"chosen: #{self.chosen} {self.candidates[self.chosen].label} -- {self.why}",
        ]
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

    def tables(self) -> list[tables.Table]:
        cost_title = {"p50_ms": "p50 ms", "chunks": "chunks", "money": "$ / 1k q"}[self.cost_by]
        rows, flagged = [], set()
        for c in self.candidates:
            if c.diff is None:
                diff, ci, level = "leader", "", ""
            else:
                diff = tables.fmt_signed(c.diff.mean)
                ci = tables.fmt_ci(c.diff.lo, c.diff.hi, signed=True)
                level = f"{100 * c.level:.4g}%"
            mark = "chosen" if c.index == self.chosen else ""
            rows.append([
                f"#{c.index}", c.label, tables.fmt(c.mean.mean), tables.fmt_ci(c.mean.lo, c.mean.hi),
                diff, ci, level, "in" if c.contender else "out", _fmt_cost(c.cost, self.cost_by),
                str(c.stages), mark,
            ])
            if c.index == self.chosen:
                flagged.add(len(rows) - 1)
        label = selection.measure_label(self.metric)
        return [tables.Table(
            columns=["#", "run", label, f"{self.boot.level:.0%} CI", "diff", "Holm CI", "level",
                     "", cost_title, "stages", ""],
            rows=rows,
            align=["r", "l", "r", "r", "r", "r", "r", "l", "r", "r", "l"],
            flagged=flagged,
        )]

    def to_dict(self) -> dict:
        return {
            "metric": self.metric,
            "split": self.split,
            "prefer": self.prefer,
            "cost_by": self.cost_by,
            "margin": self.margin,
            "correction": CORRECTION.format(m=len(self.candidates) - 1),
            "bootstrap": self.boot.kwargs(),
            "leader": self.leader,
            "chosen": self.chosen,
            "why": self.why,
            "notes": list(self.notes),
            "runs": [
                {
                    "index": c.index, "label": c.label, "run_dir": c.run_dir,
                    **{"mean": c.mean.mean, "ci": [c.mean.lo, c.mean.hi]},
                    "diff": None if c.diff is None else c.diff.mean,
                    "diff_ci": None if c.diff is None else [c.diff.lo, c.diff.hi],
                    "level": c.level, "contender": c.contender, "cost": c.cost,
                    "costs": c.costs, "stages": c.stages,
                }
                for c in self.candidates
            ],
            "held_out": self.held_out,
        }

    def to_csv(self) -> str:
        return tables.to_csv(
            ["index", "run", "run_dir", "mean", "ci_lo", "ci_hi", "diff", "diff_lo", "diff_hi",
             "level", "contender", self.cost_by, "stages", "chosen"],
            [[c.index, c.label, c.run_dir, c.mean.mean, c.mean.lo, c.mean.hi,
              None if c.diff is None else c.diff.mean, None if c.diff is None else c.diff.lo,
              None if c.diff is None else c.diff.hi, c.level, c.contender, c.cost, c.stages,
              c.index == self.chosen] for c in self.candidates],
        )


def _fmt_cost(cost: float | None, by: str) -> str:
    if cost is None:
        return "-"
    if by == "p50_ms":
        return tables.fmt_ms(cost)
    if by == "chunks":
        return str(int(cost))
    return f"{cost:.4f}"


# ----------------------------------------------------------------- costs


def n_stages(run: Run) -> int:
    stages = run.info.get("stages")
    if isinstance(stages, dict) and stages:
        return len(stages)
    return max(1, sum(c.startswith(LATENCY + ".") for c in run.table.column_names))


def p50_ms(run: Run) -> float | None:
    if LATENCY not in run.table.column_names:
        return None
    values = run.values(LATENCY)
    values = values[~np.isnan(values)]
    return float(np.median(values)) if values.size else None


def money(run: Run) -> float | None:
    """US dollars per 1,000 questions from the per-question cost columns; 0 for a run
    whose stages made no API call; None when a paid run recorded no cost."""
    names = [c for c in run.table.column_names if c == COST_COLUMN or c.startswith(COST_COLUMN + ".")]
    if COST_COLUMN in names:
        names = [COST_COLUMN]
    if names:
        total = sum(np.nan_to_num(run.values(c)) for c in names)
        return float(np.mean(total) * 1000)
    stages = run.info.get("stages")
    if isinstance(stages, dict) and stages and all(
        not (s or {}).get("search_api_calls") for s in stages.values()
    ):
        return 0.0
    return None


def costs_of(run: Run) -> dict[str, float | None]:
    return {"p50_ms": p50_ms(run), "chunks": run.n_chunks, "money": money(run)}


# ----------------------------------------------------------------- choosing


def _labels(runs: list[Run]) -> list[str]:
    """Each run's label, as every command names it (:mod:`receval.results.labels`)."""
    return run_labels(runs)


def _differences(runs: list[Run], leader: int, metric: str) -> tuple[np.ndarray, list[int]]:
    """``(n_questions, m)`` per-question ``run - leader`` for every other run, over the
    questions all runs score (the leader's order); and those runs' indices."""
    others = [i for i in range(len(runs)) if i != leader]
    base = runs[leader]
    scored = ~np.isnan(base.values(metric))
    columns = []
    for i in others:
        rows_a, rows_b, _, _ = align(base, runs[i])  # different question sets: an error
        b = runs[i].values(metric)[rows_b]
        scored &= ~np.isnan(b)
        columns.append(b)
    if not scored.any():
        raise RunError(f"no question is scored on {metric} by every run; nothing to compare")
    a = base.values(metric)[scored]
    return np.column_stack([col[scored] - a for col in columns]), others


def corrected(diffs: np.ndarray, margin: float, boot: BootSettings) -> list[tuple[Interval, float, bool]]:
    """Per column of ``diffs``: Holm-corrected percentile interval, its level, and
    whether the run is out (interval entirely below ``-margin``)."""
    m = diffs.shape[1]
    matrix = diffs if m > 1 else np.column_stack([diffs, diffs])  # one BLAS path for all m
    resampled = bootstrap_means(matrix, n_resamples=boot.n_resamples, seed=boot.seed)[:, :m]
    at_or_above = (resampled >= -margin).sum(axis=0)
    p_values = [min(1.0, 2.0 * c / boot.n_resamples) for c in at_or_above]
    steps = holm(p_values, 1.0 - boot.level)
    out: list[tuple[Interval, float, bool] | None] = [None] * m
    for alpha in sorted({s.alpha for s in steps}):
        intervals = confidence_intervals(
            matrix, n_resamples=boot.n_resamples, seed=boot.seed, level=1.0 - alpha, method="percentile"
        )
        for j, step in enumerate(steps):
            if step.alpha == alpha:
                lo, hi = intervals[j].lo, intervals[j].hi
                out[j] = (Interval(float(np.mean(diffs[:, j])), lo, hi), 1.0 - alpha, step.rejected)
    return out  # type: ignore[return-value]


def choose(
    runs: list[Run], metric: str, prefer: str, margin: float, boot: BootSettings,
    split: str | None = None,
) -> Selection:
    """Leader, contenders and the chosen run among ``runs`` (already filtered to the
    selection split); see the module docstring."""
    if prefer not in PREFERENCES:
        raise RecevalError(f"--prefer {prefer}: use one of {', '.join(PREFERENCES)}")
    if not margin >= 0:
        raise RecevalError(f"--margin {margin}: use a value >= 0 (0: not distinguishable from the leader)")
    labels = _labels(runs)
    items = []
    for run in runs:
        values = run.values(metric)
        rows = np.flatnonzero(~np.isnan(values))
        if rows.size == 0:
            raise RunError(f"{run.run_dir}: no question scored on {metric} in this split")
        items.append((rows_key(run, rows), values[rows]))
    means = grouped_intervals(items, boot)
    leader = max(range(len(runs)), key=lambda i: (means[i].mean, -i))
    verdicts: dict[int, tuple[Interval, float, bool]] = {}
    if len(runs) > 1:
        diffs, others = _differences(runs, leader, metric)
        verdicts = dict(zip(others, corrected(diffs, margin, boot)))
    all_costs = [costs_of(run) for run in runs]
    notes: list[str] = []
    cost_by = prefer
    if prefer == "money":
        unknown = [i for i, c in enumerate(all_costs) if c["money"] is None]
        if unknown:
            cost_by = "p50_ms"
            shown = ", ".join(f"#{i}" for i in unknown)
            notes.append(
                f"money: no cost recorded ({COST_COLUMN} columns) for {shown}, which call paid "
                "APIs; ranking by p50_ms instead"
            )
        elif not any(c["money"] for c in all_costs):
            cost_by = "p50_ms"
            notes.append("money: no cost recorded (every run is local: $0); ranking by p50_ms instead")
    candidates = []
    for i, run in enumerate(runs):
        diff, level, out = verdicts.get(i, (None, None, False))
        candidates.append(Candidate(
            index=i, label=labels[i], run_dir=str(run.run_dir), mean=means[i], diff=diff,
            level=level, contender=not out, cost=all_costs[i][cost_by], stages=n_stages(run),
            costs=all_costs[i],
        ))
    contenders = [c for c in candidates if c.contender]
    missing = [c for c in contenders if c.cost is None]
    if missing:
        raise RunError(
            f"--prefer {cost_by}: {missing[0].run_dir} has no {cost_by} recorded; choose "
            f"another of {', '.join(PREFERENCES)}"
        )
    best = min(contenders, key=lambda c: (c.cost, c.stages, c.index))
    why = _why(best, contenders, leader, cost_by) if len(runs) > 1 else "the only run"
    return Selection(
        metric=metric, split=split, prefer=prefer, cost_by=cost_by, margin=margin, boot=boot,
        candidates=candidates, leader=leader, chosen=best.index, why=why, notes=notes,
    )


def _why(best: Candidate, contenders: list[Candidate], leader: int, cost_by: str) -> str:
    n = len(contenders)
    if n == 1:
        return "the leader, and every other run is out (worse beyond chance, corrected)"
    cost = _fmt_cost(best.cost, cost_by)
    tied = [c for c in contenders if c.cost == best.cost]
    how = f"cheapest of {n} contenders by {cost_by} ({cost})"
    if len(tied) > 1:
        fewer = [c for c in tied if c.stages == best.stages]
        how += f", tied with {len(tied) - 1} on cost; " + (
            "then fewer stages" if len(fewer) < len(tied) else "then the smaller index"
        )
    if best.index == leader:
        return how + "; also the leader"
    return how + f"; not distinguishable from the leader #{leader} ({best.diff.mean:+.3f})"


def held_out(run: Run, split: str, metric: str, boot: BootSettings, selection_mean: float) -> dict:
    """The chosen run scored once on the held-out ``split`` questions (read from its
    stored rows: the run scored every question; selection never read these)."""
    (kept,) = selection.filter_questions([run], [("split", split)])
    values = kept.values(metric)
    rows = np.flatnonzero(~np.isnan(values))
    if rows.size == 0:
        raise RunError(f"--report-on {split}: {run.run_dir} scores no {split} question on {metric}")
    (interval,) = grouped_intervals([(rows_key(kept, rows), values[rows])], boot)
    return {
        "split": split, "run_dir": str(run.run_dir), "n_questions": int(rows.size),
        "mean": interval.mean, "ci": [interval.lo, interval.hi],
        "selection_mean": selection_mean, "overstated": selection_mean - interval.mean,
    }
