"""Encoding throughput of retriever.backend=onnx (int8 onnxruntime) against backend=local (torch).

Both sides encode the same texts with the bundled all-MiniLM-L6-v2, given the same
batch size, longest first, in one process, with no embedding cache: ``LocalEncoder.encode``
(sentence-transformers on torch) and ``OnnxEncoder.encode`` (the fused int8 export, made
once in a temporary folder before timing; it sorts by token count and runs at most
``RUN_BATCH`` = 32 texts per onnxruntime call, which suits onnxruntime on 2 cores). Texts as in ``encode_throughput.py``: Cranfield
documents when present, then library chunks. Sides alternate over ``--repeats``
rounds after a warm-up; the median of each is reported, with the lowest cosine
between the two sides' vectors (and over non-empty texts: an empty document's vector
is the model's bias alone, where int8 moves it most). The issue's goals: onnx / torch
throughput >= 2, and a SciFact-size corpus encoded in under half torch's time
(``--corpus ../shared/datasets/scifact --texts 5183 --repeats 1``).

    python benchmarks/onnx_encoding.py [--texts 1000] [--batch-size 64] [--repeats 2] [--corpus BEIR_FOLDER]

``--small``: 16 library chunks, one round (the export and quantisation still run once).
Figures go to ``benchmarks/figures.json`` (``_figures.py``).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import _figures
from encode_throughput import CRANFIELD, corpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--corpus", type=Path, default=CRANFIELD, help="a BEIR folder (corpus.jsonl); default cranfield")
    args = _figures.parse(parser, small={"texts": 16, "repeats": 1, "corpus": None},
                          keys=("texts", "batch_size", "corpus"))

    import numpy as np
    import onnxruntime
    import torch

    from receval.encoders import BUNDLED, LocalEncoder, OnnxEncoder

    texts, source = corpus(args.texts, args.corpus)
    words = statistics.mean(len(t.split()) for t in texts)
    local = LocalEncoder(BUNDLED, batch_size=args.batch_size)
    with tempfile.TemporaryDirectory() as cache_dir:
        onnx = OnnxEncoder(BUNDLED, cache_dir, batch_size=args.batch_size)
        began = time.perf_counter()
        onnx.load()
        made = time.perf_counter() - began
        local.load()
        print(f"{len(texts)} texts ({source}), {words:.0f} words on average; batch {args.batch_size}; "
              f"torch {torch.__version__} ({torch.get_num_threads()} threads), onnxruntime {onnxruntime.__version__}; "
              f"export + int8 quantisation {made:.1f} s (once)")
        local.encode(texts[:64])  # warm-up
        onnx.encode(texts[:64])
        torch_s, onnx_s = [], []
        for _ in range(args.repeats):
            began = time.perf_counter()
            theirs = local.encode(texts)
            torch_s.append(time.perf_counter() - began)
            began = time.perf_counter()
            ours = onnx.encode(texts)
            onnx_s.append(time.perf_counter() - began)
    cosines = np.sum(theirs * ours, axis=1)
    filled = cosines[[bool(t.strip()) for t in texts]]
    slow, fast = statistics.median(torch_s), statistics.median(onnx_s)
    print(f"local (torch)   {slow:7.2f} s  {len(texts) / slow:7.1f} texts/s   runs {['%.2f' % s for s in torch_s]}")
    print(f"onnx (int8)     {fast:7.2f} s  {len(texts) / fast:7.1f} texts/s   runs {['%.2f' % s for s in onnx_s]}")
    print(f"throughput ratio onnx / local = {slow / fast:.2f}  (goal >= 2); "
          f"cosine min {cosines.min():.4f} ({filled.min():.4f} over non-empty texts), mean {cosines.mean():.4f}")
    _figures.record(args, {
        "torch_s": slow, "onnx_s": fast, "torch_texts_per_s": len(texts) / slow, "onnx_texts_per_s": len(texts) / fast,
        "ratio": slow / fast, "cosine_min": float(filled.min()), "cosine_mean": float(cosines.mean()),
        "texts": len(texts), "words": words,
    })


if __name__ == "__main__":
    main()
