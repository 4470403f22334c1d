"""Corpus encoding on Ray workers (``retriever.distributed=ray``) against one process.

The same texts, the bundled all-MiniLM-L6-v2 (torch), batch 64, each side into its own
empty embedding cache:

- ``one process``: ``Dense.fit`` with one torch thread (a worker's share: Ray's
  ``worker_cpus`` 1 gives an actor one thread), wall and CPU time: texts per
  CPU-second moves far less with other load than wall time does (though a loaded
  machine's shared caches and cores inflate it too), so it is the rate to plan with;
- ``Ray``: :func:`receval.encoders.distributed.encode_on_ray` on a private local Ray
  (``--workers`` actors of one CPU each), wall time from the call to the last vector
  in the cache, actor start-up and model loads included; then the vectors are read
  back and must equal the single process's bit for bit.

Prints texts per second for each side, per worker, the cache's bytes per text (pack
files on disk) and so its size per million passages, and the arithmetic for
``--plan`` passages (default 10 M): worker-hours, hours on N workers, cache size, and
the float32 matrix the run's process holds to search them. Texts as in
``encode_throughput.py`` (Cranfield documents, then library chunks).

    nice python benchmarks/ray_encoding.py [--texts 1000] [--workers 2] [--plan 10000000]

``--small``: 8 library chunks, one worker, shards of 8. Figures go to
``benchmarks/figures.json`` (``_figures.py``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import _figures
from encode_throughput import CRANFIELD, corpus


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("pack-*.emb"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--shard-size", type=int, default=256)
    parser.add_argument("--plan", type=int, default=10_000_000, help="passages to plan for")
    parser.add_argument("--plan-workers", type=int, default=32, help="workers to plan for")
    args = _figures.parse(parser, small={"texts": 8, "workers": 1, "shard_size": 8},
                          keys=("texts", "batch_size", "workers"))
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

    import numpy as np
    import ray
    import torch

    from receval.encoders import BUNDLED, EmbeddingCache, LocalEncoder
    from receval.encoders.distributed import encode_on_ray
    from receval.retrievers.dense import Dense

    texts, source = corpus(args.texts, None if args.small else CRANFIELD)
    n = len(set(texts))
    words = statistics.mean(len(t.split()) for t in texts)
    print(f"{len(texts)} texts ({source}), {words:.0f} words on average; batch {args.batch_size}; "
          f"torch {torch.__version__}, ray {ray.__version__}; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs")

    with tempfile.TemporaryDirectory() as one_dir, tempfile.TemporaryDirectory() as ray_dir:
        torch.set_num_threads(1)
        encoder = LocalEncoder(BUNDLED, batch_size=args.batch_size)
        dense = Dense(encoder, EmbeddingCache(one_dir, encoder.identity, encoder.label), progress=False)
        encoder.encode(["warm-up"])
        began, cpu = time.perf_counter(), time.process_time()
        dense.fit(texts)
        single, single_cpu = time.perf_counter() - began, time.process_time() - cpu
        assert dense.encoded == n

        cache = EmbeddingCache(ray_dir, encoder.identity, encoder.label)
        # a private Ray ("local"): never a cluster some earlier `ray start` on this machine left behind
        ray.init(address="local", num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
        try:
            began = time.perf_counter()
            done = encode_on_ray(texts, encoder, cache, workers=args.workers, worker_cpus=1,
                                 shard_size=args.shard_size, progress=False)
            on_ray = time.perf_counter() - began
        finally:
            ray.shutdown()
        assert done.texts == n and done.workers == args.workers, done
        again = Dense(encoder, cache, progress=False)
        again.fit(texts)
        assert again.encoded == 0 and np.array_equal(again.chunk_vectors, dense.chunk_vectors)
        per_text = folder_bytes(cache.folder) / n

    dim = dense.chunk_vectors.shape[1]
    one_rate, ray_rate, core_rate = n / single, n / on_ray, n / single_cpu
    per_worker = ray_rate / args.workers
    print(f"one process, 1 thread   {single:7.1f} s  {one_rate:6.1f} texts/s; CPU {single_cpu:.1f} s: "
          f"{core_rate:.1f} texts per CPU-second")
    print(f"Ray, {args.workers} workers x 1 CPU   {on_ray:7.1f} s  {ray_rate:6.1f} texts/s = {per_worker:.1f} per worker "
          f"({done.shards} shards; start-up and model loads included); vectors identical: yes")
    print(f"cache: {per_text:.0f} bytes a text ({dim} float32 + a 32-byte key) = {per_text * 1e6 / 2**30:.2f} GiB per million")
    for rate, what in ((core_rate, "per CPU-second"), (per_worker, "as measured on Ray here")):
        hours = args.plan / rate / 3600
        print(f"{args.plan:,} passages at {rate:.1f} texts/s a worker ({what}): {hours:,.0f} worker-hours, "
              f"{hours / args.plan_workers:,.1f} h on {args.plan_workers} workers")
    print(f"{args.plan:,} passages: cache {per_text * args.plan / 2**30:,.1f} GiB; the run's process holds "
          f"{args.plan * dim * 4 / 2**30:,.1f} GiB of float32 vectors to search them")
    _figures.record(args, {
        "one_thread_texts_per_s": one_rate, "texts_per_cpu_s": core_rate, "ray_texts_per_s": ray_rate,
        "ray_texts_per_s_per_worker": per_worker, "cache_bytes_per_text": per_text,
        "cache_gib_per_million": per_text * 1e6 / 2**30,
    })

if __name__ == "__main__":
    main()
