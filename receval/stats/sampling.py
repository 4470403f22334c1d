"""Sampling designs for judging: which (question, unit) pairs a budget judges, each with a
known inclusion probability, and the replicate weights that put intervals on what is
estimated from them.

The pool's design (``receval pool --budget N``), in four steps:

1. Rank weights (:func:`rank_weights`): how much a unit at rank r counts in the measures
   the judging serves, each measure's weights summing to 1 over ranks: ``ap``'s prior of
   Aslam, Pavlu & Savell ("A unified model for metasearch, pooling, and system
   evaluation", CIKM 2003), w(r) = (1 + 1/r + 1/(r+1) + ... + 1/D) / (2D), the prior
   statAP samples by (Aslam, Pavlu & Yilmaz, SIGIR 2006); ``ndcg@k``'s discount
   1/log2(r + 1) for r <= k; ``precision@k``/``recall@k``: 1/k for r <= k.
2. Importance (:func:`importance`): over the R runs pooled, a pair's mean weight m (how
   much it counts, and how likely it is relevant: units the runs rank high are) times
   its standard deviation s over the runs (how far its label can move one run against
   another), u = m * max(s, m / R^2): the Horvitz-Thompson variance of the runs'
   differences, sum_i p_i s_i^2 / pi_i, is least when pi_i is proportional to
   sqrt(p_i) s_i, with p_i taken proportional to m_i^2. The floor m / R^2 is what a
   pair all runs rank alike keeps (with one run, u = m^2: statAP's prior, sharpened).
3. Inclusion probabilities (:func:`inclusion_probabilities`): pi = min(1, c u) with c
   such that they sum to the budget (pairs at the cap are judged for certain: in
   practice the top ranks).
4. Strata and draws (:func:`stratify`, :func:`draw`): pairs grouped by pi (the certain
   ones in stratum 0, the rest in quantiles of log pi, no more strata than the draws
   the budget leaves them), and a simple random sample without replacement of
   n_h = floor(sum of pi) pairs in each stratum (at least one, the remainders spread by
   largest fraction, the largest trimmed, so the total is the budget, never more);
   every pair of stratum h then has inclusion probability n_h / N_h, which the pool
   records.

The estimates built on the sample (:mod:`.estimators`) hold whatever the importance is:
it only sets their variance. Their intervals come from Rao and Wu's rescaling bootstrap
for stratified sampling without replacement (:func:`rao_wu`; Rao & Wu, "Resampling
inference with complex survey data", JASA 1988; Rao, Wu & Yue, Survey Methodology
1992): in stratum h, n_h - 1 draws with replacement among its n_h sampled pairs, and a
pair drawn r times weighs 1 - l + l r n_h / (n_h - 1), l = sqrt(1 - n_h / N_h), so a
stratum judged whole adds no variance.

Neyman allocation (:func:`neyman`, Neyman 1934): n_h proportional to N_h S_h, the
stratum's size times the spread of what is measured in it; the human sample drawn by
the judge's grade (``pool --for-humans N --stratify judge``) is allocated this way.
"""

from __future__ import annotations

import numpy as np

from receval.scoring.declared import parse_measure

__all__ = [
    "ap_prior", "draw", "importance", "inclusion_probabilities", "labels_needed", "neyman", "rank_weights", "rao_wu",
    "stratify", "MEASURE_WEIGHTS",
]

#: Families whose rank weights :func:`rank_weights` knows.
MEASURE_WEIGHTS = ("ap", "ndcg", "precision", "recall")


def ap_prior(depth: int) -> np.ndarray:
    """AP's rank prior at ranks 1..depth: w(r) = (1 + sum_{j=r}^{D} 1/j) / (2D), summing
    to 1 (Aslam, Pavlu & Savell 2003)."""
    harmonic = np.cumsum(1.0 / np.arange(depth, 0, -1))[::-1]  # sum_{j=r}^{D} 1/j at r = 1..D
    return (1.0 + harmonic) / (2.0 * depth)


def _measure_weights(name: str, depth: int) -> np.ndarray:
    measure = parse_measure(name)
    if measure.family not in MEASURE_WEIGHTS:
        raise ValueError(f"{name}: a design serves {', '.join(MEASURE_WEIGHTS)} (with their cutoffs), not {measure.family}")
    k = min(measure.k or depth, depth)
    if measure.family == "ap":
        out = np.zeros(depth)
        out[:k] = ap_prior(k)
        return out
    ranks = np.arange(1, depth + 1)
    if measure.family == "ndcg":
        out = np.where(ranks <= k, 1.0 / np.log2(ranks + 1), 0.0)
    else:  # precision@k, recall@k: each of the top k counts alike
        out = (ranks <= k).astype(np.float64)
    return out / out.sum()


def rank_weights(measures: list[str], depth: int) -> np.ndarray:
    """(depth,) the mean over ``measures`` of each one's rank weights (each sums to 1)."""
    if not measures:
        raise ValueError("name at least one measure the design serves, e.g. ap,ndcg@10")
    return np.mean([_measure_weights(name, depth) for name in measures], axis=0)


def importance(mean: np.ndarray, spread: np.ndarray, n_runs: int) -> np.ndarray:
    """u = m * max(s, m / R^2) per pair, from its mean ``mean`` and standard deviation
    ``spread`` over the ``n_runs`` runs of its rank weight (0 where a run did not
    retrieve it); see the module docstring."""
    mean, spread = np.asarray(mean, dtype=np.float64), np.asarray(spread, dtype=np.float64)
    return mean * np.maximum(spread, mean / n_runs**2)


def inclusion_probabilities(importance: np.ndarray, budget: float) -> np.ndarray:
    """pi = min(1, c u) summing to ``budget`` (every pair certain when the budget covers
    them all); a pair of importance 0 shares the smallest positive one, so none is
    left out of the design (an estimate needs pi > 0 everywhere)."""
    u = np.asarray(importance, dtype=np.float64)
    if u.size == 0 or budget >= u.size:
        return np.ones(u.size)
    positive = u[u > 0]
    u = np.where(u > 0, u, positive.min() if positive.size else 1.0)
    # water-filling: with the j largest capped at 1, c = (budget - j) / (sum of the rest);
    # the first j for which the largest uncapped stays <= 1 is the solution
    order = np.sort(u)[::-1]
    tail = np.cumsum(order[::-1])[::-1]  # sum of order[j:] for each j
    capped = np.arange(u.size)
    c = (budget - capped) / tail
    fits = (c * order <= 1.0) & (c > 0)
    return np.minimum(1.0, c[np.argmax(fits)] * u)


def stratify(pi: np.ndarray, n_strata: int = 12) -> np.ndarray:
    """Stratum of each pair: 0 for pi = 1 (judged for certain), else 1..k by quantiles of
    log pi (pairs of like probability together), k at most ``n_strata`` and at most the
    draws the sampled pairs are due (the floor of their summed pi, at least 1), so every
    stratum gets a draw within the budget and none is left with inclusion probability 0."""
    pi = np.asarray(pi, dtype=np.float64)
    out = np.zeros(pi.size, dtype=np.int64)
    sampled = pi < 1.0
    if sampled.any():
        k = max(1, min(int(n_strata), int(np.floor(pi[sampled].sum() + 1e-9))))
        logs = np.log(pi[sampled])
        edges = np.unique(np.quantile(logs, np.linspace(0, 1, k + 1))[1:-1])
        out[sampled] = 1 + np.searchsorted(edges, logs, side="right")
    return out


def _sizes(stratum: np.ndarray, pi: np.ndarray, budget: int) -> np.ndarray:
    """n_h per stratum: floor of its summed pi (stratum 0 whole), at least 1, at most N_h,
    summing to min(budget, pairs): largest remainders first, then the largest sampled
    strata trimmed (never below 1). Strata that cannot each have a draw within the budget
    are refused: :func:`stratify` makes at most as many as the budget leaves."""
    n_strata = int(stratum.max()) + 1
    size = np.bincount(stratum, minlength=n_strata)
    expected = np.bincount(stratum, weights=pi, minlength=n_strata)
    expected[0] = size[0]
    target = min(int(budget), int(size.sum()))
    floor_total = int(size[0]) + int((size[1:] > 0).sum())
    if floor_total > target:
        raise ValueError(f"{size[0]} certain pairs and {int((size[1:] > 0).sum())} sampled strata need {floor_total} "
                         f"draws, more than the budget of {target}: stratify by the design's probabilities")
    n = np.clip(np.floor(expected + 1e-9).astype(np.int64), np.minimum(size, 1), size)
    order = np.argsort(-(expected - np.floor(expected)), kind="stable")
    while n.sum() < target:
        room = [h for h in order if n[h] < size[h]]
        for h in room[: target - n.sum()]:
            n[h] += 1
    while n.sum() > target:  # the strata's floors of 1 past the budget's share: trim the largest sampled ones
        h = int(np.argmax(np.where(np.arange(n_strata) > 0, n, -1)))
        n[h] -= 1
    return n


def draw(stratum: np.ndarray, pi: np.ndarray, budget: int, rng: np.random.Generator
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stratified sample: (drawn mask, each pair's inclusion probability n_h / N_h,
    n_h per stratum)."""
    stratum = np.asarray(stratum, dtype=np.int64)
    n = _sizes(stratum, np.asarray(pi, dtype=np.float64), budget)
    size = np.bincount(stratum, minlength=n.size)
    drawn = np.zeros(stratum.size, dtype=bool)
    for h in np.flatnonzero(size):
        members = np.flatnonzero(stratum == h)
        drawn[rng.choice(members, size=int(n[h]), replace=False)] = True
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(size > 0, n / np.maximum(size, 1), 0.0)
    return drawn, rate[stratum], n


def neyman(sizes: np.ndarray, spreads: np.ndarray, total: int, floor: int = 2) -> np.ndarray:
    """Neyman's allocation of ``total`` draws over strata: each stratum ``floor`` (a stratum
    of spread 0 still gets checked; at most N_h), the rest in proportion to N_h S_h,
    strata whose share would pass N_h taking N_h and the others sharing again; the
    shares rounded by largest remainders (Hamilton's method) to sum to min(total, sum N_h)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    weight = sizes * np.asarray(spreads, dtype=np.float64)
    total = min(int(total), int(sizes.sum()))
    base = np.minimum(sizes, floor).astype(np.float64)
    if base.sum() >= total:  # fewer draws than floors: the largest strata first
        out = np.zeros(sizes.size, dtype=np.int64)
        for h in np.argsort(-sizes, kind="stable")[:total]:
            out[h] = 1
        return out
    capped = np.zeros(sizes.size, dtype=bool)
    quota = base.copy()
    for _ in range(sizes.size + 1):
        open_ = ~capped & (weight > 0) & (base < sizes)
        left = total - base[~open_ & ~capped].sum() - sizes[capped].sum() - base[open_].sum()
        quota = np.where(capped, sizes, base).astype(np.float64)
        if open_.any() and left > 0:
            quota[open_] += left * weight[open_] / weight[open_].sum()
        over = open_ & (quota > sizes)
        if not over.any():
            break
        capped |= over
    out = np.minimum(np.floor(quota + 1e-9).astype(np.int64), sizes)
    for h in np.argsort(-(quota - np.floor(quota + 1e-9)), kind="stable"):  # Hamilton: largest remainders
        if out.sum() >= total:
            break
        if out[h] < sizes[h]:
            out[h] += 1
    for h in np.argsort(-sizes, kind="stable"):  # spreads all 0: fill the largest strata
        add = min(total - out.sum(), sizes[h] - out[h])
        if add <= 0:
            continue
        out[h] += add
    return out


def rao_wu(stratum: np.ndarray, fraction: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(n_resamples, n) multipliers of the n sampled pairs' weights: Rao and Wu's rescaling
    bootstrap with n_h - 1 draws per stratum (module docstring). ``stratum`` of each
    sampled pair, ``fraction`` its stratum's n_h / N_h; a stratum of one pair, or judged
    whole, keeps multiplier 1."""
    stratum = np.asarray(stratum, dtype=np.int64)
    out = np.ones((n_resamples, stratum.size))
    for h in np.unique(stratum):
        members = np.flatnonzero(stratum == h)
        n_h = members.size
        f = float(np.asarray(fraction)[members[0]])
        if n_h < 2 or f >= 1.0:
            continue
        scale = np.sqrt(1.0 - f)
        picks = rng.integers(0, n_h, size=(n_resamples, n_h - 1))
        counts = np.zeros((n_resamples, n_h))
        np.add.at(counts, (np.repeat(np.arange(n_resamples), n_h - 1), picks.ravel()), 1.0)
        out[:, members] = 1.0 - scale + scale * counts * n_h / (n_h - 1)
    return out


def labels_needed(sizes: np.ndarray, errors: np.ndarray, checked: np.ndarray, half_width: float,
                  level: float = 0.95, floor: int = 2) -> tuple[int, int]:
    """Draws needed to estimate a proportion (a judge's error rate) over strata of sizes
    N_h to within +- ``half_width`` at ``level``, stratum h's rate p_h from ``errors``
    x_h among ``checked`` n_h pairs by Agresti and Coull's centre
    p_h = (x_h + z^2/2) / (n_h + z^2) ("Approximate is better than 'exact' for interval
    estimation of binomial proportions", The American Statistician 1998), so a grade
    never seen wrong (or never right) is not taken for certain: drawn uniformly,
    n0 = z^2 p (1 - p) / d^2 with p = sum W_h p_h; stratified with Neyman's allocation,
    n0 = z^2 (sum W_h sqrt(p_h (1 - p_h)))^2 / d^2; each with the finite-population
    correction n = n0 / (1 + n0 / N) (Cochran, "Sampling Techniques", 3rd ed. 1977,
    sections 4.4 and 5.9), rounded up; the stratified count at least ``floor`` per
    stratum (at most N_h), as :func:`neyman` allocates."""
    from scipy.stats import norm

    sizes = np.asarray(sizes, dtype=np.float64)
    total = sizes.sum()
    if total <= 0 or not half_width > 0:
        return 0, 0
    z = float(norm.ppf(0.5 + level / 2.0))
    rates = (np.asarray(errors, dtype=np.float64) + z**2 / 2) / (np.asarray(checked, dtype=np.float64) + z**2)
    weights = sizes / total
    overall = float((weights * rates).sum())
    uniform = z**2 * overall * (1 - overall) / half_width**2
    neyman_n = z**2 * float((weights * np.sqrt(rates * (1 - rates))).sum()) ** 2 / half_width**2

    def finite(n0: float) -> int:
        return int(np.ceil(n0 / (1 + n0 / total))) if n0 > 0 else 0

    return finite(uniform), max(finite(neyman_n), int(np.minimum(sizes, floor).sum()))
