"""The Python face of stored runs, for test suites and notebooks: the same numbers
``python -m receval.report`` prints, as plain data, without a subprocess.

::

    from receval import results

    runs = results.load("runs/2026-11-29/10-00-00")          # runs, sweeps, folders of sweeps
    rows = results.summary(runs, ["hit@3", "rr"])            # one flat dict per run
    table = pyarrow.Table.from_pylist(rows)                  # or pandas.DataFrame(rows)
    diffs = results.pairs(runs, baseline="retriever=bm25")   # paired differences
    assert not results.floor(runs, {"hit@3": 0.70})          # [] when every run is above

Every function takes runs from :func:`load` and optional ``where`` filters
(``{"split": "test"}``); intervals follow the first run's saved bootstrap config.
A user error (an unknown measure, a selector matching no run) is a ``RecevalError``.
"""

from __future__ import annotations

from pathlib import Path

from receval.results.discovery import load_runs
from receval.results.stored import Run
from receval.results.report import Report, build_report


def load(*paths: str | Path, qrels: str | Path | None = None) -> list[Run]:
    """Runs under run folders, sweep folders or folders of sweeps, in order; with
    ``qrels``, a path that is a file is a TREC run imported beside them."""
    return load_runs(list(paths), qrels=qrels)


def _report(runs: list[Run], where: dict[str, str] | None, **options) -> Report:
    if not runs:
        raise ValueError("no runs: load some with receval.results.load(path)")
    return build_report(list(runs), where=[(str(k), str(v)) for k, v in (where or {}).items()], **options)


def summary(
    runs: list[Run], metrics: list[str] | None = None, where: dict[str, str] | None = None
) -> list[dict]:
    """One flat row per run: ``run_dir``, ``label``, the config values that differ
    (by short name), ``n_chunks``, ``n_questions`` and, per measure, its mean with
    ``<measure>_lo`` / ``<measure>_hi`` interval bounds."""
    report = _report(runs, where, metrics=metrics)
    rows = []
    for run in report.runs:
        row = {"run_dir": run.run_dir, "label": run.label, **run.to_dict()["params"]}
        row.update(n_chunks=run.n_chunks, n_questions=run.n_questions)
        for name in report.metrics:
            interval = run.metrics[name]
            row.update({name: interval.mean, f"{name}_lo": interval.lo, f"{name}_hi": interval.hi})
        rows.append(row)
    return rows


def pairs(
    runs: list[Run],
    baseline: str,
    metric: str = "rr",
    where: dict[str, str] | None = None,
    intersect: bool = False,
) -> list[dict]:
    """Every other run against ``baseline`` (a run folder or ``key=value`` naming one
    run), question by question: ``diff`` = mean(run - baseline), its paired interval
    ``ci``, questions ``fixed`` / ``broken``, how many went ``up`` / ``down``."""
    report = _report(runs, where, baseline=baseline, metric=metric, intersect=intersect)
    return [report.pair_dict(pair) for pair in report.pairs]


def floor(runs: list[Run], floors: dict[str, float], where: dict[str, str] | None = None) -> list[str]:
    """One line per run and measure whose mean is below its floor (``--fail-under``);
    an empty list when every run clears every floor."""
    return _report(runs, where, floors={k: str(v) for k, v in floors.items()}).failures()
