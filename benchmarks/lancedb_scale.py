"""LanceDB at scale: an IVF-PQ index over 1,000,000 generated 384-dimension unit vectors.

What ``retriever=lancedb retriever.index=ivf_pq`` does, at a size no built-in collection
reaches: the vectors go into a LanceDB table (``idx``, ``vector``), the index is built
with receval's own config (:func:`receval.retrievers.lancedb.ann_index`: dot product,
LanceDB's default partitions, about sqrt(rows), and sub-vectors), and each question is
searched alone (:func:`receval.retrievers.lancedb.vector_search`, ``nprobes`` 20 as
``conf/retriever/lancedb.yaml``), without and with ``refine_factor`` (the candidates
re-scored exactly). ``ann_recall@10`` is :func:`receval.retrievers.lancedb.ann_recall`:
the share of each question's exact top 10 (numpy, the tie rule) the index found.

Vectors: ``--clusters`` Gaussian clusters in a ``--latent``-dimension space, mapped into
384 dimensions by an orthonormal basis, plus isotropic noise there, then normalised:
sentence embeddings, too, fill few of their dimensions and gather by topic. Questions
are new draws from the same mixture. (Uniform random vectors have no neighbourhoods:
no near neighbours stand out for an index to find; the recall printed is for data with structure,
and a real corpus's is measured by its own run's ``ann_recall@10``.) Prints the
table write, the index build, each search mode's mean and median time per question
and its ann_recall@10, the exact (flat, numpy) search time per question for scale,
the table's size on disk and this process's peak RSS.

    nice python benchmarks/lancedb_scale.py [--vectors 1000000] [--questions 200] [--refine-factor 10]

``--small``: 5,000 vectors of 32 dimensions, 20 questions. Figures go to
``benchmarks/figures.json`` (``_figures.py``).
"""

from __future__ import annotations

import argparse
import platform
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

import _figures


def mixture(rng: np.random.Generator, centres: np.ndarray, basis: np.ndarray, n: int, spread: float, noise: float,
            block: int = 100_000) -> np.ndarray:
    """``n`` unit vectors: a random centre plus Gaussian ``spread`` in the latent space,
    mapped to the full dimension by ``basis``, plus Gaussian ``noise`` there, normalised
    (each term's scale is its expected norm, the centres' being 1)."""
    latent, dim = basis.shape
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, block):
        size = min(block, n - start)
        z = centres[rng.integers(0, len(centres), size)] + rng.normal(0, spread / np.sqrt(latent), (size, latent))
        part = (z @ basis + rng.normal(0, noise / np.sqrt(dim), (size, dim))).astype(np.float32)
        out[start : start + size] = part / np.linalg.norm(part, axis=1, keepdims=True)
    return out


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def searched(table, questions: np.ndarray, vectors: np.ndarray, tie_rank: np.ndarray, node, args,
             k: int = 10) -> dict[str, float]:
    """Search the questions one at a time with ``node``'s settings: time a question and
    ``ann_recall@10`` against the exact top 10, printed and returned as figures."""
    from receval.retrievers.lancedb import ann_recall, vector_search

    refine = node.refine_factor
    vector_search(table, questions[0], k, node)  # warm-up: the index's first read
    seconds, found = [], np.full((args.questions, k), -1, dtype=np.int32)
    for q in range(args.questions):
        began = time.perf_counter()
        result = vector_search(table, questions[q], k, node)
        seconds.append(time.perf_counter() - began)
        idx = result["idx"].to_numpy()
        found[q, : len(idx)] = idx
    shares = np.concatenate([
        ann_recall(questions[s : s + 50], vectors, found[s : s + 50], tie_rank) for s in range(0, args.questions, 50)
    ])
    name = f"ivf_pq nprobes {args.nprobes}" + (f" refine {refine}" if refine else "")
    print(f"{name:<28} search {statistics.mean(seconds) * 1000:7.2f} ms mean, "
          f"{statistics.median(seconds) * 1000:7.2f} ms median a question; ann_recall@10 {shares.mean():.3f}")
    side = "refined" if refine else "ivf_pq"
    return {f"{side}_ms": statistics.mean(seconds) * 1000, f"{side}_median_ms": statistics.median(seconds) * 1000,
            f"{side}_ann_recall": float(shares.mean())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vectors", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--clusters", type=int, default=2000)
    parser.add_argument("--latent", type=int, default=64, help="the dimension the clusters live in")
    parser.add_argument("--spread", type=float, default=0.5, help="a vector's distance from its centre, in the latent space")
    parser.add_argument("--noise", type=float, default=0.2, help="isotropic noise in the full dimension")
    parser.add_argument("--nprobes", type=int, default=20)
    parser.add_argument("--refine-factor", type=int, default=10)
    parser.add_argument("--folder", type=Path, default=None, help="where the table goes (default: a temporary folder)")
    args = _figures.parse(parser, small={"vectors": 5000, "dim": 32, "questions": 20, "clusters": 20, "latent": 8},
                          keys=("vectors", "dim", "questions"))

    import lancedb
    import pyarrow as pa

    from receval.run.ranking import select_top
    from receval.retrievers.lancedb import ann_index

    k = 10
    rng = np.random.default_rng(0)
    centres = rng.normal(0, 1 / np.sqrt(args.latent), (args.clusters, args.latent))
    basis = np.linalg.qr(rng.normal(size=(args.dim, args.latent)))[0].T  # orthonormal rows: norms kept
    began = time.perf_counter()
    vectors = mixture(rng, centres, basis, args.vectors, args.spread, args.noise)
    questions = mixture(rng, centres, basis, args.questions, args.spread, args.noise)
    generated = time.perf_counter() - began
    tie_rank = np.arange(args.vectors, dtype=np.int64)
    print(f"{args.vectors:,} vectors x {args.dim} (float32, {vectors.nbytes / 2**30:.2f} GiB), {args.clusters} clusters "
          f"in {args.latent} dimensions (spread {args.spread}, noise {args.noise}), "
          f"{args.questions} questions; lancedb {lancedb.__version__}, {platform.processor() or platform.machine()}, "
          f"generated in {generated:.1f} s")

    root = Path(tempfile.mkdtemp(prefix="receval-lancedb-scale-", dir=args.folder))
    try:
        began = time.perf_counter()
        data = pa.table({
            "idx": pa.array(np.arange(args.vectors, dtype=np.int32)),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel(), pa.float32()), args.dim),
        })
        table = lancedb.connect(str(root)).create_table("chunks", data)
        del data
        written = time.perf_counter() - began
        print(f"table write        {written:8.1f} s")

        node = SimpleNamespace(index="ivf_pq", partitions=0, sub_vectors=0, nprobes=args.nprobes, ef=0, refine_factor=None)
        began = time.perf_counter()
        table.create_index("vector", config=ann_index(node))
        built = time.perf_counter() - began
        print(f"ivf_pq index build {built:8.1f} s  (partitions and sub-vectors: LanceDB's defaults)")
        print(f"table on disk      {folder_bytes(root) / 2**30:8.2f} GiB")

        began = time.perf_counter()
        for start in range(0, args.questions, 50):  # what ann_recall compares with, 50 questions at a time
            select_top(questions[start : start + 50] @ vectors.T, k, tie_rank, floor=None)
        flat = (time.perf_counter() - began) / args.questions
        print(f"exact (numpy)      {flat * 1000:8.1f} ms a question (all scores, top 10 by the tie rule)")
        figures = {"table_write_s": written, "index_build_s": built, "disk_gib": folder_bytes(root) / 2**30,
                   "exact_ms": flat * 1000}

        for refine in (None, args.refine_factor):
            node.refine_factor = refine
            figures.update(searched(table, questions, vectors, tie_rank, node, args))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        print(f"peak RSS {peak:.2f} GiB")
        _figures.record(args, {**figures, "peak_gib": peak})
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
