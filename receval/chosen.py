"""What ``python -m receval.select`` writes for its choice: ``best.yaml`` and the plot.

``best.yaml`` is the chosen run's complete saved config as a primary Hydra config: a
defaults list naming receval's schema (so a misspelt key is still an error) and a
``hydra.run.dir``. The config is the one ``reproduce`` would re-run
(:func:`receval.results.configs.runnable_config`): read as data, every interpolation
replaced by the value the run saved or refused, and a config that sends requests or
names code refused unless ``select`` is given ``--allow-remote`` / ``--allow-code``
(which then names every host and variable it will send). So the file holds no
interpolation of the run's (its own ``hydra.run.dir`` names the time and process), and
re-running it sends nothing the user did not allow. Run it with::

    python -m receval -cp "$(pwd)" -cn best            # best.yaml in the current folder

``-cp`` must be absolute and name the folder holding the file; ``-cn`` is the file
name without ``.yaml``. On the same data it reproduces the chosen run's results
exactly (every column but the timings); any override still works
(``... hydra.run.dir=runs/best``). A relative ``dataset.path`` is read from the
current directory, as the original run read it.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import yaml

from receval.errors import RecevalError
from receval.results.configs import runnable_config
from receval.results.selection import measure_label
from receval.results.stored import Run
from receval.store import atomic_write

RUN_DIR = "runs/best/${now:%Y-%m-%d}/${now:%H-%M-%S-%f}-${receval_pid:}"


def best_config(run: Run, *, allow_remote: bool = False, allow_code: bool = False) -> dict:
    """The chosen run's config as ``best.yaml`` holds it: :func:`runnable_config` (the
    trust check ``reproduce`` makes), without a ``defaults`` list of its own."""
    data = runnable_config(run.run_dir, allow_remote=allow_remote, allow_code=allow_code)
    data.pop("defaults", None)
    return data


def best_yaml(run: Run, out: Path, why: str, config: dict) -> str:
    """The text of ``best.yaml`` for ``run`` and its :func:`best_config` (see the module docstring)."""
    name = out.stem
    header = [
        f"# Chosen by receval.select: {run.run_dir}",
        f"# {why}",
        "# Re-run it (same results on the same data, timings aside):",
        f'#   python -m receval -cp "$(pwd)" -cn {name}     # from the folder holding {out.name}',
        "",
    ]
    body = {
        "defaults": ["receval_schema", "_self_"],
        **config,
        "hydra": {"job": {"chdir": False}, "run": {"dir": RUN_DIR}},
    }
    stream = io.StringIO()
    yaml.safe_dump(body, stream, sort_keys=False, default_flow_style=None, allow_unicode=True)
    return "\n".join(header) + stream.getvalue()


def check_out(out: str | Path) -> Path:
    """``--out`` must be a ``.yaml`` file: Hydra finds it by ``-cn NAME`` as NAME.yaml."""
    out = Path(out)
    if out.suffix != ".yaml":
        raise RecevalError(f"--out {out}: name a .yaml file, e.g. best.yaml (Hydra reads -cn best as best.yaml)")
    return out


def write_best(run: Run, out: str | Path, why: str, config: dict) -> Path:
    out = check_out(out)
    text = best_yaml(run, out, why, config)
    atomic_write(out, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return out


# ----------------------------------------------------------------- plot


def pareto_front(costs: list[float], means: list[float]) -> list[int]:
    """Indices not dominated (another run at most as costly and at least as good, better
    in one), ordered by cost."""
    c, m = np.asarray(costs, dtype=float), np.asarray(means, dtype=float)
    no_worse = (c[None, :] <= c[:, None]) & (m[None, :] >= m[:, None])
    better = (c[None, :] < c[:, None]) | (m[None, :] > m[:, None])
    front = np.flatnonzero(~(no_worse & better).any(axis=1)).tolist()
    return sorted(front, key=lambda i: (costs[i], -means[i]))


def plot(selection, path: str | Path) -> None:
    """Quality against cost: every run with its interval, the Pareto front, the choice."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise RecevalError(
            "--plot needs matplotlib: install receval[plot] (pip install 'receval[plot]')"
        ) from None
    shown = [c for c in selection.candidates if c.cost is not None]
    costs = [float(c.cost) for c in shown]
    means = np.array([c.mean.mean for c in shown])
    lo = np.array([c.mean.lo for c in shown])
    hi = np.array([c.mean.hi for c in shown])
    figure = Figure(figsize=(6.0, 4.0), layout="constrained")
    axes = figure.add_subplot()
    for flag, style in ((True, dict(fmt="o", color="C0", label="contender")),
                        (False, dict(fmt="o", color="C7", mfc="white", label="out"))):
        keep = np.array([c.contender == flag for c in shown])
        if keep.any():
            axes.errorbar(np.array(costs)[keep], means[keep],
                          yerr=[(means - lo)[keep], (hi - means)[keep]], capsize=3, **style)
    front = pareto_front(costs, list(means))
    axes.step([costs[i] for i in front], [means[i] for i in front], where="post", color="C1",
              label="Pareto front")
    for c, x, y in zip(shown, costs, means):
        axes.annotate(f"#{c.index}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
        if c.index == selection.chosen:
            axes.plot([x], [y], marker="*", markersize=16, color="C3", linestyle="none", label="chosen")
    cost_label = {"p50_ms": "median latency (ms)", "chunks": "chunks indexed",
                  "money": "US$ per 1,000 questions"}[selection.cost_by]
    axes.set_xlabel(cost_label)
    split = selection.split or "all questions"
    axes.set_ylabel(f"{measure_label(selection.metric)} on {split} ({selection.boot.level:.0%} CI)")
    if selection.cost_by == "chunks" and max(costs) > 10 * max(min(costs), 1):
        axes.set_xscale("log")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    path = Path(path)
    fmt = path.suffix.lstrip(".").lower() or "png"
    atomic_write(path, lambda tmp: figure.savefig(tmp, format=fmt, dpi=150))
