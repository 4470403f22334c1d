"""The paired verdict's level and power by simulation, against the percentile bootstrap
receval used before (the peer): how often each calls "better" or "worse".

A/A: independent pairs of runs with no true difference; each question's chance that a run
ranks a relevant section first is drawn once (its difficulty, shared by both runs), each
run's first relevant rank is then geometric with that chance, independently per run. A/B:
run B's chance raised by ``gain`` of what is left to gain. Measures: rr (depth 10) and
hit@1. A rate is the share of pairs whose 95% interval excludes 0.

    python benchmarks/verdict_level.py                 # 1,000 pairs per cell (about a minute)
    python benchmarks/verdict_level.py --pairs 200     # the size tests/test_paired.py holds to the goals
    python benchmarks/verdict_level.py --small         # 20 pairs a cell: the code path, in a second

Figures go to ``benchmarks/figures.json`` (``_figures.py``).

tests/test_paired.py imports :func:`simulated_pairs` from here and holds the figures to
their goals (A/A at most 6.5% at 8-25 questions; power at 50 within 0.05 of the peer's).
"""

from __future__ import annotations

import argparse

import numpy as np

from receval.stats.bootstrap import confidence_intervals
from receval.stats.paired import paired_tests
from receval.stats.verdict import Direction, direction

SIZES = (8, 10, 15, 20, 25, 50)
GAINS = (0.15, 0.25, 0.35)


def simulated_pairs(rng, n: int, pairs: int, gain: float = 0.0) -> dict[str, np.ndarray]:
    """Per-question differences B - A of rr (depth 10) and hit@1, each ``(n, pairs)``
    (module docstring)."""
    chance = rng.beta(1.2, 1.0, size=(n, pairs))
    rank_a = rng.geometric(chance)
    rank_b = rng.geometric(np.clip(chance + gain * (1 - chance), 0, 1))

    def rr(rank):
        return np.where(rank <= 10, 1.0 / rank, 0.0)

    return {"rr": rr(rank_b) - rr(rank_a), "hit@1": (rank_b == 1) * 1.0 - (rank_a == 1) * 1.0}


def shown_rate(d: np.ndarray, level: float = 0.95) -> float:
    """receval's procedure: the share of pairs (columns) shown better or worse."""
    return float(np.mean([direction(**t.ends) is not Direction.not_shown for t in paired_tests(d, level, 2000, 0)]))


def percentile_rate(d: np.ndarray, level: float = 0.95) -> float:
    """The peer: the paired percentile bootstrap (2,000 resamples) excluding 0."""
    return float(np.mean([i.lo > 0 or i.hi < 0 for i in confidence_intervals(d, n_resamples=2000, level=level)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000, help="pairs of runs per cell")
    parser.add_argument("--seed", type=int, default=3)
    import _figures  # here: tests/test_paired.py imports this module from elsewhere

    args = _figures.parse(parser, small={"pairs": 20}, keys=("pairs", "seed"))
    figures = {}
    print(f"A/A: share of {args.pairs} no-difference pairs shown better or worse at 95% (nominal 5%)")
    print(f"{'questions':>9}  {'rr: receval':>12}  {'bootstrap':>9}  {'hit@1: receval':>14}  {'bootstrap':>9}")
    for n in SIZES:
        sims = simulated_pairs(np.random.default_rng(args.seed + n), n, args.pairs)
        cells = [f(sims[m]) for m in ("rr", "hit@1") for f in (shown_rate, percentile_rate)]
        print(f"{n:>9}  {cells[0]:>12.1%}  {cells[1]:>9.1%}  {cells[2]:>14.1%}  {cells[3]:>9.1%}")
        figures.update({f"aa_{n}_rr": cells[0], f"aa_{n}_rr_bootstrap": cells[1],
                        f"aa_{n}_hit1": cells[2], f"aa_{n}_hit1_bootstrap": cells[3]})
    print(f"\nA/B at 50 questions: power (share of {args.pairs} pairs with a true gain shown better)")
    print(f"{'gain':>9}  {'rr: receval':>12}  {'bootstrap':>9}  {'hit@1: receval':>14}  {'bootstrap':>9}")
    for gain in GAINS:
        sims = simulated_pairs(np.random.default_rng(args.seed + 100), 50, args.pairs, gain)
        cells = [f(sims[m]) for m in ("rr", "hit@1") for f in (shown_rate, percentile_rate)]
        print(f"{gain:>9}  {cells[0]:>12.3f}  {cells[1]:>9.3f}  {cells[2]:>14.3f}  {cells[3]:>9.3f}")
        figures.update({f"power_{gain * 100:.0f}_rr": cells[0], f"power_{gain * 100:.0f}_rr_bootstrap": cells[1],
                        f"power_{gain * 100:.0f}_hit1": cells[2], f"power_{gain * 100:.0f}_hit1_bootstrap": cells[3]})
    _figures.record(args, figures)


if __name__ == "__main__":
    main()
