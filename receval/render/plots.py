"""``report --plot FILE.png|.svg``: draw what the report asked for (needs matplotlib).

- ``--baseline``/``--chain``: a forest plot of the paired differences, zero line drawn.
- ``--by COLUMN``: grouped bars (one group per value, one bar per run) with intervals.
- otherwise the table's ``--metric`` with intervals, one panel per swept axis: that
  parameter's values on x (numbers ascending, anything else in the runs' order: the
  sweep's or the experiment's, :func:`axis_values`), one line per combination of the
  other swept values (chunk size on x, a line per retriever). Labels are run labels.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from receval.core.errors import RecevalError
from receval.core.formatting import shown
from receval.scoring.declared import measure_label
from receval.core.io import atomic_write


def _figure(width: float, height: float):
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise RecevalError(
            "--plot needs matplotlib: install receval[plot] (pip install 'receval[plot]')"
        ) from None
    return Figure(figsize=(width, height), layout="constrained")


def _save(figure, path: Path) -> None:
    fmt = path.suffix.lstrip(".").lower()
    if fmt not in ("png", "svg", "pdf"):
        raise RecevalError(f"--plot {path}: name a .png or .svg file")
    atomic_write(path, lambda tmp: figure.savefig(tmp, format=fmt, dpi=150))


def _errors(cells) -> tuple[np.ndarray, np.ndarray]:
    means = np.array([c.mean for c in cells])
    return means, np.array([means - [c.lo for c in cells], [c.hi for c in cells] - means])


def forest(report, figure) -> None:
    """Each run's paired difference against the baseline with its interval."""
    labels = {run.run_dir: run.label for run in report.runs}
    pairs = report.pairs
    axes = figure.add_subplot()
    means, err = _errors([p.diff for p in pairs])
    y = np.arange(len(pairs))[::-1]
    axes.errorbar(means, y, xerr=err, fmt="o", capsize=4)
    axes.axvline(0, color="grey", linewidth=1)
    axes.set_yticks(y, [labels[p.b] for p in pairs])
    base = report.runs[report.baseline].label if report.baseline is not None else "previous"
    axes.set_xlabel(f"{measure_label(report.metric)} difference vs {base} ({report.boot.level:.0%} CI)")
    axes.grid(axis="x", alpha=0.3)


def grouped_bars(report, figure) -> None:
    """``--by``: one group per value, one bar per run, intervals as error bars."""
    by = report.by
    axes = figure.add_subplot()
    n = len(report.runs)
    width = 0.8 / n
    x = np.arange(len(by.values))
    for r, (run, cells) in enumerate(zip(report.runs, by.cells)):
        present = [j for j, c in enumerate(cells) if c is not None]
        means, err = _errors([cells[j] for j in present])
        axes.bar(x[present] + (r - (n - 1) / 2) * width, means, width, yerr=err, capsize=3, label=run.label)
    axes.set_xticks(x, [f"{v} (n={c})" for v, c in zip(by.values, by.counts)])
    axes.set_ylabel(f"{measure_label(by.metric)} ({report.boot.level:.0%} CI)")
    axes.set_xlabel(by.column)
    axes.legend(fontsize="small")
    axes.grid(axis="y", alpha=0.3)


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def axis_values(runs, param: str) -> list:
    """An axis's values in the order they are drawn: ascending when every one is a number
    (a chunk size), else in the order the runs come (the sweep's, the experiment's
    stages): never alphabetical."""
    values: list = []
    for run in runs:
        value = _value(run, param)
        if value not in values:
            values.append(value)
    return sorted(values) if all(_is_number(v) for v in values) else values


NOT_SET = "-"  # a parameter a run does not have (bm25's k1 on a tfidf run)


def _value(run, param: str):
    return run.params[param] if param in run.params else NOT_SET


def axes_of(report) -> list[str]:
    """The swept parameters: those with two or more set values. A parameter set for
    some runs only (bm25's k1 beside tfidf) follows another one and gets no panel, nor
    does one an earlier axis decides (a stage's retriever, given the stage's name)."""
    swept = [
        p for p in report.params
        if len({repr(run.params[p]) for run in report.runs if run.params.get(p) is not None}) > 1
    ]
    axes: list[str] = []
    for p in swept:
        if not any(_decides(report.runs, a, p) for a in axes):
            axes.append(p)
    return axes or report.params


def _decides(runs, axis: str, param: str) -> bool:
    """Every run's ``param`` follows from its ``axis`` value."""
    seen: dict[str, str] = {}
    for run in runs:
        key, value = repr(_value(run, axis)), repr(_value(run, param))
        if seen.setdefault(key, value) != value:
            return False
    return True


def panels(report, figure) -> None:
    """The metric per run: a panel per swept parameter (its values on x, one line per
    combination of the others); a single panel of run labels when nothing differs."""
    metric, level = report.metric, report.boot.level
    ylabel = f"{measure_label(metric)} ({level:.0%} CI)"
    if not report.params:
        axes = figure.add_subplot()
        means, err = _errors([run.metrics[metric] for run in report.runs])
        x = np.arange(len(report.runs))
        axes.errorbar(x, means, yerr=err, fmt="o", capsize=4)
        axes.set_xticks(x, [run.label for run in report.runs], rotation=30, ha="right")
        axes.set_ylabel(ylabel)
        axes.grid(axis="y", alpha=0.3)
        return
    swept = axes_of(report)
    grid = figure.subplots(1, len(swept), sharey=True, squeeze=False)[0]
    for axes, param in zip(grid, swept):
        others = [p for p in swept if p != param]
        xs = axis_values(report.runs, param)
        lines: dict[tuple, list] = {}
        for run in report.runs:
            lines.setdefault(tuple(_value(run, p) for p in others), []).append(run)
        shift = 0.08 * (np.arange(len(lines)) - (len(lines) - 1) / 2)
        for offset, (key, members) in zip(shift, lines.items()):
            members = sorted(members, key=lambda run: xs.index(_value(run, param)))
            x = np.array([xs.index(_value(run, param)) for run in members]) + offset
            means, err = _errors([run.metrics[metric] for run in members])
            name = " ".join(f"{p}={shown(v, 'label')}" for p, v in zip(others, key)) or metric
            axes.errorbar(x, means, yerr=err, fmt="o-", capsize=3, label=name)
        axes.set_xticks(range(len(xs)), [shown(v, "label") for v in xs])
        axes.set_xlabel(param)
        axes.grid(axis="y", alpha=0.3)
        if others and len(lines) <= 12:
            axes.legend(fontsize="x-small")
    grid[0].set_ylabel(ylabel)


def plot_report(report, path: str | Path) -> None:
    """Write the plot the report's options call for to ``path`` (.png or .svg)."""
    path = Path(path)
    n = len(report.runs)
    if report.pairs:
        figure = _figure(6.5, 1.2 + 0.35 * len(report.pairs))
        forest(report, figure)
    elif report.by is not None:
        figure = _figure(max(5.0, 1.0 + 0.3 * n * len(report.by.values)), 4.0)
        grouped_bars(report, figure)
    else:
        figure = _figure(max(4.5, 3.8 * max(len(axes_of(report)), 1)), 3.6)
        panels(report, figure)
    _save(figure, path)
