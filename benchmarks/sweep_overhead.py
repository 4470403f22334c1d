"""receval's 6-run sweep against trivial Hydra apps' 6-job sweeps, timed in one run.

All are whole processes (imports included); each trivial app returns at once from
every job. Two baselines:

- ``same-config``: a Hydra app composing receval's own conf/ (same groups, same
  schema) with Hydra's basic sweeper and importing numpy, scipy.sparse and
  pyarrow.parquet, so the ratio isolates receval's own per-job work (load, chunk,
  index, search, evaluate, write) and its sweeper's savings. This is the ratio the
  issues measured (1.23 quiet, 1.62 loaded; later 1.21) and bound: receval / same-config
  <= 1.15 (it was <= 1.3 before);
- ``minimal``: a Hydra app with a two-key config and no imports, for scale: the gap
  to it is the fixed cost of receval's imports and of composing a typed five-group
  config (see the README's benchmarks section).

    python benchmarks/sweep_overhead.py [--repeats 5]

``--small``: one round. Figures go to ``benchmarks/figures.json`` (``_figures.py``).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _figures

MINIMAL_APP = '''
import hydra
from hydra.core.config_store import ConfigStore

ConfigStore.instance().store(name="config", node={"retriever": "bm25", "max_words": 120})

@hydra.main(version_base="1.3", config_path=None, config_name="config")
def main(cfg):
    return None

main()
'''

SAME_CONFIG_APP = '''
import hydra
import numpy, scipy.sparse, pyarrow.parquet  # receval's imports
from receval.run.config import config_dir, register

register()

@hydra.main(version_base="1.3", config_path=config_dir(), config_name="config")
def main(cfg):
    return None

main()
'''

SWEEP = ["retriever=bm25,tfidf", "chunking.max_words=20,40,120"]


def timed(command: list[str], cwd: Path) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + sys of the child): on a loaded machine
    the CPU time is the steadier figure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, capture_output=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = _figures.parse(parser, small={"repeats": 1})
    times: dict[str, list[float]] = {"receval": [], "minimal": [], "same-config": []}
    cpu: dict[str, list[float]] = {name: [] for name in times}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "minimal.py").write_text(MINIMAL_APP)
        (tmp / "same_config.py").write_text(SAME_CONFIG_APP)
        commands = {
            "receval": [sys.executable, "-m", "receval", *SWEEP],
            "minimal": [sys.executable, "minimal.py", "retriever=bm25,tfidf", "max_words=20,40,120"],
            "same-config": [sys.executable, "same_config.py", *SWEEP, "hydra/sweeper=basic"],
        }
        for i in range(args.repeats):
            for name, command in commands.items():
                wall, used = timed([*command, f"hydra.sweep.dir={tmp}/{name}{i}", "-m"], tmp)
                times[name].append(wall)
                cpu[name].append(used)
    figures = {}
    for label, series in (("wall", times), ("cpu", cpu)):
        median = {name: statistics.median(values) for name, values in series.items()}
        figures.update({f"{label}_{name.replace('-', '_')}_s": value for name, value in median.items()})
        figures[f"{label}_ratio"] = median["receval"] / median["same-config"]
        figures[f"{label}_ratio_minimal"] = median["receval"] / median["minimal"]
        for name, value in median.items():
            print(f"{name:<12} 6-job sweep  {label} median {value:.3f} s over {args.repeats} runs")
        print(f"{label} ratio receval / same-config  {median['receval'] / median['same-config']:.2f}  (goal <= 1.15)")
        print(f"{label} ratio receval / minimal      {median['receval'] / median['minimal']:.2f}  (for scale: Hydra alone)")
    _figures.record(args, figures)


if __name__ == "__main__":
    main()
