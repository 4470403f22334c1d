"""One set of configurations over several collections: the suite report as data.

Stored runs are grouped into collections by their dataset fingerprint (the hash of the
files they read, so two folders holding the same files are one collection and one folder
edited between runs is two) and into configurations by their saved config without its
``dataset`` node and the keys that do not change results
(:func:`receval.results.identity.result_config`). Every configuration must have one run
on every collection: the comparison is paired by collection, and by question within each.

Per collection: each configuration's mean with its bootstrap interval over questions, and
each configuration's paired difference against the baseline with its interval, p-value and
verdict from the one paired procedure (:mod:`receval.stats.paired`), and its standard error
``sd(d) / sqrt(n)``, which the pooling (:func:`receval.stats.meta.pool`) weighs. The pooled
difference's verdict reads its random-effects interval, whose p-value comes from the same t
(:func:`receval.stats.meta.p_values`).
Over collections: the pooled difference (random effects and fixed effect, tau^2, I^2), and
each configuration's mean over collections and Borda count with two-level bootstrap
intervals and rank intervals (:func:`receval.stats.suite.suite_standing`).

Questions are those every run of the collection scored (a question with a null measure,
an unanswerable one, is left out of all runs of its collection alike).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import PurePath

import numpy as np

from receval.analysis import filters
from receval.analysis.derived import with_derived
from receval.analysis.pairs import align
from receval.core.settings import BootstrapConfig
from receval.core.errors import RecevalError
from receval.results.configs import flatten
from receval.results.identity import result_config
from receval.core.formatting import shown
from receval.results.labels import naming_of
from receval.results.stored import Run
from receval.stats.bootstrap import Interval, confidence_intervals
from receval.scoring.declared import lower_is_better
from receval.stats.meta import Pooled, mean_difference, p_values, pool
from receval.stats.paired import PairedTest, paired_tests
from receval.stats.verdict import direction
from receval.stats.ranks import RankInterval
from receval.stats.suite import SuiteStanding, suite_standing


@dataclass(frozen=True)
class Difference:
    """A configuration minus the baseline on one collection: the paired procedure's test
    (mean, interval, p-value), its verdict, and the standard error the pooling weighs."""

    test: PairedTest
    se: float
    verdict: str

    @property
    def mean(self) -> float:
        return self.test.mean

    @property
    def lo(self) -> float:
        return self.test.lo

    @property
    def hi(self) -> float:
        return self.test.hi

    @property
    def n(self) -> int:
        return self.test.n

    def to_dict(self) -> dict:
        return {"diff": self.mean, "se": self.se, "ci": [self.lo, self.hi], "p": self.test.p,
                "verdict": self.verdict, "n_questions": self.n}


@dataclass(frozen=True)
class Collection:
    """One collection: its name, fingerprint, questions, each configuration's run folder,
    mean (bootstrap interval) and difference against the baseline (None for the baseline)."""

    name: str
    fingerprint: str
    n_questions: int
    run_dirs: list[str]
    means: list[Interval]
    diffs: list[Difference | None]

    def to_dict(self, labels: list[str]) -> dict:
        return {
            "name": self.name,
            "dataset_fingerprint": self.fingerprint,
            "n_questions": self.n_questions,
            "runs": [
                {"label": label, "run_dir": run_dir, **mean.as_dict(),
                 **({"vs_baseline": diff.to_dict()} if diff is not None else {})}
                for label, run_dir, mean, diff in zip(labels, self.run_dirs, self.means, self.diffs)
            ],
        }


@dataclass
class Suite:
    """The suite report: configurations (``labels``), the ``baseline`` index, the
    collections, per configuration its pooled difference against the baseline (None for
    the baseline itself) and its standing over collections."""

    metric: str
    labels: list[str]
    baseline: int
    baseline_given: bool
    collections: list[Collection]
    pooled: list[Pooled | None]
    standing: SuiteStanding
    boot: BootstrapConfig
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        def rank(r: RankInterval) -> dict:
            return {"rank": r.rank, "ci": [r.lo, r.hi]}

        s = self.standing
        return {
            "metric": self.metric,
            "baseline": self.labels[self.baseline],
            "bootstrap": self.boot.kwargs(),
            "collections": [c.to_dict(self.labels) for c in self.collections],
            "configurations": [
                {
                    "label": label,
                    "mean_over_collections": s.mean[i].as_dict(),
                    "mean_rank": rank(s.mean_rank[i]),
                    "borda": s.borda[i].as_dict(),
                    "borda_rank": rank(s.borda_rank[i]),
                    **({"pooled_vs_baseline": pooled_dict(self.pooled[i], self.metric)}
                       if self.pooled[i] is not None else {}),
                }
                for i, label in enumerate(self.labels)
            ],
            "notes": list(self.notes),
        }


def pooled_verdict(pooled: Pooled, metric: str) -> str:
    """The pooled difference's verdict: its random-effects interval read as every interval is."""
    return str(direction(pooled.lo, pooled.hi, not lower_is_better(metric)))


def pooled_dict(pooled: Pooled, metric: str) -> dict:
    random, fixed = p_values(pooled)
    return {**pooled.to_dict(), "p": random, "p_fixed": fixed, "verdict": pooled_verdict(pooled, metric)}


def fingerprint_of(run: Run) -> str | None:
    value = (run.metadata or {}).get("dataset_fingerprint") or (run.info or {}).get("dataset_fingerprint")
    return str(value) if value else None


def collection_name(run: Run) -> str:
    """What a collection is called: its ``dataset.id`` (ir_datasets), else the last part
    of ``dataset.path``, else the dataset's ``name`` (``library``)."""
    node = (run.config or {}).get("dataset") or {}
    if node.get("id"):
        return shown(node["id"], "label")
    if node.get("path"):  # saved as given: ${oc.env:RECEVAL_SHARED,../shared}/datasets/scifact
        return PurePath(str(node["path"]).rstrip("/")).name or shown(node["path"], "label")
    return str(node.get("name") or "?")


def configuration_key(run: Run) -> str:
    """What a run computes, its dataset aside: the identity config without ``dataset``."""
    config = {k: v for k, v in result_config(run.config or {}).items() if k != "dataset"}
    return json.dumps(config, sort_keys=True, default=str)


def group(runs: list[Run]) -> tuple[list[str], list[str], list[list[Run]]]:
    """(collection fingerprints, configuration keys, runs[collection][configuration]),
    both in order of first appearance; an incomplete grid is one error naming the gaps."""
    prints: list[str] = []
    keys: list[str] = []
    cells: dict[tuple[int, int], Run] = {}
    for run in runs:
        found = fingerprint_of(run)
        if found is None:
            raise RecevalError(f"--suite: {run.run_dir} has no dataset fingerprint (an imported run?); give receval runs")
        if not run.config:
            raise RecevalError(f"--suite: {run.run_dir} has no saved config; its configuration cannot be matched")
        key = configuration_key(run)
        c = prints.index(found) if found in prints else len(prints)
        j = keys.index(key) if key in keys else len(keys)
        prints += [found] if c == len(prints) else []
        keys += [key] if j == len(keys) else []
        if (c, j) in cells:
            raise RecevalError(
                f"--suite: {cells[c, j].run_dir} and {run.run_dir} are the same configuration on the same "
                "collection; give one of them (or narrow with --runs KEY=VALUE)"
            )
        cells[c, j] = run
    missing = [(c, j) for c in range(len(prints)) for j in range(len(keys)) if (c, j) not in cells]
    if missing:
        example = {j: next(r for (cc, jj), r in cells.items() if jj == j) for j in range(len(keys))}
        holder = {c: next(r for (cc, jj), r in cells.items() if cc == c) for c in range(len(prints))}
        gaps = "; ".join(
            f"{collection_name(holder[c])} has no run like {example[j].run_dir}" for c, j in missing[:5]
        )
        flats = [flatten(json.loads(key)) for key in keys]
        differ = sorted(k for k in set().union(*flats) if len({repr(f.get(k)) for f in flats}) > 1)
        raise RecevalError(
            f"--suite: every configuration needs one run on every collection; {gaps}"
            + (f" (and {len(missing) - 5} more)" if len(missing) > 5 else "")
            + f"; the configurations differ in {', '.join(differ[:6])}"
            + "; run the missing jobs or leave those runs out (a collection's own settings, such as "
            "chunking.max_words=null for one, make it another configuration)"
        )
    return prints, keys, [[cells[c, j] for j in range(len(keys))] for c in range(len(prints))]


def _matrix(runs: list[Run], metric: str) -> np.ndarray:
    """(questions every run scored, runs) of ``metric``, in the first run's order."""
    columns = []
    for run in runs:
        rows_a, rows_b, _, _ = align(runs[0], run, intersect=False, option=None)
        column = np.full(len(runs[0].ids), np.nan)
        column[rows_a] = run.values(metric)[rows_b]
        columns.append(column)
    mat = np.column_stack(columns)
    return mat[np.all(np.isfinite(mat), axis=1)]


def _names(runs: list[Run], prints: list[str]) -> list[str]:
    names = [collection_name(run) for run in runs]
    return [f"{n} ({p[:8]})" if names.count(n) > 1 else n for n, p in zip(names, prints)]


def _differences(collections: list[Collection], mats: list[np.ndarray], j: int, base: int, boot: BootstrapConfig,
                 notes: list[str], label: str, higher_is_better: bool) -> None:
    """Configuration ``j`` minus the baseline on each collection, set in ``collections``.

    A collection where the two runs score every question alike has a sample variance of
    0, which would give it all the pooled weight; its per-question variance is floored
    at the smallest positive one among the collections (said in ``notes``)."""
    d = [mat[:, j] - mat[:, base] for mat in mats]
    per_question = [mean_difference(x)[1] * x.size for x in d]
    positive = [v for v in per_question if v > 0]
    for c, (x, v) in enumerate(zip(d, per_question)):
        if v == 0 and positive:
            v = min(positive)
            notes.append(f"{collections[c].name}: {label} and the baseline score every question alike; "
                         f"its per-question variance is floored at the smallest other collection's ({v:.3g})")
        se = float(np.sqrt(v / x.size))
        (test,) = paired_tests(x, boot.level, boot.n_resamples, boot.seed)
        old = collections[c]
        diffs = list(old.diffs)
        diffs[j] = Difference(test, se, str(direction(higher_is_better=higher_is_better, **test.ends)))
        collections[c] = replace(old, diffs=diffs)


def suite(runs: list[Run], metric: str, boot: BootstrapConfig, baseline: str | int | None = None,
          option: str = "baseline") -> Suite:
    """The suite report of ``runs`` on ``metric`` (see the module docstring);
    ``baseline``: a ``key=value`` selector naming one configuration, or its index in
    order of first appearance (default the first)."""
    if not runs:
        raise RecevalError("--suite: no runs")
    runs = with_derived(runs, [metric], option="--metric")
    metric = filters.canonical_measure(metric, runs, option="--metric")
    prints, keys, grid = group(runs)
    if len(prints) < 2:
        raise RecevalError(
            f"--suite: these runs are all on one collection ({collection_name(runs[0])}); a suite needs runs "
            "on two or more (receval +suite=local ... -m)"
        )
    base = 0
    if isinstance(baseline, int):
        base = baseline
    elif baseline is not None:
        chosen = {keys.index(configuration_key(runs[i])) for i in filters.select(runs, baseline)}
        if len(chosen) != 1:
            what = "matches no configuration" if not chosen else f"matches {len(chosen)} configurations"
            raise RecevalError(f"{option} {baseline}: {what}; name one configuration (e.g. retriever=bm25)")
        base = chosen.pop()
    labels = naming_of(grid[0]).labels
    names = _names([row[0] for row in grid], prints)
    collections, mats, notes = [], [], []
    for c, row in enumerate(grid):
        mat = _matrix(row, metric)
        if mat.shape[0] < 2:
            raise RecevalError(f"--suite: {names[c]}: fewer than 2 questions scored by every run on {metric}")
        left_out = len(row[0].ids) - mat.shape[0]
        if left_out:
            notes.append(f"{names[c]}: {left_out} question{'s' * (left_out != 1)} with no {metric} (unanswerable) left out")
        mats.append(mat)
        collections.append(Collection(
            name=names[c], fingerprint=prints[c], n_questions=int(mat.shape[0]),
            run_dirs=[str(run.run_dir) for run in row],
            means=confidence_intervals(mat, **boot.kwargs()), diffs=[None] * len(keys),
        ))
    for j in range(len(keys)):
        if j != base:
            _differences(collections, mats, j, base, boot, notes, labels[j], not lower_is_better(metric))
    pooled = [
        None if j == base else pool([c.diffs[j].mean for c in collections], [c.diffs[j].se ** 2 for c in collections], boot.level)
        for j in range(len(keys))
    ]
    standing = suite_standing(mats, boot.n_resamples, boot.level, boot.seed)
    return Suite(metric, labels, base, baseline is not None, collections, pooled, standing, boot, notes)
