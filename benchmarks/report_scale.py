"""How long the report takes, and its peak memory: 100 runs x 10,000 questions (goal:
<= 5 s) and 10 runs x 1,000,000 questions (goal: <= 60 s and 2 GiB on 2 cores).

Builds a synthetic sweep in a temporary directory -- 100 numbered job folders,
each with a ``results.parquet`` written by ``receval.results.write.write_results`` (all
stored columns: ids, kinds, splits, texts, labels, 10 retrieved sections with
scores, first relevant rank, every measure at 1, 3, 5, 10, latency), a minimal
``run.json`` and ``.hydra/config.yaml``, sealed by a manifest -- then times

    receval report SWEEP --baseline retriever=tfidf,max_words=120 --format json > /dev/null

(2,000 resamples: every run's intervals on 5 measures plus 99 paired differences),
as a user would run it, ``--repeats`` times, and prints the best time and the report
process's peak resident memory beside the goals and the load average.

    .venv/bin/python benchmarks/report_scale.py [--runs 100] [--questions 10000] [--keep DIR]
    .venv/bin/python benchmarks/report_scale.py --runs 10 --questions 1000000 --keep /tmp/sweep1m

``--keep DIR`` builds the sweep there and keeps it; a DIR already holding the runs is
reused (building 10 x 1,000,000 takes minutes). ``--small``: 3 runs x 1,000 questions,
one round. Figures go to ``benchmarks/figures.json`` (``_figures.py``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import yaml

from receval.run.metrics import measures_for
from receval.results.manifest import seal
from receval.results.write import write_results, write_run_json

import _figures

GOALS = {10_000: (5.0, None), 1_000_000: (60.0, 2 << 30)}  # questions -> (seconds, peak bytes)
DEPTH = 10
KS = [1, 3, 5, 10]


def _lists(values: np.ndarray, lengths: np.ndarray, value_type: pa.DataType) -> pa.Array:
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values, type=value_type))


def build_sweep(root: Path, n_runs: int, n_questions: int, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    sections = np.asarray([f"page{i // 8}#section-{i % 8}" for i in range(400)], dtype=object)
    ids = [f"q{i:05d}" for i in range(n_questions)]
    kinds = rng.choice(["direct", "paraphrase", "unanswerable"], size=n_questions, p=[0.5, 0.48, 0.02])
    answerable = kinds != "unanswerable"
    splits = rng.choice(["dev", "test"], size=n_questions)
    texts = [f"synthetic question number {i}?" for i in range(n_questions)]
    gold = rng.integers(0, len(sections), size=n_questions)
    # one label per answerable question, none for the unanswerable ones
    rel_lengths = answerable.astype(np.int32)
    relevant = _lists(sections[gold][answerable], rel_lengths, pa.string())
    grades = _lists(np.ones(int(answerable.sum()), np.int32), rel_lengths, pa.int32())
    difficulty = rng.random(n_questions)
    names = [m.name for m in measures_for(KS)]

    for job in range(n_runs):
        retriever = "bm25" if job % 2 == 0 else "tfidf"
        max_words = 10 * (job // 2 + 1)  # 10, 10, 20, 20, ... (120: jobs 22 and 23)
        run_dir = root / str(job)
        (run_dir / ".hydra").mkdir(parents=True)
        quality = 0.55 + 0.2 * rng.random()
        found = difficulty < quality
        rank = np.where(found, np.minimum(rng.geometric(0.6, n_questions), DEPTH), 0)
        rank = np.where(answerable, rank, 0)
        retrieved_idx = rng.integers(0, len(sections), size=(n_questions, DEPTH))
        hit_rows = rank > 0
        retrieved_idx[hit_rows, rank[hit_rows] - 1] = gold[hit_rows]
        scores = np.sort(rng.random((n_questions, DEPTH)).astype(np.float32), axis=1)[:, ::-1] * 20
        columns: dict = {
            "question_id": ids,
            "kind": kinds.tolist(),
            "split": splits.tolist(),
            "question": texts,
            "relevant": relevant,
            "grades": grades,
            "retrieved": _lists(sections[retrieved_idx.ravel()], np.full(n_questions, DEPTH), pa.string()),
            "scores": _lists(scores.ravel(), np.full(n_questions, DEPTH), pa.float32()),
            "first_relevant_rank": pa.array(np.where(rank > 0, rank, 0), mask=rank == 0, type=pa.int32()),
        }
        null = ~answerable
        rr = np.where(rank > 0, 1.0 / np.maximum(rank, 1), 0.0)
        for name in names:
            family, _, k = name.partition("@")
            k = int(k) if k else None
            within = (rank > 0) & (rank <= (k or DEPTH))
            value = {  # one relevant section per answerable question: AP is RR within the cutoff
                "rr": rr,
                "ap": np.where(within, rr, 0.0),
                "rprec": (rank == 1).astype(float),
                "bpref": within.astype(float),
                "hit": within.astype(float),
                "recall": within.astype(float),
                "precision": within / (k or 1),
                "ndcg": np.where(within, 1.0 / np.log2(np.maximum(rank, 1) + 1.0), 0.0),
                "judged": within / (k or 1),
            }[family]
            columns[name] = pa.array(value, mask=null, type=pa.float64())
        columns["latency_ms"] = pa.array(rng.gamma(2.0, 0.5, n_questions))
        config = {
            "dataset": {"name": "synthetic", "format": "folder", "path": None, "questions": None},
            "chunking": {"max_words": max_words, "overlap": 0, "headings": True},
            "retriever": {"name": retriever},
            "bootstrap": {"n_resamples": 2000, "level": 0.95, "seed": 0, "method": "percentile"},
            "metrics": {"ks": KS},
            "depth": DEPTH,
        }
        (run_dir / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        info = {
            "config_hash": f"synthetic-{job}",
            "dataset_fingerprint": "synthetic",
            "n_chunks": 5000 // (max_words // 10),
            "n_questions": n_questions,
            "n_unanswerable": int(null.sum()),
        }
        # write_results takes Python values (its own Arrow columns, with the schema's types)
        columns = {k: v.to_pylist() if isinstance(v, pa.Array) else v for k, v in columns.items()}
        write_results(run_dir, columns, names, info)
        write_run_json(run_dir, {**info, "config": config})
        seal(run_dir)  # last, as a run is written: the door reads only sealed folders
    return root


def timed(command: list[str]) -> tuple[float, int]:
    """Wall seconds and peak resident bytes of one run of ``command`` (output discarded)."""
    began = time.perf_counter()
    with open(os.devnull, "w") as sink:
        done = subprocess.run(["/usr/bin/time", "-f", "%M", *command], stdout=sink, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return seconds, int(done.stderr.strip().splitlines()[-1]) * 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keep", metavar="DIR", help="build the sweep here and keep it (reused when there)")
    args = _figures.parse(parser, argv, small={"runs": 3, "questions": 1000, "repeats": 1}, keys=("runs", "questions"))

    with tempfile.TemporaryDirectory(prefix="receval-bench-") as tmp:
        root = Path(args.keep) if args.keep else Path(tmp) / "sweep"
        if (root / str(args.runs - 1) / "manifest.json").is_file():
            print(f"reusing {root}")
        else:
            began = time.perf_counter()
            build_sweep(root, args.runs, args.questions)
            took = time.perf_counter() - began
            print(f"built {args.runs} runs x {args.questions} questions in {took:.1f} s ({root})")
        widest = 120 if args.runs > 23 else 10 * (args.runs // 2)  # jobs 22 and 23 hold 120 words
        baseline = f"retriever=tfidf,max_words={widest}"
        command = [sys.executable, "-m", "receval", "report", str(root), "--baseline", baseline, "--format", "json"]
        found = []
        for _ in range(args.repeats):
            load = os.getloadavg()[0]
            seconds, peak = timed(command)
            found.append((seconds, peak, load))
            print(f"  {seconds:.2f} s, peak {peak / 2**30:.2f} GiB (load average {load:.2f})")
        seconds, peak, load = min(found)
        goal_s, goal_bytes = GOALS.get(args.questions, (None, None))
        verdict = "" if goal_s is None else (
            f"; goal <= {goal_s:.0f} s" + (f" and {goal_bytes / 2**30:.0f} GiB" if goal_bytes else "") + " -> "
            + ("OK" if seconds <= goal_s and (goal_bytes is None or peak <= goal_bytes) else "MISSED"))
        print(
            f"report ({args.runs} runs x {args.questions} questions, 2000 resamples, {args.runs - 1} pairs vs "
            f"baseline, JSON): best of {args.repeats} {seconds:.2f} s, peak {peak / 2**30:.2f} GiB "
            f"(load average {load:.2f}){verdict}"
        )
    _figures.record(args, {"seconds": seconds, "peak_gib": peak / 2**30})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
