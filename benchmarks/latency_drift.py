"""How much a run's median latency moves between identical runs of one sweep: the drift
that the questions of one run share (the machine's state while it ran), which resampling
its questions cannot see, measured here so the latency rule can allow for it.

One sweep, as a user runs it (``receval ... -m``, one process, jobs in turn), repeats
bm25 and tfidf ``--rounds`` times, interleaved (bm25, tfidf, bm25, ...), on the built-in
library or a BEIR collection (``--dataset-path``). Figures:

- ``drift_sd``: the pooled standard deviation of the log of a run's median latency
  between runs of one config (the drift the rule allows for, :data:`receval.stats.cheaper.DRIFT_SD`);
- ``spread``: the largest max/min - 1 of one config's medians;
- ``aa_faster_before`` / ``aa_faster``: of every pair of runs of one config (no true
  difference), the share the clock step calls faster one way or the other, without the
  drift allowance (the rule before) and with it (the rule now), stages not consulted.

    python benchmarks/latency_drift.py                       # 6 rounds on the library
    python benchmarks/latency_drift.py --dataset-path ../shared/datasets/scifact
    python benchmarks/latency_drift.py --small               # 2 rounds: the code path

Figures go to ``benchmarks/figures.json`` (``_figures.py``).
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
import tempfile
from pathlib import Path

import _figures
import numpy as np

from receval.core.settings import BootstrapConfig
from receval.results import load_runs
from receval.stats.cheaper import CostOrder, cost_order, pooled_drift

CONFIGS = ("bm25", "tfidf")


def sweep(folder: Path, rounds: int, dataset_path: str | None) -> list:
    """The interleaved sweep run as ``receval ... -m``; its runs, in job order."""
    retrievers = ",".join(CONFIGS * rounds)
    dataset = ["dataset=beir", f"dataset.path={Path(dataset_path).resolve()}"] if dataset_path else []
    command = [sys.executable, "-m", "receval", f"retriever={retrievers}", *dataset,
               f"hydra.sweep.dir={folder / 's'}", f"cache_dir={folder / 'cache'}", "-m"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, cwd=folder)
    return load_runs([folder / "s"])


def faster_share(order: CostOrder, pairs: list[tuple[int, int]]) -> float:
    """The share of ``pairs`` (runs of one config) the clock step calls faster either way."""
    return float(np.mean([order.cheaper(i, j) or order.cheaper(j, i) for i, j in pairs]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6, help="runs of each config, interleaved")
    parser.add_argument("--dataset-path", help="a BEIR collection instead of the built-in library")
    args = _figures.parse(parser, small={"rounds": 2}, keys=("rounds", "dataset_path"))
    with tempfile.TemporaryDirectory() as tmp:
        runs = sweep(Path(tmp), args.rounds, args.dataset_path)
        latencies = [run.values("latency_ms")[~np.isnan(run.values("rr"))] for run in runs]
    medians = [float(np.median(values)) for values in latencies]
    config = [CONFIGS[k % len(CONFIGS)] for k in range(len(runs))]
    groups = {c: [medians[k] for k in range(len(runs)) if config[k] == c] for c in CONFIGS}
    drift = pooled_drift(list(groups.values()))
    spread = max(max(m) / min(m) - 1 for m in groups.values())
    pairs = [(i, j) for i, j in itertools.combinations(range(len(runs)), 2) if config[i] == config[j]]
    boot = BootstrapConfig()
    before = cost_order(medians, "p50_ms", boot, latencies, drift=0.0)
    now = cost_order(medians, "p50_ms", boot, latencies)
    print(f"{len(runs)} runs ({args.rounds} rounds of {', '.join(CONFIGS)}), "
          f"{'library' if not args.dataset_path else args.dataset_path}")
    for c in CONFIGS:
        print(f"  {c:6} medians (ms): {' '.join(f'{m:.3f}' for m in groups[c])}")
    figures = {"drift_sd": drift, "spread": spread, "aa_pairs": len(pairs),
               "aa_faster_before": faster_share(before, pairs), "aa_faster": faster_share(now, pairs),
               "drift_allowed": now.drift}
    print(f"drift sd (log median, pooled) {drift:.3f}; largest spread {spread:.0%}; the rule allows sd "
          f"{now.drift:.3f}")
    print(f"identical-config pairs called faster by the clock: {figures['aa_faster_before']:.0%} before, "
          f"{figures['aa_faster']:.0%} now (of {len(pairs)})")
    _figures.record(args, figures)


if __name__ == "__main__":
    main()
