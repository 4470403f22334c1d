"""Cross-encoder re-ranking: a sentence-transformers ``CrossEncoder`` reads each
(question, chunk) pair together and scores it.

The model comes from a local folder (a model saved with ``CrossEncoder.save`` or
downloaded once by the user); nothing is downloaded at run time. A path that is a
file, a folder without a model's ``config.json``, or one whose files transformers
cannot load (missing or damaged weights, a head of another size) is one ConfigError
naming it (:func:`model_folder`, :meth:`CrossEncoderReranker.load`). ``fit`` loads the
model and scores one warm-up pair, so search latency never includes the load.
Pairs are scored ``batch_size`` at a time, each truncated to ``max_length`` tokens.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from receval.core.secrets import cut
from receval.run.components import Context, component
from receval.core.errors import ConfigError
from receval.rerankers import RerankFields, Rescored, Scorer, pairs_of, placed
from receval.schema import BATCH, TOKENS, range_

HOW_TO_GET = (
    "download a cross-encoder once, e.g. `huggingface-cli download cross-encoder/ms-marco-MiniLM-L-6-v2 "
    "--local-dir models/ms-marco-MiniLM-L-6-v2`, and set rerank.model to that folder "
    "(receval never downloads a model at run time)"
)
INSTALL = (
    "install the dense extra: pip install torch==2.13.0, then pip install 'receval[dense]' "
    "(torch first, so pip takes the CPU build)"
)


MAX_CONFIG = 1 << 20  # bytes: a model's config.json is a few kilobytes


@dataclass
class CrossEncoderConfig(RerankFields):
    kind: str = "cross_encoder"
    model: Optional[str] = None  # a local folder holding a cross-encoder (config.json)
    batch_size: int = field(default=32, metadata=range_(*BATCH))  # pairs scored per forward pass
    # tokens per pair (question + chunk), at most the model's; null: the model's
    max_length: Optional[int] = field(default=512, metadata=range_(*TOKENS, null="the model's limit"))

    def problems(self) -> list[str]:
        problems = RerankFields.problems(self)
        if self.model is None or not str(self.model).strip():
            problems.append(f"model is required: the folder of a cross-encoder; {HOW_TO_GET}")
        return problems

    @staticmethod
    def describe(node) -> str:
        return f"{Path(str(node.model)).name}@{node.first_size}"


def model_folder(name: str) -> Path:
    """The checked folder of ``rerank.model``; a ConfigError saying how to get one otherwise.

    Checked before torch is imported: a folder (not a file) holding a ``config.json``
    that is a JSON object naming its ``model_type``, as every saved transformers
    model's does."""
    path = Path(str(name)).expanduser()
    if path.exists() and not path.is_dir():
        raise ConfigError(f"rerank.model={name!r}: {path.resolve()} is a file, not a model's folder; {HOW_TO_GET}")
    if not path.is_dir():
        raise ConfigError(f"rerank.model={name!r}: no such folder; {HOW_TO_GET}")
    config = path / "config.json"
    if not config.is_file():
        raise ConfigError(
            f"rerank.model={name!r}: {path.resolve()} holds no config.json, so it is not a saved "
            f"cross-encoder; {HOW_TO_GET}"
        )
    try:
        data = json.loads(config.read_bytes()[: MAX_CONFIG + 1]) if config.stat().st_size <= MAX_CONFIG else None
    except (OSError, ValueError, RecursionError):
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("model_type"), str):
        raise ConfigError(
            f"rerank.model={name!r}: {config.resolve()} is not a model's config (a JSON object naming its "
            f"model_type), so the folder is not a saved cross-encoder; {HOW_TO_GET}"
        )
    missing = [m for m in ("sentence_transformers", "torch") if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(f"rerank=cross_encoder needs {', '.join(missing)}, which is not installed: {INSTALL}")
    return path.resolve()


def token_limit(model, wanted: int | None) -> int:
    """``max_length`` capped by what the model can read (its position table and tokenizer):
    a longer pair is truncated rather than failing inside the model."""
    limits = [getattr(model.config, "max_position_embeddings", None), getattr(model.tokenizer, "model_max_length", None)]
    limits = [int(limit) for limit in limits if isinstance(limit, int) and 0 < limit < 1_000_000]
    if wanted is not None:
        limits.append(int(wanted))
    return min(limits) if limits else 512


class CrossEncoderReranker(Scorer):

    def __init__(self, folder: Path, batch_size: int, max_length: int | None):
        self.folder, self.batch_size, self.max_length = folder, batch_size, max_length
        self.model = None
        self.texts: list[str] = []

    def load(self):
        if self.model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            for name in ("sentence_transformers", "transformers"):
                if logging.getLogger(name).level == logging.NOTSET:
                    logging.getLogger(name).setLevel(logging.WARNING)
            from sentence_transformers import CrossEncoder

            try:
                model = CrossEncoder(str(self.folder), device="cpu", local_files_only=True)
            except Exception as error:  # the folder's files, read by transformers: missing or damaged weights...
                first = (str(error).strip().splitlines() or [""])[0]
                raise ConfigError(
                    f"rerank.model={str(self.folder)!r}: not a cross-encoder sentence-transformers can load "
                    f"({type(error).__name__}: {cut(first, 200)}); {HOW_TO_GET}"
                ) from None
            model.max_seq_length = token_limit(model, self.max_length)
            self.model = model
        return self.model

    def fit(self, texts: list[str], tie_rank: np.ndarray) -> None:
        self.texts = list(texts)
        self.load().predict([("warm-up", "warm-up")], batch_size=1, show_progress_bar=False)

    def rescore(self, questions: list[str], idx: np.ndarray) -> Rescored:
        rows, cols, pairs = pairs_of(questions, idx, self.texts)
        if not pairs:
            return Rescored(placed(idx, rows, cols, np.zeros(0)))
        values = self.load().predict(pairs, batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True)
        values = np.asarray(values, dtype=np.float64).reshape(len(pairs), -1)
        if values.shape[1] != 1:
            raise ConfigError(
                f"rerank.model={str(self.folder)!r} gives {values.shape[1]} scores per pair; a re-ranker "
                "needs a cross-encoder with one relevance score (num_labels=1)"
            )
        return Rescored(placed(idx, rows, cols, values[:, 0]))


@component("rerank", "cross_encoder", CrossEncoderConfig)
def build_cross_encoder(node, context: Context) -> CrossEncoderReranker:
    folder = model_folder(node.model)
    return context.once(
        CrossEncoderConfig,
        node,
        lambda: CrossEncoderReranker(folder, int(node.batch_size), node.max_length),
    )
