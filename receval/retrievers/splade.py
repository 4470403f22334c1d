"""SPLADE, learned sparse retrieval (Formal et al. 2021, "SPLADE v2"), from a local model folder.

``retriever.model`` is a folder holding a BERT-style masked-LM checkpoint and its
tokenizer (what ``save_pretrained`` writes; nothing is downloaded). A text becomes one
weight per vocabulary term::

    w(t) = max over the text's tokens i (attention mask 1) of log(1 + ReLU(logit_i(t)))

computed as ``log1p(relu(masked max of the logits))``: log(1 + ReLU(x)) never
decreases, so it commutes with the maximum, and the activation runs over one
vocabulary-sized row per text instead of tokens x vocabulary. A question's score for a
chunk is the dot product of their weights. The chunks' weights are held term-major like
BM25's and searched by the same code (:class:`receval.retrievers.lexical.LexicalRetriever`:
the sparse top-k path, floor 0, the one tie rule), so a chunk sharing no weighted term
with the question is not retrieved.

The chunks' encodings are cached under ``<cache_dir>/splade/``, one file per (model,
``max_length``, chunk texts): the model by its folder's path and every file's name, size
and modification time (as dense models are keyed, :mod:`receval.encoders.local`); the
file is written under a temporary name and renamed, and one that cannot be read is
encoded again. torch and transformers come with the ``dense`` extra and are imported
when the model is loaded (in ``fit``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np
import scipy.sparse as sp

from receval.run.components import Context, RetrieverConfig, component
from receval.core.errors import ConfigError
from receval.core.io import WriteError, atomic_write
from receval.core.secrets import cut
from receval.encoders.local import _fingerprint
from receval.retrievers.lexical import LexicalRetriever
from receval.schema import BATCH, TOKENS, range_

RECIPE = 1  # bumped whenever receval changes how it encodes (the cache key holds it)
HOW_TO_GET = (
    "save a SPLADE model once, e.g. `huggingface-cli download naver/splade-cocondenser-ensembledistil "
    "--local-dir models/splade`, and set retriever.model to that folder (receval never downloads a model at run time)"
)
INSTALL = "install the dense extra: pip install torch==2.13.0, then pip install 'receval[dense]'"


@dataclass
class SpladeConfig(RetrieverConfig):
    kind: str = "splade"
    model: Optional[str] = None  # a local folder: a BERT masked-LM checkpoint and its tokenizer
    batch_size: int = field(default=32, metadata=range_(*BATCH))  # texts per forward pass
    max_length: int = field(default=256, metadata=range_(*TOKENS))  # tokens per text (capped at the model's)

    def problems(self) -> list[str]:
        if self.model is None or not str(self.model).strip():
            return [f"model is required: the folder of a SPLADE (masked-LM) model; {HOW_TO_GET}"]
        return []

    @staticmethod
    def describe(node) -> str:
        return f"splade:{Path(str(node.model)).name}"


HEAD_NEEDED = (
    "SPLADE needs a masked-LM checkpoint, whose head gives a weight per vocabulary term "
    "(config.json architectures ...ForMaskedLM, e.g. naver/splade-cocondenser-ensembledistil); "
    "a bare encoder's head would be random numbers"
)


def masked_lm_problem(config_json: Path) -> str | None:
    """Why the checkpoint ``config.json`` describes has no masked-LM head (None when it
    has one, or does not say): its ``architectures`` name none (``BertModel``, a
    classifier). Read before torch is imported; :meth:`Splade.load` then checks the
    head's weights are really in the checkpoint."""
    try:
        architectures = json.loads(config_json.read_text(encoding="utf-8")).get("architectures")
    except (OSError, ValueError, AttributeError):
        return None  # transformers reports an unreadable config when it loads it
    if not isinstance(architectures, list) or not architectures:
        return None
    names = [str(a) for a in architectures]
    if any(a.endswith(("ForMaskedLM", "ForPreTraining")) for a in names):
        return None
    return f"holds a {', '.join(names)} checkpoint (config.json architectures), which has no masked-LM head"


def model_folder(name: str) -> Path:
    """The checked ``retriever.model`` folder (a ``config.json`` beside its weights); a
    ConfigError naming it otherwise, before torch is imported."""
    path = Path(str(name)).expanduser()
    if not path.is_dir():
        what = "is a file, not a model's folder" if path.exists() else "is no folder"
        raise ConfigError(f"retriever.model={name!r}: {path.resolve()} {what}; {HOW_TO_GET}")
    if not (path / "config.json").is_file():
        raise ConfigError(f"retriever.model={name!r}: {path.resolve()} holds no config.json, so it is no saved model; {HOW_TO_GET}")
    head_problem = masked_lm_problem(path / "config.json")
    if head_problem:
        raise ConfigError(f"retriever.model={name!r}: {path.resolve()} {head_problem}; {HEAD_NEEDED}")
    missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(f"retriever=splade needs {', '.join(missing)}, which is not installed: {INSTALL}")
    return path.resolve()


def term_weights(logits, attention_mask):
    """(B, V) SPLADE weights from (B, L, V) logits: log1p(relu(max over unmasked tokens)).
    The padding's logits are overwritten in place (-inf): no second (B, L, V) tensor."""
    import torch

    hidden = ~attention_mask.bool()[:, :, None]
    pooled = logits.masked_fill_(hidden, float("-inf")).amax(dim=1)
    return torch.log1p(torch.relu(pooled))


class Splade(LexicalRetriever):
    """A masked-LM's term weights, searched as BM25 searches its weights."""

    name = "splade"
    counts_terms = False  # weights of model terms, not counts of the run's tokens

    def __init__(self, folder: Path, batch_size: int, max_length: int, cache_dir: str | None):
        super().__init__(tokenizer=None)
        self.folder, self.batch_size, self.max_length = folder, int(batch_size), int(max_length)
        self.cache_dir = cache_dir
        self.model = self.tokens = None
        self.encoded_chunks = 0  # chunks encoded by this run (not found in the cache)

    def load(self) -> None:
        if self.model is not None:
            return
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        if logging.getLogger("transformers").level == logging.NOTSET:
            logging.getLogger("transformers").setLevel(logging.ERROR)
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        try:
            self.tokens = AutoTokenizer.from_pretrained(str(self.folder), local_files_only=True)
            model, info = AutoModelForMaskedLM.from_pretrained(
                str(self.folder), local_files_only=True, output_loading_info=True
            )
        except Exception as error:  # the folder's files, read by transformers
            first = (str(error).strip().splitlines() or [""])[0]
            raise ConfigError(
                f"retriever.model={str(self.folder)!r}: not a masked-LM model and tokenizer transformers can load "
                f"({type(error).__name__}: {cut(first, 200)}); {HOW_TO_GET}"
            ) from None
        missing = list(info.get("missing_keys") or [])
        if missing:  # transformers filled them with random numbers: the weights would be noise
            self.tokens = None
            raise ConfigError(
                f"retriever.model={str(self.folder)!r}: the checkpoint lacks {len(missing)} weights of the masked-LM "
                f"head ({cut(', '.join(sorted(missing)), 120)}); {HEAD_NEEDED}"
            )
        self.model = model.eval()
        limit = getattr(self.model.config, "max_position_embeddings", None)
        if isinstance(limit, int) and 0 < limit < self.max_length:
            self.max_length = limit

    def encode(self, texts: list[str]) -> sp.csr_matrix:
        """(N, V) term weights of ``texts``, ``batch_size`` texts per forward pass."""
        import torch

        self.load()
        parts = []
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                batch = self.tokens(
                    list(texts[start : start + self.batch_size]), padding=True, truncation=True,
                    max_length=self.max_length, return_tensors="pt",
                )
                logits = self.model(**batch).logits
                parts.append(sp.csr_matrix(term_weights(logits, batch["attention_mask"]).numpy().astype(np.float64)))
        width = self.model.config.vocab_size
        return sp.vstack(parts).tocsr() if parts else sp.csr_matrix((0, width))

    def fit(self, texts: list[str], tie_rank=None) -> None:
        self.tie_rank = np.arange(len(texts)) if tie_rank is None else np.asarray(tie_rank)
        self.load()
        chunks = self.cached(texts)
        table = chunks.T.tocsr()  # (V, D): each term's chunks in id order
        table.sort_indices()
        self.index_weights(table)

    def query_counts(self, questions: list[str]) -> sp.csr_matrix:
        """The questions' term weights (what BM25 counts, SPLADE encodes)."""
        return self.encode(questions)

    def question_weights(self, counts: sp.csr_matrix) -> sp.csr_matrix:
        return counts

    def cache_path(self, texts: list[str]) -> Path | None:
        if not self.cache_dir:
            return None
        identity = {"recipe": RECIPE, "model": str(self.folder), "files": _fingerprint(self.folder, mtimes=True),
                    "max_length": self.max_length}
        model_key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
        digest = hashlib.sha256()
        for text in texts:
            data = text.encode()
            digest.update(len(data).to_bytes(8, "little") + data)
        return Path(self.cache_dir) / "splade" / f"{self.folder.name[:32]}-{model_key}" / f"{digest.hexdigest()}.npz"

    def cached(self, texts: list[str]) -> sp.csr_matrix:
        """The chunks' weights: from the cache when it holds them, else encoded and saved."""
        path = self.cache_path(texts)
        if path is not None and path.is_file():
            try:
                with np.load(path, allow_pickle=False) as data:
                    found = sp.csr_matrix((data["data"], data["indices"], data["indptr"]), shape=tuple(data["shape"]))
                if found.shape[0] == len(texts):
                    return found
            except (OSError, ValueError, KeyError):
                pass  # damaged: encoded again below
        chunks = self.encode(texts)
        self.encoded_chunks = len(texts)
        if path is not None:
            def save(tmp: Path) -> None:
                with open(tmp, "wb") as out:
                    np.savez(out, data=chunks.data, indices=chunks.indices, indptr=chunks.indptr,
                             shape=np.asarray(chunks.shape))

            try:
                atomic_write(path, save)
            except (OSError, WriteError):
                pass  # a cache that cannot be written only costs the next run the encoding
        return chunks

    def release(self) -> None:
        super().release()
        self.model = self.tokens = None


@component("retriever", "splade", SpladeConfig)
def build_splade(node, context: Context) -> Splade:
    folder = model_folder(node.model)
    return context.once(
        SpladeConfig, node, lambda: Splade(folder, int(node.batch_size), int(node.max_length), context.cache_dir)
    )
