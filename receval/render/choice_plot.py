"""``select --plot FILE``: quality against cost, each run with its interval, the Pareto
front and the choice (needs matplotlib).

Points are numbered (``#3``) and the numbers placed so that no two overlap: runs drawn
at one spot (same cost, same mean) share one label (``#1 #2 #3``), and each label
takes the first of a ring of positions around its point, nearest first, that overlaps
no label placed before it, no point and stays inside the axes. A key under the plot
names each number's run.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from receval.core.errors import RecevalError
from receval.scoring.declared import measure_label
from receval.core.io import atomic_write

FORMATS = ("png", "svg", "pdf")
#: Points closer than this (display pixels at the figure's dpi) share one label.
SAME_SPOT = 4.0
#: Label offsets tried, in points: 8 directions at growing distance.
_RING = [(r * dx, r * dy) for r in (5, 12, 20, 30, 42)
         for dx, dy in ((1, 1), (1, -1), (-1, 1), (-1, -1), (1, 0), (0, 1), (-1, 0), (0, -1))]


def check_path(path: str | Path) -> Path:
    path = Path(path)
    if path.suffix.lstrip(".").lower() not in FORMATS:
        raise RecevalError(f"--plot {path}: name a .png, .svg or .pdf file")
    return path


def pareto_front(costs: list[float], means: list[float]) -> list[int]:
    """Indices not dominated (another run at most as costly and at least as good, better
    in one), ordered by cost."""
    c, m = np.asarray(costs, dtype=float), np.asarray(means, dtype=float)
    no_worse = (c[None, :] <= c[:, None]) & (m[None, :] >= m[:, None])
    better = (c[None, :] < c[:, None]) | (m[None, :] > m[:, None])
    front = np.flatnonzero(~(no_worse & better).any(axis=1)).tolist()
    return sorted(front, key=lambda i: (costs[i], -means[i]))


def spots(points: np.ndarray) -> list[list[int]]:
    """Groups of indices whose display ``points`` lie within :data:`SAME_SPOT` of the
    group's first point, in order of first appearance."""
    groups: list[list[int]] = []
    for i, p in enumerate(points):
        for group in groups:
            if np.hypot(*(points[group[0]] - p)) <= SAME_SPOT:
                group.append(i)
                break
        else:
            groups.append([i])
    return groups


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def place_labels(axes, renderer, xs, ys, texts: list[str]) -> list:
    """One annotation per point, none overlapping another or any point (see the module
    docstring); returns the annotations."""
    from matplotlib.transforms import Bbox

    points = axes.transData.transform(np.column_stack([xs, ys]))
    scale = axes.figure.dpi / 72.0
    dots = [Bbox.from_bounds(x - 3 * scale, y - 3 * scale, 6 * scale, 6 * scale) for x, y in points]
    frame = axes.get_window_extent(renderer)
    placed, annotations = [], []
    for text, (x, y) in zip(texts, zip(xs, ys)):
        best = None
        for dx, dy in _RING:
            note = axes.annotate(
                text, (x, y), textcoords="offset points", xytext=(dx, dy), fontsize=8,
                ha="left" if dx > 0 else "right" if dx < 0 else "center",
                va="bottom" if dy > 0 else "top" if dy < 0 else "center",
            )
            box = note.get_window_extent(renderer).padded(2 * scale)  # a little air around each
            clashes = sum(_overlap(box, other) for other in placed + dots)
            outside = not (frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1)
            score = (clashes, outside)
            if best is None or score < best[0]:
                if best is not None:
                    best[1].remove()
                best = (score, note, box)
            else:
                note.remove()
            if score == (0, False):
                break
        annotations.append(best[1])
        placed.append(best[2])
    return annotations


def plot(selection, path: str | Path) -> list:
    """Draw the selection to ``path``; returns the point labels (for checking placement)."""
    path = check_path(path)
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D
    except ImportError:
        raise RecevalError(
            "--plot needs matplotlib: install receval[plot] (pip install 'receval[plot]')"
        ) from None
    shown = [c for c in selection.candidates if c.cost is not None]
    if not shown:
        raise RecevalError(f"--plot: no run has a {selection.cost_by} to plot against")
    costs = np.array([float(c.cost) for c in shown])
    means = np.array([c.mean.mean for c in shown])
    lo = np.array([c.mean.lo for c in shown])
    hi = np.array([c.mean.hi for c in shown])
    figure = Figure(figsize=(6.4, 4.4 + 0.17 * len(shown)), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for flag, style in ((True, dict(fmt="o", color="C0", label="contender")),
                        (False, dict(fmt="o", color="C7", mfc="white", label="not a contender"))):
        keep = np.array([c.contender == flag for c in shown])
        if keep.any():
            axes.errorbar(costs[keep], means[keep], yerr=[(means - lo)[keep], (hi - means)[keep]],
                          capsize=3, **style)
    front = pareto_front(list(costs), list(means))
    axes.step(costs[front], means[front], where="post", color="C1", label="Pareto front")
    chosen = [k for k, c in enumerate(shown) if c.index == selection.chosen]
    axes.plot(costs[chosen], means[chosen], marker="*", markersize=16, color="C3",
              linestyle="none", label="chosen")
    cost_label = {"p50_ms": "median latency (ms)", "chunks": "chunks indexed",
                  "money": "US$ per 1,000 questions"}[selection.cost_by]
    axes.set_xlabel(cost_label)
    split = selection.split or "all questions"
    axes.set_ylabel(f"{measure_label(selection.metric)} on {split} ({selection.boot.level:.0%} CI)")
    if selection.cost_by in ("chunks", "p50_ms") and costs.min() > 0 and costs.max() > 10 * costs.min():
        axes.set_xscale("log")
    axes.margins(x=0.15, y=0.1)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, loc="best")
    blank = Line2D([], [], linestyle="none")
    figure.legend([blank] * len(shown), [f"#{c.index}  {c.label}" for c in shown],
                  loc="outside lower center", fontsize=8, handlelength=0, handletextpad=0,
                  ncols=1 if len(shown) <= 6 else 2, frameon=False)
    figure.canvas.draw()  # final layout before measuring label boxes; then frozen
    figure.set_layout_engine("none")
    renderer = figure.canvas.get_renderer()
    points = axes.transData.transform(np.column_stack([costs, means]))
    groups = spots(points)
    labels = place_labels(
        axes, renderer, [costs[g[0]] for g in groups], [means[g[0]] for g in groups],
        [" ".join(f"#{shown[k].index}" for k in g) for g in groups],
    )
    fmt = path.suffix.lstrip(".").lower()
    atomic_write(path, lambda tmp: figure.savefig(tmp, format=fmt, dpi=150))
    return labels
