"""The Python face of stored runs, for test suites and notebooks: the same numbers the
commands print, as plain data, without a subprocess. Re-exported by
:mod:`receval.analysis`::

    from receval import analysis

    runs = analysis.load("runs/2026-11-29/10-00-00")             # runs, sweeps, folders of sweeps
    rows = analysis.summary(runs, ["hit@3", "rr"])               # one flat dict per run
    table = pyarrow.Table.from_pylist(rows)                      # or pandas.DataFrame(rows)
    diffs = analysis.pairs(runs, baseline="retriever=bm25")      # paired differences
    assert not analysis.floor(runs, {"hit@3": 0.70})             # [] when every run is above
    assert analysis.gate("runs/new", "runs/old", margin=0.02).passed
    shown, sure = analysis.how_sure(runs, "ap", all_pairs=True, correction="holm", ranks=True)
    assert not analysis.undecided(runs, "rr")                    # [] when the questions can decide
    over = analysis.suite_report(analysis.load("runs/suite"), "rr", baseline="retriever=bm25")  # --suite
    report = analysis.report_for("runs/sweep", baseline="retriever=bm25", chain=True)  # all receval report shows

Arguments are typed: measures by name (``"hit@3"``, ``"MRR"``), ``where`` a mapping of
column to value (``{"split": "test"}``), floors and margins as numbers. Intervals follow
the first run's saved bootstrap config. A user error (an unknown measure, a selector
matching no run, a floor that is not a number) is a ``RecevalError`` naming the
parameter, never a command-line flag.

Each function composes the same small functions the commands compose
(:mod:`.filters`, :mod:`.derived`, :mod:`.summary`, :mod:`.pairs`), so the numbers agree
with ``receval report`` exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from receval.analysis import filters
from receval.analysis.comparison import Comparison, compare
from receval.analysis.compose import compose
from receval.analysis.decidable import Undecided
from receval.analysis.decidable import undecided as notes_undecided
from receval.analysis.derived import with_derived
from receval.analysis.gate import gate
from receval.analysis.chain import chain_pairs
from receval.analysis.pairs import every_pair, paired
from receval.analysis.report import Report, ReportOptions
from receval.analysis.settings import bootstrap_settings
from receval.analysis.significance import PairTest, Sureness, correct_family, sureness
from receval.analysis.suite import Suite, suite
from receval.analysis.summary import check_floors, failures, measure_names, question_counts, summaries
from receval.results.discovery import load_runs
from receval.results.labels import naming_of
from receval.core.errors import RecevalError
from receval.results.stored import Run
from receval.stats.corrections import CORRECTIONS

__all__ = [
    "Comparison", "PairTest", "Suite", "Sureness", "Undecided", "compare", "floor", "gate", "how_sure", "load", "pairs",
    "report_for", "suite_report", "summary", "undecided",
]


def load(*paths: str | Path, qrels: str | Path | None = None) -> list[Run]:
    """Runs under run folders, sweep folders or folders of sweeps, in order; with
    ``qrels``, a path that is a file is a TREC run imported beside them
    (:func:`receval.results.load_runs`)."""
    return load_runs(list(paths), qrels=qrels)


def report_for(*paths: str | Path, **asked) -> Report | Suite:
    """Everything ``receval report PATHS`` computes, before it is rendered: the same
    :func:`receval.analysis.compose.compose` the command calls. ``asked``: the fields of
    :class:`receval.analysis.report.ReportOptions` (``baseline="retriever=bm25"``,
    ``metrics=["hit@3", "rr"]``, ``chain=True``, ``suite=True``, ...)."""
    return compose(ReportOptions(runs=paths, **asked))


def _kept(runs: Sequence[Run], where: Mapping[str, str] | None, measures: list[str]) -> list[Run]:
    """``runs`` over the questions ``where`` keeps, with the derived columns ``measures`` name."""
    if not runs:
        raise ValueError("no runs: load some with receval.analysis.load(path)")
    kept = filters.filter_questions(list(runs), filters.where_pairs(where), option="where")
    return with_derived(kept, measures, option="metrics")


def summary(
    runs: Sequence[Run], metrics: list[str] | None = None, where: Mapping[str, str] | None = None
) -> list[dict]:
    """One flat row per run: ``run_dir``, ``label``, the config values that differ
    (by short name) and every setting of its components, ``n_chunks``, ``n_questions``
    and, per measure (``metrics``, default hit@1, hit@3, recall@3, rr, ndcg@5; rr is
    always there), its mean with ``<measure>_lo`` / ``<measure>_hi`` interval bounds."""
    kept = _kept(runs, where, [*(metrics or []), "rr"])
    names, metric = measure_names(kept, metrics, "rr")
    rows = []
    for run in summaries(kept, names, metric, bootstrap_settings(kept), naming_of(kept)):
        row = {"run_dir": run.run_dir, "label": run.label, **run.to_dict()["params"]}
        row.update(n_chunks=run.n_chunks, n_questions=run.n_questions)
        for name in names:
            interval = run.metrics[name]
            row.update({name: interval.mean, f"{name}_lo": interval.lo, f"{name}_hi": interval.hi})
        rows.append(row)
    return rows


def pairs(
    runs: Sequence[Run],
    baseline: str | Path,
    metric: str = "rr",
    where: Mapping[str, str] | None = None,
    intersect: bool = False,
) -> list[dict]:
    """Every other run against ``baseline`` (a run folder, or ``key=value`` naming one of
    the runs), question by question: ``diff`` = mean(run - baseline), its paired interval
    ``ci``, ``p`` and ``verdict`` (better, worse, not shown: the one paired procedure of
    :mod:`receval.stats.paired`), questions ``fixed`` / ``broken``, how many went ``up`` /
    ``down``. Runs over different questions are paired on the shared ones only with
    ``intersect``."""
    runs = list(runs)
    index, base = filters.select_one(runs, str(baseline), option="baseline")
    if index is None:  # a run folder outside runs
        runs.insert(0, base)
        index = 0
    kept = _kept(runs, where, [metric])
    metric = filters.canonical_measure(metric, kept, option="metric")
    others = [run for i, run in enumerate(kept) if i != index]
    if not others:
        return []
    found = paired(kept[index], others, metric, bootstrap_settings(kept), intersect, option="intersect=True")
    return [pair.against_baseline() for pair in found]


def floor(runs: Sequence[Run], floors: Mapping[str, float], where: Mapping[str, str] | None = None) -> list[str]:
    """One line per run and measure whose mean is below its floor (``{"hit@3": 0.70}``:
    means between 0 and 1); an empty list when every run clears every floor."""
    kept = _kept(runs, where, list(floors))
    checked = check_floors(floors, kept, option="floors")
    names = list(checked) or ["rr"]
    return failures(summaries(kept, names, names[0], bootstrap_settings(kept), naming_of(kept)), checked)


def how_sure(
    runs: Sequence[Run],
    metric: str = "rr",
    baseline: str | Path | None = None,
    chain: bool = False,
    all_pairs: bool = False,
    correction: str | None = None,
    detect: float | None = None,
    ranks: bool = False,
    calibrate: bool = False,
    where: Mapping[str, str] | None = None,
    intersect: bool = False,
) -> tuple[list[dict], Sureness]:
    """What ``report --correct/--effects/--detect/--ranks/--calibrate`` adds, as data: the
    pairs are every run against ``baseline``, each run against the one before
    (``chain``) and every run against every earlier one (``all_pairs``), corrected as one
    family (``correction``: holm, bh); returns each pair as a dict (``diff``, ``ci``, ``p``,
    ``p_adjusted``, ``verdict``, Hedges' g_z and the detectable difference) and the
    :class:`Sureness` (with ``ranks`` each run's rank interval, with ``calibrate`` the
    procedure's A/A type I rate)."""
    if correction is not None and correction not in CORRECTIONS:
        raise RecevalError(f"correction={correction!r}: use one of {', '.join(CORRECTIONS)}")
    runs = list(runs)
    index = None
    if baseline is not None:
        index, base = filters.select_one(runs, str(baseline), option="baseline")
        if index is None:
            runs.insert(0, base)
            index = 0
    kept = _kept(runs, where, [metric])
    metric = filters.canonical_measure(metric, kept, option="metric")
    boot = bootstrap_settings(kept)
    shown = []
    if index is not None:
        others = [run for i, run in enumerate(kept) if i != index]
        shown += paired(kept[index], others, metric, boot, intersect, option="intersect=True") if others else []
    if chain:
        shown += chain_pairs(kept, metric, boot, intersect)
    if all_pairs:
        shown += every_pair(kept, metric, boot, intersect)
    if (correction is not None or detect is not None) and not shown:
        raise RecevalError("no pair to test: give baseline=, chain=True or all_pairs=True")
    (shown,) = correct_family([shown], correction, boot)
    sure = sureness(kept, shown, metric, boot, bool(shown), correction, detect, ranks, calibrate, intersect)
    sizes = {(t.a, t.b): t.as_dict() for t in sure.pairs}
    return [{**pair.against_baseline(), **sizes.get((pair.a, pair.b), {})} for pair in shown], sure


def undecided(
    runs: Sequence[Run], metric: str = "rr", metrics: list[str] | None = None, where: Mapping[str, str] | None = None,
) -> list[Undecided]:
    """The notes ``report`` shows when its questions cannot decide between the runs
    (:mod:`receval.analysis.decidable`): ``metric`` when no paired difference reaches its
    minimum detectable difference, each of ``metrics`` (default the report's columns)
    when no question separates any two runs at its ceiling or floor; each with its cause,
    numbers (``.to_dict()``) and the fix suggested. An empty list: the questions decide."""
    kept = _kept(runs, where, [*(metrics or []), metric])
    names, metric = measure_names(kept, metrics, metric)
    boot = bootstrap_settings(kept)
    return notes_undecided(kept, names, metric, 1.0 - boot.level, kinds=question_counts(kept, metric)["kinds"],
                           n_resamples=boot.n_resamples, seed=boot.seed)


def suite_report(
    runs: Sequence[Run],
    metric: str = "rr",
    baseline: str | None = None,
    where: Mapping[str, str] | None = None,
) -> Suite:
    """What ``report --suite`` computes, as data (:class:`receval.analysis.suite.Suite`;
    ``.to_dict()`` is its JSON): runs grouped into collections (dataset fingerprint) and
    configurations; per collection each configuration's mean and difference against
    ``baseline`` (a ``key=value`` naming one configuration; default the first), the
    difference pooled over collections (random effects and fixed effect, tau^2, I^2),
    and mean over collections and Borda rank with two-level bootstrap intervals."""
    runs = list(runs)
    if not runs:
        raise ValueError("no runs: load some with receval.analysis.load(path)")
    kept = filters.filter_questions(runs, filters.where_pairs(where), option="where")
    return suite(kept, metric, bootstrap_settings(kept), baseline, option="baseline")
