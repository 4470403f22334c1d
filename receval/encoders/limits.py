"""What a local model reads: its tokenizer (``tokenizer.json``) and its token limit.

Shared by ``chunking=tokens`` (windows that fit) and the dense retriever (how many
chunks the model truncates). Only the ``tokenizers`` package is needed, not torch.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np


@lru_cache(maxsize=8)
def tokenizer_of(folder: str):
    """The model folder's fast tokenizer, without truncation or padding."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(folder) / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def limit_of(folder: str | Path) -> int | None:
    """The model's ``max_seq_length`` (sentence-transformers' limit), if it states one."""
    config = Path(folder) / "sentence_bert_config.json"
    if config.is_file():
        return json.loads(config.read_text()).get("max_seq_length")
    return None


def token_counts(folder: str | Path, texts: list[str]) -> np.ndarray:
    """Tokens the model reads for each text, special tokens included."""
    encoded = tokenizer_of(str(folder)).encode_batch(list(texts))
    return np.fromiter((len(e.ids) for e in encoded), np.int64, len(texts))


def truncated(folder: str | Path | None, texts: list[str]) -> int | None:
    """How many ``texts`` exceed the model's limit (the encoder cuts them silently);
    None when the folder has no tokenizer.json or states no limit."""
    if folder is None or not (Path(folder) / "tokenizer.json").is_file():
        return None
    limit = limit_of(folder)
    if limit is None:
        return None
    return int((token_counts(folder, texts) > limit).sum())
