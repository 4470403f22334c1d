"""How sure the report is, beyond each pair's verdict: the pairs shown as one corrected
family (:func:`correct_family`), every pair's effect size and detectable difference,
each run's rank with a bootstrap interval, and the paired procedure's A/A type I rate.
The p-values and intervals themselves are each pair's (:mod:`receval.analysis.pairs`,
the one procedure of :mod:`receval.stats.paired`); alpha is ``1 - level``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from receval.analysis.pairs import Pair, align, corrected
from receval.core.errors import RunError
from receval.core.settings import BootstrapConfig
from receval.scoring.declared import lower_is_better
from receval.results.stored import Run
from receval.stats.pairing import resampled_means
from receval.stats.calibration import TypeOneRate, type_one_rate
from receval.stats.detectable import POWER, questions_for
from receval.stats.pairwise import PairSize, all_pairs, pair_size
from receval.stats.ranks import RankInterval, rank_intervals

#: Null pairs the A/A calibration builds in all (spread over the pairs shown).
N_NULL = 1000


@dataclass(frozen=True)
class PairTest:
    """One shown pair's size (``size``: of B - A, B the run, A the baseline or the run
    before) and, with ``--detect``, the questions needed to detect that difference."""

    a: str  # run dir of A
    b: str  # run dir of B
    size: PairSize
    detect: float | None = None
    questions_needed: int | None = None

    def as_dict(self) -> dict:
        out = self.size.as_dict()
        if self.detect is not None:
            out["mde"] = {**out["mde"], "detect": self.detect, "questions_needed": self.questions_needed}
        return out


@dataclass(frozen=True)
class Sureness:
    """Everything ``report --effects/--detect/--ranks/--calibrate`` adds."""

    n_questions: int
    alpha: float
    power: float
    correction: str | None = None
    pairs: tuple[PairTest, ...] = ()
    ranks: tuple[RankInterval, ...] | None = None
    calibration: tuple[TypeOneRate, ...] | None = None

    def for_pair(self, pair: Pair) -> PairTest | None:
        return next((t for t in self.pairs if (t.a, t.b) == (pair.a, pair.b)), None)

    def detectable_range(self) -> tuple[float, float] | None:
        """The smallest and largest detectable difference over the pairs shown."""
        values = [t.size.detectable.difference for t in self.pairs]
        return (min(values), max(values)) if values else None

    def to_dict(self) -> dict:
        out: dict = {"n_questions": self.n_questions, "alpha": self.alpha, "power": self.power,
                     "correction": self.correction}
        if self.calibration is not None:
            out["calibration"] = [
                {"test": r.test, "rate": r.rate, "rejections": r.rejections, "n_null": r.n_null,
                 "alpha": r.alpha, "ci": [r.lo, r.hi]}
                for r in self.calibration
            ]
        return out


def correct_family(families: list[list[Pair]], method: str | None, boot: BootstrapConfig) -> list[list[Pair]]:
    """The pairs of ``families`` (baseline pairs, chain steps, all pairs) corrected as one
    family by ``method`` (:func:`receval.analysis.pairs.corrected`), each distinct
    comparison counted once; in the same lists, in the same order."""
    if method is None:
        return families
    unique: dict[tuple[str, str], Pair] = {}
    for pair in (p for family in families for p in family):
        unique.setdefault((pair.a, pair.b), pair)
    done = dict(zip(unique, corrected(list(unique.values()), method, boot)))
    return [[done[(p.a, p.b)] for p in family] for family in families]


def score_matrix(runs: list[Run], metric: str, intersect: bool = False, option: str = "--intersect") -> np.ndarray:
    """``(questions, runs)``: ``metric`` per question for the questions every run scores
    (paired by id, the first run's order)."""
    base = runs[0]
    aligned = [align(base, run, intersect, option)[:2] for run in runs]
    rows = np.arange(len(base.ids))
    for rows_a, _ in aligned:
        rows = rows[np.isin(rows, rows_a)]
    columns = []
    for run, (rows_a, rows_b) in zip(runs, aligned):
        lookup = np.full(len(base.ids), -1, dtype=np.int64)
        lookup[rows_a] = rows_b
        columns.append(run.values(metric)[lookup[rows]])
    scores = np.column_stack(columns)
    scored = ~np.isnan(scores).any(axis=1)
    if scored.sum() < 2:
        raise RunError(f"fewer than 2 questions are scored by every run on {metric}; nothing to rank")
    return scores[scored]


def sureness(
    runs: list[Run],
    shown: list[Pair],
    metric: str,
    boot: BootstrapConfig,
    effects: bool = False,
    correction: str | None = None,
    detect: float | None = None,
    ranks: bool = False,
    calibrate: bool = False,
    intersect: bool = False,
) -> Sureness:
    """``effects`` (or ``detect``): every pair in ``shown`` with its Hedges' g_z and
    detectable difference (``detect``: the questions it needs to detect that difference);
    ``ranks``: each run's rank interval; ``calibrate``: the paired procedure's type I rate
    on null pairs (the shown pairs' differences with random signs per question; every pair
    of runs when none is shown). ``correction`` names the family correction the shown
    pairs already carry (:func:`correct_family`)."""
    alpha = 1.0 - boot.level
    unique: list[Pair] = []
    for pair in shown:
        if (pair.a, pair.b) not in {(p.a, p.b) for p in unique}:
            unique.append(pair)
    sized: tuple[PairTest, ...] = ()
    if effects or detect is not None:
        sized = tuple(
            PairTest(p.a, p.b, pair_size(p.d, p.test.level, alpha, POWER, (p.diff.lo, p.diff.hi)), detect,
                     questions_for(detect, p.d, alpha, POWER) if detect is not None else None)
            for p in unique
        )
    n_questions = max((p.n_questions for p in unique), default=0)
    scores = None
    if ranks or (calibrate and not unique):
        scores = score_matrix(runs, metric, intersect)
        n_questions = n_questions or scores.shape[0]
    rank_list = None
    if ranks:
        resampled = resampled_means(scores, boot.n_resamples, boot.seed)  # the normal limit above LARGE questions
        rank_list = tuple(rank_intervals(scores.mean(axis=0), resampled, boot.level,
                                         higher_is_better=not lower_is_better(metric)))
    rates = None
    if calibrate:
        if len(runs) < 2:
            raise RunError("--calibrate needs two runs: its null pairs come from their differences")
        diffs = [p.d for p in unique] or [scores[:, a] - scores[:, b] for a, b in all_pairs(len(runs))]
        rates = tuple(type_one_rate(d, boot.level, max(1, -(-N_NULL // len(diffs))), boot.n_resamples, boot.seed)
                      for d in diffs)
        rates = (_pooled(rates),)
    return Sureness(n_questions, alpha, POWER, correction, sized, rank_list, rates)


def _pooled(rates: tuple[TypeOneRate, ...]) -> TypeOneRate:
    """The type I rates of several pairs' null pairs as one (summed rejections)."""
    from scipy import stats

    rejected, total = sum(r.rejections for r in rates), sum(r.n_null for r in rates)
    ci = stats.binomtest(rejected, total).proportion_ci(0.95, method="exact")
    return TypeOneRate(rates[0].test, rejected / total, rejected, total, rates[0].alpha, ci.low, ci.high)
