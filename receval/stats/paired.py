"""The one paired procedure: every "better", "worse" or "not shown" receval states.

Two runs are compared on the per-question differences ``d_i = B_i - A_i`` over the ``n``
questions both score. The procedure is the paired sign-flip randomization test, and its
interval is the set of differences that same test does not reject, so the interval and
the p-value cannot disagree: the interval excludes 0 exactly when ``p <= 1 - level``.

**The test** (Fisher, *The Design of Experiments*, 1935, sec. 21; the test IR uses by
default: Smucker, Allan & Carterette, "A comparison of statistical significance tests
for information retrieval evaluation", CIKM 2007). Under "no difference" a question's
two scores are exchangeable, so each ``d_i`` is as likely to carry either sign. For a
sign vector ``s`` the flipped statistic is ``|mean(s * d)|``; the p-value of the shift
``delta`` (the test run on ``d - delta``) counts the sign vectors whose flipped statistic
exceeds the observed ``|mean(d) - delta|``, and half of those that equal it: the mid-p
(Lancaster, "Significance tests in discrete distributions", JASA 56, 1961). Measures
such as hit@1 take few values, so many sign vectors tie with the observed one; counting
ties whole makes the test conservative there (hit@1 at 50 questions rejected 2.6% of
no-difference pairs and lost 0.06 of power against the bootstrap); the mid-p holds the
level and the power (figures below).

**The interval** (inverting the test: Hartigan, "Using subsample values as typical
values", JASA 64, 1969; Garthwaite, "Confidence intervals from randomization tests",
Biometrics 52, 1996). Writing ``P`` for the questions ``s`` keeps and ``N`` for those it
flips, ``|mean(s * (d - delta))| >= |mean(d - delta)|`` factorises as
``(mean(d[N]) - delta) * (mean(d[P]) - delta) <= 0``: a sign vector is more extreme
exactly for the shifts strictly between its two subset means and ties on them (a vector
keeping or flipping every sign ties at every shift). So ``p(delta)`` is known for every
shift at once, and the interval's ends are order statistics of those subset means: the
``K``-th smallest lower mean and the ``K``-th largest upper one, ``K`` the fewest vectors
that keep a shift. No search, no tuning. An end whose own shift the test rejects is
*open*: with hit@1 an end can sit exactly on 0, and ``(0, 0.25]`` then excludes 0 as the
p-value says.

**The null distribution**, by the number of questions:

- ``exact``: all ``2^n`` sign vectors when ``2^n`` is at most :data:`EXACT_FLIPS` or
  ``n_resamples`` (n <= 12 by default);
- ``sampled``: ``n_resamples`` random sign vectors from ``seed`` (the same vectors for every
  pair over the same questions), with the observed vector counted among them, so the
  p-value never reaches 0 (Phipson & Smyth, "Permutation p-values should never be zero",
  SAGMB 9, 2010);
- ``normal``: above :data:`LARGE` questions, the normal limit of the same statistic, whose
  randomization distribution has mean 0 and variance ``sum (d_i - delta)^2 / n^2``:
  ``p(delta) = 2 Phi(-|sum(d - delta)| / sqrt(sum (d - delta)^2))`` and, inverted in closed
  form, ``|mean(d) - delta| <= z sqrt(var(d) / (n - z^2))`` (``var`` with divisor n). Its
  cost does not grow with n times resamples.

Its level and power, measured by simulation (``benchmarks/verdict_level.py``; held by
``tests/test_paired.py``), 1,000 pairs a cell: with no true difference the 95% interval
excludes 0 in 3.3% (rr) and 0.8% (hit@1) of pairs at 10 questions and at most 5.4% at
8-50 questions, where the percentile bootstrap excluded it in 11.3% and 5.4% at 10
questions; with a true gain at 50 questions its power is within 0.04 of the bootstrap's.
``k`` changed questions give a mid-p of at least ``2^-k`` at 0, so fewer than
:func:`fewest_changed` (5 at 95%) can show no difference at all.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from receval.stats.bootstrap import Interval

#: Above this many questions the null is the normal limit (module docstring).
LARGE = 10_000
#: Sign vectors held at once (entries of the (flips, questions) block).
_MAX_CHUNK_ENTRIES = 1 << 22
#: Subset means within this share of the differences' scale count as equal: the same
#: values summed in another order must not decide a verdict.
_RELATIVE_TIE = 1e-12
_NORMAL = NormalDist()
NULLS = ("exact", "sampled", "normal")


#: Every sign vector is enumerated up to this many (or ``n_resamples``, when more).
EXACT_FLIPS = 4096


def null_kind(n: int, n_resamples: int) -> str:
    """Which null distribution ``n`` questions get (module docstring)."""
    if n > LARGE:
        return "normal"
    return "exact" if n < 63 and 2**n <= max(n_resamples, EXACT_FLIPS) else "sampled"


def fewest_changed(level: float) -> int:
    """The fewest changed questions (non-zero differences) that can show a difference at
    ``level``: ``k`` changed questions give a mid-p of at least ``2^-k`` at 0, so the
    smallest ``k`` with ``2^-k <= 1 - level`` (5 at 95%)."""
    return max(1, math.ceil(math.log2(1.0 / (1.0 - level)) - 1e-12))


@dataclass(frozen=True)
class PairedTest:
    """One paired comparison, B - A over ``n`` questions: the mean difference, its
    interval at ``level`` and the mid-p value of "no difference", from one procedure.

    An end of the interval is *open* when that value itself is rejected: with measures
    that take few values (hit@1), an end can sit exactly on 0, and ``(0.000, 0.250]``
    then reads "better", as its p-value says. ``tie``: values this close count as equal."""

    n: int
    mean: float
    lo: float
    hi: float
    p: float
    level: float
    null: str  # exact, sampled or normal
    n_flips: int | None  # sign vectors counted (None for the normal limit)
    changed: int  # questions whose two scores differ
    lo_open: bool = False
    hi_open: bool = False
    tie: float = 0.0

    @property
    def interval(self) -> Interval:
        return Interval(self.mean, self.lo, self.hi)

    @property
    def ends(self) -> dict:
        """The interval as :mod:`receval.stats.verdict`'s functions take it."""
        return {"lo": self.lo, "hi": self.hi, "lo_open": self.lo_open, "hi_open": self.hi_open, "tie": self.tie}

    def shown_open(self, bounds: tuple[float, ...] = (0.0,)) -> tuple[bool, bool]:
        """Which ends to show open: those open and on one of the verdict's ``bounds`` (0, a
        margin); elsewhere openness is below what three digits show."""
        def on(end: float) -> bool:
            return any(abs(end - b) <= self.tie for b in bounds)

        return self.lo_open and on(self.lo), self.hi_open and on(self.hi)

    @property
    def decidable(self) -> bool:
        """Whether this many changed questions could show a difference at ``level`` at all."""
        return self.changed >= fewest_changed(self.level)

    def as_dict(self) -> dict:
        return {
            "p": self.p, "level": self.level, "null": self.null, "n_flips": self.n_flips,
            "changed": self.changed, "ci": [self.lo, self.hi], "ci_open": [self.lo_open, self.hi_open],
        }


# --------------------------------------------------------------------------- sign vectors


def _flip_blocks(n: int, n_resamples: int, seed: int) -> Iterator[np.ndarray]:
    """The sign vectors of the null as ``(chunk, n)`` 0/1 float blocks (1: the question
    keeps its sign): every vector for ``exact``, ``n_resamples`` seeded ones for
    ``sampled``; the same seed gives the same vectors whatever the chunk size."""
    chunk = max(1, _MAX_CHUNK_ENTRIES // max(n, 1))
    if null_kind(n, n_resamples) == "exact":
        total = 2**n
        bits = np.arange(n, dtype=np.int64)
        for start in range(0, total, chunk):
            codes = np.arange(start, min(total, start + chunk), dtype=np.int64)
            yield ((codes[:, None] >> bits) & 1).astype(np.float64)
        return
    rng = np.random.default_rng(seed)
    for start in range(0, n_resamples, chunk):
        size = min(chunk, n_resamples - start)
        yield (rng.random((size, n)) < 0.5).astype(np.float64)


def _scale(diffs: np.ndarray) -> np.ndarray:
    return _RELATIVE_TIE * np.maximum(np.abs(diffs).max(axis=0), 1e-300)


def subset_means(diffs: np.ndarray, n_resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per sign vector and column of ``diffs`` ``(n, m)``: the lower and upper of the two
    subset means (module docstring), each ``(F, m)``; ``-inf``/``+inf`` for a vector with
    every sign equal (it counts for every shift)."""
    n, m = diffs.shape
    total = diffs.sum(axis=0)
    lowers, uppers = [], []
    with np.errstate(divide="ignore", invalid="ignore"):
        for block in _flip_blocks(n, n_resamples, seed):
            kept = block @ diffs  # (chunk, m) sums over the kept questions
            count = block.sum(axis=1)[:, None]
            mean_kept = kept / count
            mean_flipped = (total - kept) / (n - count)
            lower = np.minimum(mean_kept, mean_flipped)
            upper = np.maximum(mean_kept, mean_flipped)
            whole = (count == 0) | (count == n)
            lowers.append(np.where(whole, -np.inf, lower))
            uppers.append(np.where(whole, np.inf, upper))
    return np.concatenate(lowers), np.concatenate(uppers)


# --------------------------------------------------------------------------- the null


@dataclass(frozen=True)
class ShiftNull:
    """The test of every shift for one column: its mid-p value at any ``delta``
    (:meth:`p_at`) and its interval at any level (:meth:`interval`).

    ``lower``/``upper`` are the sorted subset means of the sign vectors that do not keep
    or flip every sign; ``whole`` counts those that do (their flipped statistic equals the
    observed one at every shift: a tie) plus, for ``sampled``, the observed vector itself.
    At ``delta`` below the mean a sign vector is more extreme when its lower mean lies
    below ``delta`` and ties when it lies on it (within ``tie``); above the mean, the
    same with the upper means."""

    mean: float
    n: int
    null: str
    lower: np.ndarray | None  # sorted lower subset means (exact, sampled)
    upper: np.ndarray | None  # sorted upper subset means
    whole: int  # sign vectors tying at every shift (all kept or all flipped; the observed one)
    flips: int  # the denominator: every sign vector counted, the observed one included
    tie: float  # subset means this close to a shift reach it
    sum_squares: float = 0.0  # normal limit: sum (d - mean)^2

    @property
    def n_flips(self) -> int | None:
        return None if self.lower is None else self.flips

    def _counts(self, delta: float) -> tuple[int, int]:
        """(sign vectors more extreme than the observed at ``delta``, those tying)."""
        if delta < self.mean:
            below = int(np.searchsorted(self.lower, delta - self.tie, side="left"))
            return below, int(np.searchsorted(self.lower, delta + self.tie, side="right")) - below
        above = self.upper.size - int(np.searchsorted(self.upper, delta + self.tie, side="right"))
        return above, self.upper.size - int(np.searchsorted(self.upper, delta - self.tie, side="left")) - above

    def p_at(self, delta: float) -> float:
        """Two-sided mid-p value of the shift ``delta`` (the test on ``d - delta``)."""
        if abs(delta - self.mean) <= self.tie:
            return 1.0
        if self.null == "normal":
            gap = self.n * abs(self.mean - delta)
            spread = math.sqrt(self.sum_squares + self.n * (self.mean - delta) ** 2)
            return min(1.0, 2.0 * _NORMAL.cdf(-gap / spread))
        more, ties = self._counts(delta)
        return min(1.0, (more + 0.5 * (ties + self.whole)) / self.flips)

    def interval(self, level: float) -> tuple[float, float]:
        """The shifts not rejected at ``1 - level``: ``[lo, hi]``, an end open when
        that value itself is rejected (:meth:`rejects`)."""
        if self.null == "normal":
            z = _NORMAL.inv_cdf(1.0 - (1.0 - level) / 2.0)
            if self.n <= z * z:
                return -math.inf, math.inf
            half = z * math.sqrt(self.sum_squares / self.n / (self.n - z * z))
            return self.mean - half, self.mean + half
        # kept when more + ties / 2 > threshold; the count just beside the k-th mean is k
        threshold = (1.0 - level) * self.flips * (1 + 1e-12) - 0.5 * self.whole
        if threshold < 0:
            return -math.inf, math.inf
        k = math.floor(threshold) + 1  # <= lower.size: every sign vector counts at the mean
        return float(self.lower[k - 1]), float(self.upper[self.upper.size - k])

    def rejects(self, delta: float, level: float) -> bool:
        """The test at ``1 - level`` rejects the shift ``delta``."""
        return self.p_at(delta) <= (1.0 - level) * (1 + 1e-12)


def shift_nulls(diffs, n_resamples: int = 2000, seed: int = 0) -> list[ShiftNull]:
    """One :class:`ShiftNull` per column of ``diffs`` (``(n,)`` or ``(n, m)``, the same
    questions in every column; they share their sign vectors)."""
    arr = _as_columns(diffs)
    n, m = arr.shape
    # each column's own np.mean, so a pair's mean equals the mean of its stored differences
    # exactly (a mean over a 2-D axis sums in another order)
    means = np.array([np.mean(np.ascontiguousarray(arr[:, j])) for j in range(m)])
    ties = _scale(arr)
    kind = null_kind(n, n_resamples)
    if kind == "normal":
        sums = ((arr - means) ** 2).sum(axis=0)
        return [ShiftNull(float(means[j]), n, kind, None, None, 0, 0, float(ties[j]), float(sums[j])) for j in range(m)]
    lower, upper = subset_means(arr, n_resamples, seed)
    whole = ~np.isfinite(lower[:, 0])  # every sign kept or every sign flipped
    lower, upper = np.sort(lower[~whole], axis=0), np.sort(upper[~whole], axis=0)
    observed = 1 if kind == "sampled" else 0  # the exact null holds it already
    extra = int(whole.sum()) + observed
    flips = lower.shape[0] + extra
    return [ShiftNull(float(means[j]), n, kind, lower[:, j].copy(), upper[:, j].copy(), extra, flips, float(ties[j]))
            for j in range(m)]


def _as_columns(diffs) -> np.ndarray:
    arr = np.asarray(diffs, dtype=np.float64)
    arr = arr[:, None] if arr.ndim == 1 else arr
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1 or not np.isfinite(arr).all():
        raise ValueError(f"differences must be finite, (n,) or (n, m) with n >= 1; got shape {arr.shape}")
    return arr


# --------------------------------------------------------------------------- the tests


def _snap(value: float, target: float, tie: float) -> float:
    """An interval end within rounding of ``target`` (0, or a margin) is ``target``:
    the same tie rule the p-value counts by, so the two never disagree."""
    return target if abs(value - target) <= tie else value


def tested_at(null: ShiftNull, level: float, changed: int, bounds: tuple[float, ...] = (0.0,)) -> PairedTest:
    """The :class:`PairedTest` of one column at ``level``: its interval (ends snapped at
    the verdict's ``bounds``: 0, and a margin when one is stated; each end open when the
    test rejects it) and its p-value at 0."""
    lo, hi = null.interval(level)
    for bound in bounds:
        lo, hi = _snap(lo, bound, null.tie), _snap(hi, bound, null.tie)
    return PairedTest(
        null.n, null.mean, lo, hi, null.p_at(0.0), level, null.null, null.n_flips, changed,
        lo_open=math.isfinite(lo) and null.rejects(lo, level), hi_open=math.isfinite(hi) and null.rejects(hi, level),
        tie=null.tie,
    )


def paired_tests(diffs, level: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> list[PairedTest]:
    """The paired procedure (module docstring) on each column of ``diffs`` ``(n, m)``:
    mean difference, interval at ``level`` and p-value, consistent by construction."""
    arr = _as_columns(diffs)
    changed = (np.abs(arr) > _scale(arr)).sum(axis=0)
    return [tested_at(null, level, int(c)) for null, c in zip(shift_nulls(arr, n_resamples, seed), changed)]


def paired_test(a, b, level: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> PairedTest:
    """:func:`paired_tests` of ``b - a`` (two 1-D arrays, the same questions in order)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"a and b must be 1-D arrays of the same length; got shapes {a.shape} and {b.shape}")
    return paired_tests(b - a, level, n_resamples, seed)[0]
