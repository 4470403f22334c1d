"""How sure the report is: a p-value, its correction, Hedges' g_z and the detectable
difference for every pair the report shows; each run's rank with a bootstrap interval;
the tests' A/A type I rates. All from one score matrix (the questions every shown run
scores, in the first run's order), with the report's own bootstrap settings (resamples,
seed, level: alpha is ``1 - level``). The formulas are :mod:`receval.stats`'."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from receval.analysis.pairs import Pair, align
from receval.core.settings import BootstrapConfig
from receval.core.errors import RunError
from receval.core.vocabulary import lower_is_better
from receval.results.stored import Run
from receval.stats.bootstrap import bootstrap_means
from receval.stats.calibration import TypeOneRate, type_one_rates
from receval.stats.detectable import POWER, questions_for
from receval.stats.pairwise import PairStats, all_pairs, pairwise
from receval.stats.ranks import RankInterval, rank_intervals

#: Null pairs the A/A calibration builds in all (spread over the pairs shown).
N_NULL = 1000


@dataclass(frozen=True)
class PairTest:
    """One shown pair's statistics (``stats``: B - A, B the run, A the baseline or the
    run before) and, with ``--detect``, the questions needed to detect that difference."""

    a: str  # run dir of A
    b: str  # run dir of B
    stats: PairStats
    detect: float | None = None
    questions_needed: int | None = None

    def as_dict(self) -> dict:
        out = self.stats.as_dict()
        if self.detect is not None:
            out["mde"] = {**out["mde"], "detect": self.detect, "questions_needed": self.questions_needed}
        return out

    def significant(self, alpha: float) -> bool:
        """Rejected at ``alpha`` after the correction (before it, when none was asked)."""
        p = self.stats.p_adjusted if self.stats.p_adjusted is not None else self.stats.test.p
        return p <= alpha * (1.0 + 1e-9)


@dataclass(frozen=True)
class Sureness:
    """Everything ``report --test/--ranks/--calibrate`` adds, over ``n_questions``."""

    n_questions: int
    alpha: float
    power: float
    test: str | None = None
    correction: str | None = None
    pairs: tuple[PairTest, ...] = ()
    ranks: tuple[RankInterval, ...] | None = None
    calibration: tuple[TypeOneRate, ...] | None = None

    def for_pair(self, pair: Pair) -> PairTest | None:
        return next((t for t in self.pairs if (t.a, t.b) == (pair.a, pair.b)), None)

    def detectable_range(self) -> tuple[float, float] | None:
        """The smallest and largest detectable difference over the pairs shown."""
        values = [t.stats.detectable.difference for t in self.pairs]
        return (min(values), max(values)) if values else None

    def to_dict(self) -> dict:
        out: dict = {"n_questions": self.n_questions, "alpha": self.alpha, "power": self.power,
                     "test": self.test, "correction": self.correction}
        if self.calibration is not None:
            out["calibration"] = [
                {"test": r.test, "rate": r.rate, "rejections": r.rejections, "n_null": r.n_null,
                 "alpha": r.alpha, "ci": [r.lo, r.hi]}
                for r in self.calibration
            ]
        return out


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
        raise RunError(f"fewer than 2 questions are scored by every run on {metric}; nothing to test")
    return scores[scored]


def sureness(
    runs: list[Run],
    shown: list[Pair],
    metric: str,
    boot: BootstrapConfig,
    test: str | None = None,
    correction: str | None = None,
    detect: float | None = None,
    ranks: bool = False,
    calibrate: bool = False,
    intersect: bool = False,
) -> Sureness:
    """Tests (``test``: randomization, t or bootstrap) of every pair in ``shown``,
    corrected together (``correction``: holm, bh or maxt), each pair's effect and
    detectable difference; ``ranks``: each run's rank interval; ``calibrate``: each
    test's type I rate on null pairs (the shown pairs' differences with random signs
    per question; every pair of runs when none is shown)."""
    scores = score_matrix(runs, metric, intersect)
    alpha = 1.0 - boot.level
    index = {str(run.run_dir): i for i, run in enumerate(runs)}

    def resample_means(values: np.ndarray) -> np.ndarray:
        return bootstrap_means(values, n_resamples=boot.n_resamples, seed=boot.seed)

    unique: list[Pair] = []
    for pair in shown:
        if (pair.a, pair.b) not in {(p.a, p.b) for p in unique}:
            unique.append(pair)
    for pair in unique:
        if pair.n_questions != scores.shape[0]:
            raise RunError(
                f"{pair.b} against {pair.a}: {pair.n_questions} questions scored by both, but "
                f"{scores.shape[0]} by every run; tests and corrections need one question set "
                f"(report those runs on their own, or --where to the shared questions)"
            )
    indices = [(index[p.b], index[p.a]) for p in unique]
    tested: tuple[PairTest, ...] = ()
    if indices and test is not None:
        stats = pairwise(
            scores, indices, test, correction, boot.n_resamples, boot.seed, boot.level,
            alpha, POWER, resample_means,
        )
        tested = tuple(
            PairTest(
                p.a, p.b, s, detect,
                questions_for(detect, scores[:, a] - scores[:, b], alpha, POWER) if detect is not None else None,
            )
            for p, s, (a, b) in zip(unique, stats, indices)
        )
    rank_list = None
    if ranks:
        rank_list = tuple(rank_intervals(
            scores.mean(axis=0), resample_means(scores), boot.level, higher_is_better=not lower_is_better(metric),
        ))
    rates = None
    if calibrate:
        pairs = indices or all_pairs(len(runs))
        if not pairs:
            raise RunError("--calibrate needs two runs: its null pairs come from their differences")
        diffs = np.column_stack([scores[:, a] - scores[:, b] for a, b in pairs])
        n_null = max(1, -(-N_NULL // len(pairs)))
        rates = tuple(type_one_rates(
            diffs, alpha, n_null, boot.n_resamples, boot.seed, resample_means=resample_means,
        ))
    return Sureness(scores.shape[0], alpha, POWER, test if tested else None, correction if tested else None,
                    tested, rank_list, rates)
