"""What every encoder shares: the Encoder protocol, unit rows, text keys, and
:func:`embed`, which reads each distinct text from the cache or encodes it once.

Encoders turn texts into L2-normalised float32 rows, so a cosine is one dot product.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from receval.core.errors import RecevalError
from receval.core.progress import Progress, on_terminal

if TYPE_CHECKING:
    from receval.encoders.cache import EmbeddingCache

RECIPE = 1  # bump when the way texts become vectors changes (invalidates every cache)
PROGRESS_MIN = 1000  # on a terminal, draw the line when more texts than this are encoded
CALL_BATCHES = 4  # encoder batches per call (the most a kill loses besides SAVE_SECONDS)
SAVE_BATCHES = 16  # new vectors are saved once this many batches are pending ...
SAVE_SECONDS = 15.0  # ... or this many seconds have passed since the last save


def text_key(text: str) -> bytes:
    """The cache key of a text: the sha256 digest of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).digest()


def normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm, as float32 (all-zero rows stay zero)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)


class Encoder(Protocol):
    identity: dict  # what the vectors depend on (no secrets): the cache folder's key
    label: str  # short readable model name
    api_calls: int  # HTTP requests sent (0 for local models)
    threads: int | None  # batches encoded at once where the encoder sets it itself (onnx), else None

    def encode(self, texts: list[str], on_progress: Callable[[int], None] | None = None) -> np.ndarray:
        """(N, dim) float32 unit rows; ``on_progress(n)`` after each n texts."""
        ...

    def load(self) -> None:
        """Get ready to encode (load a model); a no-op where there is nothing to load."""
        ...


@dataclass
class Embedded:
    vectors: np.ndarray  # (N, dim) float32, one row per input text
    encoded: int  # distinct texts encoded (cache misses)
    cache_hits: int  # distinct texts found in the cache
    # of the cache hits, those whose live latency was measured (an API's), and the seconds
    # they took live: what a replay stands for (receval.clients.calls' provenance)
    replayed_live: int = 0
    replayed_live_s: float = 0.0


def batch_of(encoder: Encoder) -> int:
    """The encoder's batch size (texts per forward pass or request; 64 when it has none)."""
    return max(1, int(getattr(encoder, "batch_size", 64) or 64))


def call_size(encoder: Encoder) -> int:
    """Texts per encoder call in :func:`embed`: ``CALL_BATCHES`` of the encoder's batches."""
    return CALL_BATCHES * batch_of(encoder)


def text_keys(texts: list[str], encoder: Encoder | None = None) -> list[bytes]:
    """Each text's cache key: the encoder's own (``keys``: an API's, by the cached-call
    layer's key function, :func:`receval.clients.calls.call_keys`), else :func:`text_key`."""
    keyed = getattr(encoder, "keys", None)
    return list(keyed(texts)) if callable(keyed) else [text_key(t) for t in texts]


def distinct(texts: list[str], encoder: Encoder | None = None) -> tuple[list[bytes], dict[bytes, int]]:
    """Each text's key (:func:`text_keys`), and the position of each distinct key's first text."""
    keys = text_keys(texts, encoder)
    first: dict[bytes, int] = {}
    for i, key in enumerate(keys):
        first.setdefault(key, i)
    return keys, first


def longest_first(misses: list[bytes], texts: list[str], first: dict[bytes, int]) -> None:
    """Order texts to encode longest first (stable), as the model orders them itself, so
    each encoder call's batches are the model's own: the one order of :func:`embed` and of
    the shards :mod:`receval.encoders.distributed` cuts from it."""
    misses.sort(key=lambda k: -len(texts[first[k]]))


def embed(
    texts: list[str],
    encoder: Encoder,
    cache: EmbeddingCache | None = None,
    progress: bool | None = None,
) -> Embedded:
    """Vectors of ``texts``: each distinct text read from the cache or encoded once.

    New vectors are saved as they are computed: the encoder is called on
    ``CALL_BATCHES`` of its batches at a time, and what it returned is saved as one pack
    once ``SAVE_BATCHES`` batches are pending or ``SAVE_SECONDS`` have passed since the
    last save, at the end, and when encoding stops on an error or Ctrl-C. So a run
    killed mid-encode loses at most the last 15 seconds or the call under way, and the
    next run starts from what was saved; fast encoders still write few packs.
    ``progress``: ``False`` shows nothing; ``None`` shows plain lines off a terminal
    (long work only) and, on a terminal, the redrawn line when more than
    ``PROGRESS_MIN`` texts are encoded.
    """
    keys, first = distinct(texts, encoder)
    live: dict[bytes, float] = {}
    found = cache.get(list(first), live) if cache is not None else {}
    misses = [k for k in first if k not in found]
    longest_first(misses, texts, first)
    if progress is None and len(misses) <= PROGRESS_MIN and on_terminal():
        progress = False
    new: dict[bytes, np.ndarray] = {}
    batch, step = batch_of(encoder), call_size(encoder)
    pending: list[tuple[list[bytes], np.ndarray, np.ndarray]] = []
    saved_at = time.monotonic()

    def save() -> None:
        nonlocal saved_at
        if cache is not None and pending:
            if len({v.shape[1] for _, v, _ in pending}) == 1:
                cache.put([k for group, _, _ in pending for k in group], np.concatenate([v for _, v, _ in pending]),
                          np.concatenate([ms for _, _, ms in pending]))
            else:  # a model that changed its size mid-run: kept apart (and refused below)
                for group, vectors, ms in pending:
                    cache.put(group, vectors, ms)
        pending.clear()
        saved_at = time.monotonic()

    with Progress(f"encoding with {encoder.label}", len(misses), progress, unit="texts") as line:
        try:
            for start in range(0, len(misses), step):
                group = misses[start : start + step]
                vectors = np.asarray(encoder.encode([texts[first[k]] for k in group], line.advance), dtype=np.float32)
                measured = getattr(encoder, "live_ms", None)  # an API's per-text latency of this call
                ms = np.asarray(measured, dtype=np.float64) if measured is not None else np.full(len(group), np.nan)
                new.update(zip(group, vectors))
                pending.append((group, vectors, ms if ms.shape == (len(group),) else np.full(len(group), np.nan)))
                held = sum(len(g) for g, _, _ in pending)
                if held >= SAVE_BATCHES * batch or time.monotonic() - saved_at >= SAVE_SECONDS:
                    save()
        finally:
            save()  # the rest, or what was done before an error or Ctrl-C
    every = {**found, **new}
    dims = {v.shape[0] for v in every.values()}
    if len(dims) > 1:
        where = f" in {cache.folder}" if cache is not None else ""
        raise RecevalError(
            f"embeddings of different sizes {sorted(dims)} for one model{where}: the model behind "
            "this name has changed; delete that cache folder and run again"
        )
    dim = dims.pop() if dims else 0
    out = np.stack([every[key] for key in keys]) if keys else np.empty((0, dim), dtype=np.float32)
    measured = np.asarray([ms for ms in live.values() if ms == ms], dtype=np.float64)  # NaN: not measured
    return Embedded(out, encoded=len(misses), cache_hits=len(found), replayed_live=int(measured.size),
                    replayed_live_s=float(measured.sum()) / 1000.0)

