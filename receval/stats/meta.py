"""Pooling one paired difference measured on several collections (meta-analysis).

Scores are not comparable across collections (an MRR of 0.4 on one is not 0.4 on
another), but a paired difference between two runs on the same collection is an
effect with a standard error; effects from several collections are pooled as in a
meta-analysis (Soboroff, "Meta-analysis for retrieval experiments involving multiple
test collections", CIKM 2018).

:func:`pool` takes per-collection effects ``y_i`` and their variances ``v_i`` (the
squared standard error of a mean paired difference: ``var(d) / n``) and returns both
models:

- fixed effect (one true difference shared by every collection): weights
  ``w_i = 1 / v_i``, estimate ``sum w y / sum w``, variance ``1 / sum w``, a normal
  interval;
- random effects (each collection has its own true difference, drawn around a mean
  with between-collection variance tau^2), tau^2 by DerSimonian & Laird's moment
  estimator (Controlled Clinical Trials 7:177-188, 1986):
  ``Q = sum w (y - mu_F)^2``, ``tau^2 = max(0, (Q - (k-1)) / (sum w - sum w^2 / sum w))``,
  weights ``1 / (v_i + tau^2)``; ``I^2 = max(0, (Q - (k-1)) / Q)`` (Higgins & Thompson,
  Stat. Med. 21:1539-1558, 2002), the share of the spread that is not sampling error.

The random-effects interval is the Hartung-Knapp-Sidik-Jonkman one (a t quantile with
k-1 degrees of freedom times a variance rescaled by the weighted spread of the effects),
with the scale floored at 1 (Röver, Knapp & Friede, BMC Med. Res. Methodol. 15:99, 2015):
with a handful of collections the DerSimonian-Laird normal interval covers far less
than its nominal level (IntHout, Ioannidis & Borm, BMC Med. Res. Methodol. 14:25, 2014);
it is kept as ``wald_lo``/``wald_hi``. Figures agree with
``statsmodels.stats.meta_analysis.combine_effects(method_re="dl")`` (tests/test_meta.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Pooled:
    """A difference pooled over ``k`` collections: random effects (``estimate``,
    ``lo``..``hi``; ``wald_lo``..``wald_hi`` the DerSimonian-Laird normal interval) and
    fixed effect (``fixed``, ``fixed_lo``..``fixed_hi``), with the heterogeneity
    (``tau2``, ``i2`` in [0, 1], Cochran's ``q``) and the level of the intervals."""

    k: int
    estimate: float
    se: float
    lo: float
    hi: float
    wald_lo: float
    wald_hi: float
    fixed: float
    fixed_se: float
    fixed_lo: float
    fixed_hi: float
    tau2: float
    i2: float
    q: float
    level: float
    hk_se: float = 0.0  # the random-effects interval's standard error: se * sqrt(max(1, Hartung-Knapp scale))

    def to_dict(self) -> dict:
        return asdict(self)


def pool(effects, variances, level: float = 0.95) -> Pooled:
    """Fixed-effect and DerSimonian-Laird random-effects pooling of ``effects`` (one per
    collection) with their sampling ``variances``; intervals at ``level``."""
    y = np.asarray(effects, dtype=np.float64)
    v = np.asarray(variances, dtype=np.float64)
    if y.ndim != 1 or y.shape != v.shape or y.size == 0:
        raise ValueError(f"effects and variances must be 1-D of one length >= 1, got {y.shape} and {v.shape}")
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(v))):
        raise ValueError("effects and variances must be finite")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    k = int(y.size)
    # a variance of 0 (identical runs) would be an infinite weight; 1e-12 (a standard
    # error of 1e-6) keeps the arithmetic finite
    v = np.maximum(v, 1e-12)
    z = float(stats.norm.isf((1 - level) / 2))

    w = 1.0 / v
    fixed = float(np.sum(w * y) / np.sum(w))
    fixed_se = float(np.sqrt(1.0 / np.sum(w)))
    q = float(np.sum(w * (y - fixed) ** 2))
    df = k - 1
    if k == 1:
        return Pooled(1, fixed, fixed_se, fixed - z * fixed_se, fixed + z * fixed_se, fixed - z * fixed_se,
                      fixed + z * fixed_se, fixed, fixed_se, fixed - z * fixed_se, fixed + z * fixed_se,
                      0.0, 0.0, 0.0, level, fixed_se)
    c = float(np.sum(w) - np.sum(w**2) / np.sum(w))
    tau2 = max(0.0, (q - df) / c) if c > 0 else 0.0
    i2 = max(0.0, (q - df) / q) if q > 0 else 0.0

    w_re = 1.0 / (v + tau2)
    estimate = float(np.sum(w_re * y) / np.sum(w_re))
    se = float(np.sqrt(1.0 / np.sum(w_re)))
    scale = float(np.sum(w_re * (y - estimate) ** 2) / df)  # Hartung-Knapp's weighted spread
    t = float(stats.t.isf((1 - level) / 2, df))
    half = t * se * np.sqrt(max(1.0, scale))
    return Pooled(
        k=k, estimate=estimate, se=se, lo=estimate - half, hi=estimate + half,
        wald_lo=estimate - z * se, wald_hi=estimate + z * se,
        fixed=fixed, fixed_se=fixed_se, fixed_lo=fixed - z * fixed_se, fixed_hi=fixed + z * fixed_se,
        tau2=float(tau2), i2=float(i2), q=q, level=level, hk_se=float(se * np.sqrt(max(1.0, scale))),
    )


def _crit(p: Pooled, level: float) -> float:
    tail = (1 - level) / 2
    return float(stats.norm.isf(tail) if p.k == 1 else stats.t.isf(tail, p.k - 1))


def interval_at(p: Pooled, level: float) -> tuple[float, float]:
    """The random-effects interval of ``p`` at another ``level`` (as :func:`pool` makes it)."""
    half = _crit(p, level) * p.hk_se
    return p.estimate - half, p.estimate + half


def p_values(p: Pooled) -> tuple[float, float]:
    """Two-sided p-values of "no difference" for the random-effects pool (the t with
    k-1 degrees of freedom and the standard error its interval uses, so p <= 1 - level
    exactly when that interval excludes 0) and for the fixed-effect pool (normal)."""
    def tail(statistic: float, k: int) -> float:
        return float(stats.norm.sf(statistic) if k == 1 else stats.t.sf(statistic, k - 1))

    random = 0.0 if p.hk_se <= 0 else min(1.0, 2 * tail(abs(p.estimate) / p.hk_se, p.k))
    fixed = 0.0 if p.fixed_se <= 0 else min(1.0, 2 * float(stats.norm.sf(abs(p.fixed) / p.fixed_se)))
    return random, fixed


def not_worse_p(p: Pooled, margin: float) -> float:
    """The p-value for "the pooled difference is at most ``-margin``" on the convention
    of :mod:`receval.stats.noninferiority`: twice the one-sided tail, so ``p <= a``
    exactly when the two-sided interval at ``1 - a`` (:func:`interval_at`) has its lower
    end above ``-margin``."""
    if p.hk_se <= 0:
        return 0.0 if p.estimate > -margin else 1.0
    statistic = (p.estimate + margin) / p.hk_se
    tail = stats.norm.sf(statistic) if p.k == 1 else stats.t.sf(statistic, p.k - 1)
    return float(min(1.0, 2 * tail))


def mean_difference(diffs) -> tuple[float, float]:
    """A collection's effect and its sampling variance from per-question paired
    differences: the mean and ``var(d, ddof=1) / n`` (the squared standard error)."""
    d = np.asarray(diffs, dtype=np.float64)
    if d.ndim != 1 or d.size < 2:
        raise ValueError(f"a collection's effect needs >= 2 paired questions, got {d.size}")
    return float(d.mean()), float(d.var(ddof=1) / d.size)
