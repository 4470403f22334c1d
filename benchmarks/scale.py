"""Scale: a generated corpus of 1,000,000 passages and 10,000 questions, indexed and evaluated.

Writes a BEIR-layout collection to a temporary folder (passages of 20-80 words drawn
from a Zipf vocabulary of 200,000 words; each question is 6 words drawn from one
passage, which is its relevant document), then runs the real pipeline on it
(``dataset=beir``, BM25, whole passages, depth 10) in a child process and reports
wall time, the run's own step timings, and the child's peak memory (max RSS).
Goal: peak memory within 8 GiB.

    python benchmarks/scale.py [--passages 1000000] [--questions 10000]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def generate(root: Path, n_passages: int, n_questions: int, vocab_size: int = 200_000, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    vocab = np.array([f"t{i:x}" for i in range(vocab_size)])
    lengths = rng.integers(20, 81, size=n_passages)
    ranks = rng.zipf(1.2, size=int(lengths.sum()))
    words = vocab[(ranks - 1) % vocab_size]
    ends = np.cumsum(lengths)
    starts = ends - lengths
    (root / "qrels").mkdir(parents=True)
    with open(root / "corpus.jsonl", "w") as corpus:
        for i in range(n_passages):
            text = " ".join(words[starts[i] : ends[i]])
            corpus.write(f'{{"_id": "d{i}", "title": "", "text": "{text}"}}\n')
    chosen = rng.choice(n_passages, size=n_questions, replace=False)
    with open(root / "queries.jsonl", "w") as queries, open(root / "qrels" / "test.tsv", "w") as qrels:
        qrels.write("query-id\tcorpus-id\tscore\n")
        for q, doc in enumerate(chosen):
            picks = rng.choice(words[starts[doc] : ends[doc]], size=6)
            queries.write(json.dumps({"_id": f"q{q}", "text": " ".join(picks)}) + "\n")
            qrels.write(f"q{q}\td{doc}\t1\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=1_000_000)
    parser.add_argument("--questions", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        began = time.perf_counter()
        generate(tmp / "collection", args.passages, args.questions)
        print(f"generated {args.passages:,} passages, {args.questions:,} questions in {time.perf_counter() - began:.1f} s")
        began = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "receval", "dataset=beir", f"dataset.path={tmp / 'collection'}",
             "retriever=bm25", "chunking.max_words=null", "cache_dir=null", "search_batch=256", f"hydra.run.dir={tmp / 'run'}"],
            check=True,
        )
        wall = time.perf_counter() - began
        peak_gib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20  # KiB on Linux
        info = json.loads((tmp / "run" / "run.json").read_text())
    steps = ", ".join(f"{k[:-2]} {v:.1f} s" for k, v in info["timings"].items())
    print(f"run: {wall:.1f} s wall ({steps})")
    print(f"peak memory {peak_gib:.2f} GiB (goal <= 8 GiB); {info['n_chunks']:,} chunks")
    print(f"MRR {info['means']['rr']:.3f}, hit@10 {info['means']['hit@10']:.3f}")


if __name__ == "__main__":
    main()
