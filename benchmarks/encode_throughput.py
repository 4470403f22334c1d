"""Encoding throughput: receval's dense fit (fresh cache) against the model's own encode.

Both sides encode the same texts with the same model and batch size, in one process:

- ``model.encode``: ``SentenceTransformer.encode(texts, batch_size, normalize_embeddings=True)``;
- ``receval``: ``Dense.fit(texts)`` with an empty cache in a temporary folder, so every
  text is hashed, looked up, encoded, and written to the cache (the full path a
  first run takes).

The issue's goal: receval / model.encode <= 1.1. Texts: Cranfield documents (title +
text) from ``../shared/datasets/cranfield`` when present, then library chunks of
20/40/120 words, until ``--texts`` are collected. The sides alternate over
``--repeats`` rounds (after a warm-up); the median time of each side is reported.

    python benchmarks/encode_throughput.py [--texts 2000] [--batch-size 64] [--repeats 2]

``--small``: 16 library chunks, one round. Figures go to ``benchmarks/figures.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import _figures

ROOT = Path(__file__).resolve().parent.parent
CRANFIELD = Path(os.environ.get("RECEVAL_SHARED", ROOT.parent / "shared")) / "datasets" / "cranfield"


def corpus(n: int, folder: Path | None = CRANFIELD) -> tuple[list[str], str]:
    """``n`` texts: a BEIR folder's documents (title + text), then library chunks (only
    those when ``folder`` is None)."""
    texts: list[str] = []
    sources = []
    docs = folder / "corpus.jsonl" if folder is not None else None
    if docs is not None and docs.is_file():
        with open(docs, encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                if len(texts) < n:
                    texts.append(f"{record.get('title', '')} {record.get('text', '')}".strip())
        sources.append(f"{len(texts)} {folder.name} docs")
    if len(texts) < n:
        from hydra import compose, initialize_config_dir

        from receval.chunking.words import chunk_sections
        from receval.run.config import config_dir, register
        from receval.datasets import load_dataset

        register()
        with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
            library = load_dataset(compose("config").dataset)
        before = len(texts)
        seen = set(texts)
        for words in (20, 40, 120, 60, 30, 80):
            for chunk in chunk_sections(library.sections, words, 0, True):
                if len(texts) < n and chunk.text not in seen:
                    seen.add(chunk.text)
                    texts.append(chunk.text)
        for i in range(n - len(texts)):  # the library ran out: numbered copies
            texts.append(f"{texts[before + i % (len(texts) - before)]} ({i})")
        sources.append(f"{len(texts) - before} library chunks")
    return texts[:n], " + ".join(sources)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    args = _figures.parse(parser, small={"texts": 16, "repeats": 1}, keys=("texts", "batch_size"))

    import numpy as np

    from receval.encoders import BUNDLED, EmbeddingCache, LocalEncoder
    from receval.retrievers.dense import Dense

    texts, source = corpus(args.texts, None if args.small else CRANFIELD)
    words = statistics.mean(len(t.split()) for t in texts)
    encoder = LocalEncoder(BUNDLED, batch_size=args.batch_size)
    model = encoder.model
    import torch

    print(f"{len(texts)} texts ({source}), {words:.0f} words on average; batch {args.batch_size}; "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    model.encode(texts[:128], batch_size=args.batch_size, normalize_embeddings=True)  # warm-up

    direct_s, receval_s = [], []
    for _ in range(args.repeats):
        began = time.perf_counter()
        theirs = model.encode(texts, batch_size=args.batch_size, normalize_embeddings=True, show_progress_bar=False)
        direct_s.append(time.perf_counter() - began)
        with tempfile.TemporaryDirectory() as cache_dir:
            dense = Dense(encoder, EmbeddingCache(cache_dir, encoder.identity, encoder.label), progress=False)
            began = time.perf_counter()
            dense.fit(texts)
            receval_s.append(time.perf_counter() - began)
        assert dense.encoded == len(set(texts))
    np.testing.assert_allclose(dense.chunk_vectors, theirs, atol=1e-5)

    direct, ours = statistics.median(direct_s), statistics.median(receval_s)
    print(f"model.encode       {direct:7.2f} s  {len(texts) / direct:7.1f} texts/s   runs {['%.2f' % s for s in direct_s]}")
    print(f"receval Dense.fit  {ours:7.2f} s  {len(texts) / ours:7.1f} texts/s   runs {['%.2f' % s for s in receval_s]}")
    print(f"ratio receval / model.encode = {ours / direct:.3f}  (goal <= 1.1)")
    _figures.record(args, {"model_encode_s": direct, "receval_s": ours, "ratio": ours / direct,
                           "texts": len(texts), "words": words})


if __name__ == "__main__":
    main()
