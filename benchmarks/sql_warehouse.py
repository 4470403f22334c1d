"""SQL over 100 runs x 10,000 questions (1 M rows): a GROUP BY with the runs' parameters
joined, through ``receval.analysis.warehouse`` (DuckDB over Arrow), against the same
query written with pyarrow alone (read every results file, add the run's parameters,
``Table.group_by``). Goal: the query under 0.5 s.

    .venv/bin/python benchmarks/sql_warehouse.py [--runs 100] [--questions 10000] [--repeat 5] [--keep DIR]

The sweep is the synthetic one of ``benchmarks/report_scale.py`` (every stored column,
``.hydra/config.yaml`` sweeping retriever x max_words). Timed:

- open: ``open_runs(SWEEP)``: finding the runs, reading each one's metadata, facts and
  saved config, labelling them, building the views (once; reported on its own);
- receval: ``SELECT retriever, max_words, split, avg("hit@3"), avg(rr), count(*)
  FROM questions GROUP BY ALL`` on the open warehouse (the parameters are joined per
  row by the view);
- pyarrow: ``pq.read_table`` of the three columns of each results file, the run's
  parameters (read from the saved configs beforehand, untimed) appended as columns,
  ``concat_tables``, ``group_by(...).aggregate``.

Each side is timed ``--repeat`` times; the best time is reported (the machine's noise
only ever adds). Prints both, the ratio receval / pyarrow, and whether the means agree.
Needs duckdb (the ``sql`` extra). ``--small``: 4 runs x 200 questions, one round.
Figures go to ``benchmarks/figures.json`` (``_figures.py``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _figures  # noqa: E402
from report_scale import build_sweep  # noqa: E402

from receval.analysis.warehouse import open_runs  # noqa: E402
from receval.results import open_run  # noqa: E402

GOAL_S = 0.5
QUERY = ('SELECT retriever, max_words, split, avg("hit@3") AS hit3, avg(rr) AS mrr, count(*) AS n '
         "FROM questions GROUP BY ALL ORDER BY retriever, max_words, split")


def parameters(run_dirs: list[Path]) -> list[tuple[Path, str, int]]:
    """Each run's retriever and max_words from its saved config (read once, untimed)."""
    configs = [(run_dir, open_run(run_dir, only=frozenset()).config) for run_dir in run_dirs]  # through the door
    return [(d, c["retriever"]["name"], c["chunking"]["max_words"]) for d, c in configs]


def with_pyarrow(runs: list[tuple[Path, str, int]]) -> pa.Table:
    """The same GROUP BY with pyarrow alone, the parameters known beforehand."""
    parts = []
    for run_dir, retriever, max_words in runs:
        table = pq.read_table(run_dir / "results.parquet", columns=["split", "hit@3", "rr"])
        n = table.num_rows
        table = table.append_column("retriever", pa.array([retriever] * n))
        table = table.append_column("max_words", pa.array(np.full(n, max_words)))
        parts.append(table)
    grouped = pa.concat_tables(parts).group_by(["retriever", "max_words", "split"]).aggregate(
        [("hit@3", "mean"), ("rr", "mean"), ([], "count_all")]
    )
    return grouped.sort_by([("retriever", "ascending"), ("max_words", "ascending"), ("split", "ascending")])


def best(repeat: int, work) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        began = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - began)
    return min(times), result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", metavar="DIR", help="build the sweep here (or reuse it) and keep it")
    args = _figures.parse(parser, argv, small={"runs": 4, "questions": 200, "repeat": 1}, keys=("runs", "questions"))

    with tempfile.TemporaryDirectory(prefix="receval-bench-") as tmp:
        root = Path(args.keep) if args.keep else Path(tmp) / "sweep"
        if not (root / "0" / "results.parquet").is_file():
            began = time.perf_counter()
            build_sweep(root, args.runs, args.questions)
            print(f"built {args.runs} runs x {args.questions} questions in {time.perf_counter() - began:.1f} s ({root})")
        began = time.perf_counter()
        warehouse = open_runs([root])
        opened = time.perf_counter() - began
        ours, got = best(args.repeat, lambda: warehouse.arrow(QUERY))
        known = parameters(warehouse.run_dirs)
        theirs, want = best(args.repeat, lambda: with_pyarrow(known))
        warehouse.close()
        agree = (got.num_rows == want.num_rows
                 and np.allclose(got.column("hit3").to_numpy(), want.column("hit@3_mean").to_numpy(), atol=1e-12)
                 and np.allclose(got.column("mrr").to_numpy(), want.column("rr_mean").to_numpy(), atol=1e-12)
                 and got.column("n").to_pylist() == want.column("count_all").to_pylist())
        rows = args.runs * args.questions
        print(f"open_runs ({args.runs} runs: metadata, configs, labels, views): {opened:.2f} s (once)")
        print(f"receval sql  GROUP BY retriever, max_words, split over {rows:,} rows: {ours:.3f} s (best of {args.repeat})")
        print(f"pyarrow      the same from the files: {theirs:.3f} s (best of {args.repeat})")
        verdict = "OK" if ours < GOAL_S else "TOO SLOW"
        print(f"ratio receval / pyarrow: {ours / theirs:.2f}; goal < {GOAL_S} s -> {verdict}; "
              f"groups agree: {'yes' if agree else 'NO'} ({got.num_rows} groups)")
        if not agree:
            return 1
        _figures.record(args, {"open_s": opened, "receval_s": ours, "pyarrow_s": theirs, "ratio": ours / theirs,
                               "groups": got.num_rows})
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
