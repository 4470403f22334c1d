"""Measures estimated from a judged sample of units, with their intervals.

Each unit a run may retrieve carries a *working value* of its relevance: what the sample
says of it, scaled so that its expectation over the sampling design is the unit's true
value (Horvitz & Thompson, "A generalization of sampling without replacement from a
finite universe", JASA 1952):

- a unit known for certain (a stored label, a stratum judged whole): its grade;
- a unit drawn with inclusion probability pi: its grade / pi;
- a unit not drawn, or outside the pool: 0 (an unpooled unit counts as not relevant, as
  in trec_eval's inferred AP);
- with a judge's grade f on every unit and a person's grade y on a drawn few
  (prediction-powered, :func:`working_ppi`): f + (y - f) / pi where drawn, else f: the
  difference estimator, whose expectation is y wherever the judge is wrong.

A working value is ``base + multiplier * delta``: ``delta`` is the drawn part, and the
replicates of :func:`receval.stats.sampling.rao_wu` multiply it to give intervals.

From the working relevance x_r at each rank r of a run (x = working grade >= 1 as a 0/1
value, likewise scaled), per question:

- R^ = sum of x over the question's units: the Horvitz-Thompson estimate of the number
  of relevant units (unbiased);
- precision@k = sum_{r<=k} x_r / k (unbiased); recall@k = sum_{r<=k} x_r / R^;
- ap@k = (1 / R^) sum_{r<=k} x_r (1 + sum_{j<r} x_j) / r: statAP (Aslam, Pavlu & Yilmaz,
  "A statistical method for system evaluation using incomplete judgments", SIGIR 2006),
  each relevant unit's precision at its rank counting itself once; the sum is unbiased
  when draws are independent (within a stratum drawn without replacement the cross
  terms are off by (n_h - 1) N_h / (n_h (N_h - 1)), negligible for n_h in the tens);
- ndcg@k = DCG^@k / IDCG^@k: DCG^@k = sum_{r<=k} g~_r / log2(r + 1) (unbiased), the ideal
  filled from the estimated number of units of each grade, highest first, a fraction of
  a unit filling that fraction of a rank (the inferred nDCG of Yilmaz, Kanoulas & Aslam,
  "A simple and efficient sampling method for estimating AP and NDCG", SIGIR 2008).

Ratios (ap, recall, ndcg) are consistent, not unbiased, and at a realistic budget their
bias outruns their sampling error: with a few drawn relevant units per question, R^
misses the undrawn relevant units most of the time and gains 1 / pi for one drawn now and
then, so 1 / R^ runs high (Jensen), and
the replicates cannot see the draws that did not happen (on Cranfield at a depth-10
pool's budget MAP runs 0.046 high against a +-0.008 interval). No design-based
estimator of a question's ratio is unbiased, so a ratio's interval brackets it:

- above, the ratio's own bound: biased high where the drawn units lie below the ranks
  the runs share (1 / R^ is convex and the ideal DCG concave in the counts: Jensen's
  argument, not a proof). It can run low when drawn units sit at the top of the runs,
  as the numerator then moves with the denominator; the pool's design judges those
  ranks for certain, and its simulations (``tests/test_estimators.py``) and Cranfield
  agree;
- below, the bound of the ratio a / d linearised about a pivot p: a (2 p - d) / p^2,
  with p a multiple s (:data:`PIVOT_SCALES`) of :func:`_pivot` (the question's known
  part plus the mean sampled part over questions, which pools every question's draws).
  Its expectation lies below the measure for any fixed p > 0:
  A / D = A (2 p - D) / p^2 + A (D - p)^2 / (p^2 D), the covariance of the numerator
  with the denominator (both grow with the drawn relevant units) lowers it further, and
  for ndcg the ideal's tangent at p lies above the concave ideal. Nearly linear in the
  working values, its replicates give its variance. A larger s lowers its expectation
  and divides the drawn units' 1 / pi by s^2; the highest of the bounds over the scales
  is taken, each at (1 - level) / (2 x the number of scales) (Bonferroni).

Each side misses at most (1 - level) / 2, so the bracket covers at the stated level; it
is wide where the denominators rest on a few drawn units (``ratio_risk``), which is what
such a sample knows. The order of the runs, read from the ratios, suffers less: their
bias is shared.

The interval of a run's mean (questions fixed: what judging the whole pool would give)
is the estimate +- z times the standard deviation of the replicate means (precision@k),
or that bracket (the ratios, from no lower than 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from receval.scoring.declared import parse_measure
from receval.stats.sampling import rao_wu

__all__ = ["ESTIMATED", "PIVOT_SCALES", "RATIOS", "DesignInterval", "Working", "design_intervals", "estimate",
           "estimate_forms", "ratio_risk", "relevant_units", "working_ppi", "working_sample"]

#: Measure families estimated from a sample (the others need every unit above a rank judged).
ESTIMATED = ("ap", "ndcg", "precision", "recall")
#: Of them, the ratios to an estimated number of relevant units (or ideal DCG).
RATIOS = ("ap", "ndcg", "recall")
#: Multiples of :func:`_pivot` the ratios are linearised about for their lower bounds: a
#: larger pivot lowers the bound's expectation and tames its variance (the drawn units'
#: 1 / pi enter divided by p^2); the best of them is taken, Bonferroni-corrected.
PIVOT_SCALES = (1.0, 2.0, 4.0, 8.0)


@dataclass(frozen=True)
class Working:
    """Working values of n units (see the module docstring). Columns of ``base`` and
    ``delta``: 0 relevance (grade >= 1), 1 gain (the grade), then one per grade 1..G
    (the unit has that grade), for the ideal DCG."""

    question: np.ndarray  # (n,) question index of each unit
    base: np.ndarray  # (n, 2 + G)
    delta: np.ndarray  # (n, 2 + G)
    stratum: np.ndarray  # (n,) stratum of a drawn unit (replicates resample within it), -1 otherwise
    fraction: np.ndarray  # (n,) the drawn unit's stratum's sampling fraction n_h / N_h
    n_questions: int

    @property
    def max_grade(self) -> int:
        return self.base.shape[1] - 2

    def values(self, multiplier: np.ndarray | None = None) -> np.ndarray:
        return self.base + self.delta if multiplier is None else self.base + self.delta * multiplier[:, None]


def _columns(grade: np.ndarray, max_grade: int) -> np.ndarray:
    grade = np.asarray(grade, dtype=np.int64)
    out = np.zeros((grade.size, 2 + max_grade))
    out[:, 0] = grade >= 1
    out[:, 1] = grade
    for g in range(1, max_grade + 1):
        out[:, 1 + g] = grade == g
    return out


def working_sample(question, grade, inclusion, stratum, n_questions: int, max_grade: int | None = None) -> Working:
    """Working values of a judged sample: ``inclusion`` 1 for a unit known for certain
    (``stratum`` -1), else its probability (grade / pi)."""
    question, grade = np.asarray(question, dtype=np.int64), np.asarray(grade, dtype=np.int64)
    inclusion, stratum = np.asarray(inclusion, dtype=np.float64), np.asarray(stratum, dtype=np.int64)
    if ((inclusion <= 0) | (inclusion > 1)).any():
        raise ValueError("inclusion probabilities are in (0, 1]")
    top = int(grade.max(initial=1)) if max_grade is None else max_grade
    values = _columns(grade, top)
    drawn = stratum >= 0
    base = np.where(drawn[:, None], 0.0, values)
    delta = np.where(drawn[:, None], values / inclusion[:, None], 0.0)
    return Working(question, base, delta, stratum, np.where(drawn, inclusion, 1.0), n_questions)


def working_ppi(question, judged, person, inclusion, stratum, n_questions: int, max_grade: int | None = None) -> Working:
    """Prediction-powered working values: the judge's grade ``judged`` on every unit, the
    person's ``person`` where drawn (``stratum`` >= 0; elsewhere ignored): f + (y - f) / pi.
    Units known for certain pass ``judged`` = ``person`` and stratum -1."""
    question = np.asarray(question, dtype=np.int64)
    judged, person = np.asarray(judged, dtype=np.int64), np.asarray(person, dtype=np.int64)
    inclusion, stratum = np.asarray(inclusion, dtype=np.float64), np.asarray(stratum, dtype=np.int64)
    top = int(max(judged.max(initial=1), person.max(initial=1))) if max_grade is None else max_grade
    f, y = _columns(judged, top), _columns(person, top)
    drawn = stratum >= 0
    delta = np.where(drawn[:, None], (y - f) / np.where(drawn, inclusion, 1.0)[:, None], 0.0)
    return Working(question, f, delta, stratum, np.where(drawn, inclusion, 1.0), n_questions)


def _gather(column: np.ndarray, ranked: np.ndarray) -> np.ndarray:
    return np.where(ranked >= 0, column[np.maximum(ranked, 0)], 0.0)


def _ideal(counts: np.ndarray, k: int) -> np.ndarray:
    """IDCG@k from (Q, G) estimated counts of grades 1..G (negatives read as 0): the
    highest grades first, a fractional count filling that fraction of a rank."""
    counts = np.maximum(counts[:, ::-1], 0.0)  # grade G first
    grades = np.arange(counts.shape[1], 0, -1, dtype=np.float64)
    upper = np.cumsum(counts, axis=1)
    lower = upper - counts
    ranks = np.arange(k, dtype=np.float64)
    share = np.clip(np.minimum(upper[:, :, None], ranks + 1) - np.maximum(lower[:, :, None], ranks), 0.0, 1.0)
    gains = (share * grades[None, :, None]).sum(axis=1)  # (Q, k)
    return gains @ (1.0 / np.log2(np.arange(2, k + 2)))


def relevant_units(working: Working, multiplier: np.ndarray | None = None) -> np.ndarray:
    """(Q,) R^: the Horvitz-Thompson estimate of each question's number of relevant units."""
    return np.bincount(working.question, weights=working.values(multiplier)[:, 0], minlength=working.n_questions)


def _pivot(working: Working, values: np.ndarray) -> np.ndarray:
    """(Q, columns) each question's known part (units known for certain, strata judged
    whole) plus the mean over questions of the sampled part: a denominator that borrows
    the sample's strength across questions instead of hanging on each one's few draws."""
    sampled = (working.stratum >= 0) & (working.fraction < 1.0)
    out = np.stack([np.bincount(working.question, weights=np.where(sampled, 0.0, values[:, c]),
                                minlength=working.n_questions) for c in range(values.shape[1])], axis=1)
    return out + values[sampled].sum(axis=0) / max(working.n_questions, 1)


def _linear(numerator: np.ndarray, denominator: np.ndarray, pivot: np.ndarray) -> np.ndarray:
    """numerator / denominator linearised about a pivot: a (2 p - d) / p^2, 0 where p is 0."""
    return np.divide(numerator * (2.0 * pivot - denominator), pivot**2, out=np.zeros(np.broadcast_shapes(
        numerator.shape, pivot.shape)), where=pivot > 0)


def estimate(working: Working, ranked: np.ndarray, measures: list[str], multiplier: np.ndarray | None = None,
             linear: float = 0.0) -> dict[str, np.ndarray]:
    """Per-question estimates (R, Q) of each of ``measures`` for runs ``ranked`` (R, Q, K):
    indices into the working units, -1 where the unit is not among them (or nothing was
    retrieved). ``multiplier``: one replicate's (n,) multipliers of the drawn part.
    ``linear`` > 0: the ratios (ap, recall, ndcg) linearised about :func:`_pivot`'s
    denominator times ``linear``, whose expectation lies below the measure (module
    docstring)."""
    return estimate_forms(working, ranked, measures, multiplier, (linear,))[linear]


def estimate_forms(working: Working, ranked: np.ndarray, measures: list[str], multiplier: np.ndarray | None,
                   forms: tuple[float, ...]) -> dict[float, dict[str, np.ndarray]]:
    """:func:`estimate` in each of ``forms`` (0: the ratios; s > 0: linearised about s
    times the pivot; precision@k alike in all), the sums they share computed once."""
    values = working.values(multiplier)
    ranked = np.asarray(ranked)
    relevant = relevant_units(working, multiplier)
    counts = np.stack([np.bincount(working.question, weights=values[:, 1 + g], minlength=working.n_questions)
                       for g in range(1, working.max_grade + 1)], axis=1)
    pivot = _pivot(working, values) if any(forms) else None
    x = _gather(values[:, 0], ranked)
    depth = x.shape[-1]
    found = np.cumsum(x, axis=-1)
    safe = np.where(relevant > 0, relevant, 1.0)[None, :]
    out: dict[float, dict[str, np.ndarray]] = {form: {} for form in forms}
    for name in measures:
        measure = parse_measure(name)
        k = min(measure.k or depth, depth)
        if measure.family == "precision":
            for form in forms:
                out[form][name] = found[..., k - 1] / measure.k if k else np.zeros(x.shape[:2])
        elif measure.family in ("recall", "ap"):
            if measure.family == "recall":
                numerator = found[..., k - 1]
            else:
                numerator = (x * (1.0 + found - x) / np.arange(1, depth + 1))[..., :k].sum(axis=-1)
            for form in forms:
                out[form][name] = _linear(numerator, relevant[None, :], form * pivot[None, :, 0]) if form else \
                    np.where(relevant > 0, numerator / safe, 0.0)
        elif measure.family == "ndcg":
            gains = _gather(values[:, 1], ranked)[..., : measure.k]
            dcg = gains @ (1.0 / np.log2(np.arange(2, gains.shape[-1] + 2)))
            for form in forms:
                if form:
                    at = form * pivot[:, 2:]
                    out[form][name] = _linear(dcg, _ideal_tangent(at, counts, measure.k)[None, :],
                                              _ideal(at, measure.k)[None, :])
                else:
                    ideal = _ideal(counts, measure.k)[None, :]
                    out[form][name] = np.divide(dcg, ideal, out=np.zeros_like(dcg), where=ideal > 0)
        else:
            raise ValueError(f"{name}: estimated measures are {', '.join(ESTIMATED)}, with their cutoffs")
    return out


def _ideal_tangent(at: np.ndarray, counts: np.ndarray, k: int, step: float = 1e-6) -> np.ndarray:
    """The ideal DCG at ``counts`` read off its tangent at ``at`` (both (Q, G)): IDCG is
    concave and piecewise linear in the counts, so the tangent lies above it."""
    base = _ideal(at, k)
    slopes = np.stack([(_ideal(at + step * np.eye(at.shape[1])[g], k) - base) / step for g in range(at.shape[1])],
                      axis=1)
    return base + (slopes * (counts - np.maximum(at, 0.0))).sum(axis=1)


@dataclass(frozen=True)
class DesignInterval:
    """A run's mean of a measure estimated from a sample, and its interval over the
    judging (questions fixed)."""

    estimate: float
    lo: float
    hi: float
    se: float


def design_intervals(working: Working, ranked: np.ndarray, measures: list[str], scored: dict[str, np.ndarray],
                     level: float = 0.95, n_resamples: int = 200, seed: int = 0) -> dict[str, list[DesignInterval]]:
    """Per measure, per run: the mean of its per-question estimates over the questions
    ``scored[measure]`` (R, Q) marks, and its interval from ``n_resamples`` Rao-Wu
    replicates of the drawn units (seeded). A ratio (:data:`RATIOS`) is bracketed: from
    the best lower bound of its linearised forms (biased low) to the upper bound of the
    ratio (biased high); the module docstring says why."""
    ratios = [name for name in measures if parse_measure(name).family in RATIOS]
    forms = (0.0, *PIVOT_SCALES) if ratios else (0.0,)
    names = {form: measures if form == 0.0 else ratios for form in forms}
    drawn = np.flatnonzero(working.stratum >= 0)
    rng = np.random.default_rng(seed)
    multipliers = rao_wu(working.stratum[drawn], working.fraction[drawn], n_resamples, rng) if drawn.size else None
    point = estimate_forms(working, ranked, measures, None, forms)
    replicates = {(form, name): np.empty((n_resamples, ranked.shape[0])) for form in forms for name in names[form]}
    for b in range(n_resamples):
        full = np.ones(working.question.size)
        if drawn.size:
            full[drawn] = multipliers[b]
        for form, found in estimate_forms(working, ranked, measures, full, forms).items():
            for name in names[form]:
                replicates[form, name][b] = _means(found[name], scored[name])
    z = float(norm.ppf(0.5 + level / 2.0))
    z_each = float(norm.ppf(1.0 - (1.0 - level) / 2.0 / len(PIVOT_SCALES)))  # Bonferroni over the pivots

    def bound(scale: float, name: str, sign: float, quantile: float) -> tuple[np.ndarray, np.ndarray]:
        draws = replicates[scale, name]
        se = draws.std(axis=0, ddof=1) if n_resamples > 1 else np.zeros(draws.shape[1])
        mean = _means(point[scale][name], scored[name])
        return mean + sign * quantile * se, se

    out = {}
    for name in measures:
        means = _means(point[0.0][name], scored[name])
        lo, se = bound(0.0, name, -1.0, z)
        hi = means + z * se
        if name in ratios:  # bracketed, no lower than the measure's least value 0
            lower = np.max([bound(scale, name, -1.0, z_each)[0] for scale in PIVOT_SCALES], axis=0)
            lo = np.clip(np.minimum(lo, lower), 0.0, None)
        out[name] = [DesignInterval(float(m), float(a), float(b), float(s)) for m, a, b, s in zip(means, lo, hi, se)]
    return out


def _means(values: np.ndarray, scored: np.ndarray) -> np.ndarray:
    total = np.where(scored, values, 0.0).sum(axis=1)
    return total / np.maximum(scored.sum(axis=1), 1)


def ratio_risk(working: Working) -> float:
    """The share of the estimated number of relevant units that rests on drawn units
    (weighted by their 1 / pi), over every question: near 0 the ratio estimates are
    nearly exact; near 1 each question's R^ hangs on a few drawn units, and ap, recall and
    ndcg run high (module docstring)."""
    sampled = (working.stratum >= 0) & (working.fraction < 1.0)
    drawn = np.clip(working.delta[sampled, 0], 0.0, None).sum()
    total = np.clip(working.base[:, 0] + working.delta[:, 0], 0.0, None).sum()
    return float(drawn / total) if total > 0 else 0.0
