"""Cached sentence embeddings (texts keyed by sha256) for dense retrieval.

The cache lives under ``<cache_dir>/embeddings/``, one folder per model identity:

- **Model identity**: what the vectors depend on (see :mod:`receval.encoders.local`
  and :mod:`receval.encoders.http`), plus ``RECIPE``, bumped whenever receval changes
  how it encodes. Folder name: ``<readable name>-<first 16 hex of sha256(identity)>``,
  with the identity written beside the vectors as ``model.json``.
- **Texts** are keyed by the sha256 of their UTF-8 bytes (local models), or for an
  embeddings API by the cached-call layer's key (:func:`receval.clients.calls.call_keys`:
  endpoint, model, request fields, the text's hash), the encoder's ``keys``.
- **Storage**: append-only *pack files* ``pack-*.emb``, each holding the vectors of one
  batch of newly encoded texts (header, 32-byte keys, each text's live latency in ms as
  float32, NaN when not measured, e.g. a local model; float32 vectors; and a sha256
  checksum of the payload). Packs of format 1, without latencies, are still read. One
  file per text would mean millions of files on a large corpus; shards rewritten in
  place would need locks. A pack is written to a temporary name and renamed into
  place (``os.replace``), so readers only ever see complete packs and two jobs writing
  at once simply add two packs (a text encoded by both is stored twice, harmlessly).
  When a folder holds more than ``max_packs`` packs, the writer merges its smallest
  packs into one and then deletes the merged ones; a reader that finds a pack gone
  lists the folder again.
- **Damage**: a pack whose header, size or checksum is wrong (a truncated copy, a
  disk error, an edit), whose vectors are not all finite or whose latencies are not NaN
  or >= 0, is reported, deleted, and its texts are encoded again. The header is read
  first and the file's size checked against it before the rest is read, so a pack
  edited to a large size costs a ``stat``, not a read. The checksum ties each vector to
  its key (both are in the payload it covers). A cache that
  cannot be written (read-only disk) is reported once and the run goes on without it.

Why packs and not :class:`receval.chunking.cache.IndexCache` (one content-addressed file per
whole entry, as chunk sets are): vectors are reused *per text*, across entries. Every
job of a sweep encodes the same questions; chunk sets of different ``max_words``
share their short sections' texts (measured on the built-in library: 72 of the 99
chunks at 120 words are also chunks at 80 words, 84 of the 94 at 200 words are chunks
at 120); an interrupted encode keeps each saved group. A whole-entry key would
re-encode all of these, and encoding is the cost that matters (a chunk set loads in
milliseconds, encoding it takes minutes on a large corpus).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import struct
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from receval.core.progress import warn
from receval.core.io import atomic_write

_MAGIC_V1 = b"RCVEMB\x00\x01"  # keys, vectors
_MAGIC = b"RCVEMB\x00\x02"  # keys, live latencies (ms), vectors
_HEADER = struct.Struct("<8sIQ32s")  # magic, dim, n, sha256(payload)
_KEY = 32
MAX_DIM = 1 << 16  # dimensions of a vector a pack may state (models use 384 to 4096)


def _pack_size(magic: bytes, n: int, dim: int) -> int | None:
    """Bytes of a pack of ``n`` vectors of ``dim``; None for an unknown format."""
    if magic == _MAGIC:
        return _HEADER.size + n * (_KEY + 4 + dim * 4)
    if magic == _MAGIC_V1:
        return _HEADER.size + n * (_KEY + dim * 4)
    return None


class CorruptPack(Exception):
    pass


def _slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip("-.")[:48] or "model"


class EmbeddingCache:
    """Vectors of one model, keyed per text (see the module docstring)."""

    def __init__(self, cache_dir: str | Path, identity: dict, label: str = "model", max_packs: int = 32):
        blob = json.dumps(identity, sort_keys=True, separators=(",", ":"))
        self.identity = identity
        self.folder = Path(cache_dir) / "embeddings" / f"{_slug(label)}-{hashlib.sha256(blob.encode()).hexdigest()[:16]}"
        self.max_packs = max_packs
        self.writable = True

    def __repr__(self) -> str:
        return f"EmbeddingCache({str(self.folder)!r})"

    # ---- reading

    def packs(self) -> list[Path]:
        try:
            return sorted(self.folder.glob("pack-*.emb"))
        except OSError:
            return []

    @staticmethod
    def read_pack(path: Path) -> tuple[list[bytes], np.ndarray, np.ndarray]:
        """Keys, (n, dim) vectors and (n,) live latencies in ms (NaN: not measured, or a
        format-1 pack) of one pack; ``CorruptPack`` if damaged or edited. The header is read
        first and the file's size must be the one it states (at most :data:`MAX_DIM` a
        vector) before the rest is read; then the checksum, and every vector finite and every
        latency NaN or a number >= 0."""
        with open(path, "rb") as handle:
            head = handle.read(_HEADER.size)
            if len(head) < _HEADER.size:
                raise CorruptPack(f"{len(head)} bytes, shorter than the header")
            magic, dim, n, digest = _HEADER.unpack(head)
            size = _pack_size(magic, n, dim)
            if size is None:
                raise CorruptPack("not a receval embeddings pack (bad magic bytes)")
            if not 0 < dim <= MAX_DIM:
                raise CorruptPack(f"vectors of {dim} dimensions (at most {MAX_DIM})")
            found = os.fstat(handle.fileno()).st_size
            if found != size:  # measured before the payload is read: an edited size costs nothing
                raise CorruptPack(f"{found} bytes where {n} vectors of {dim} need {size} (truncated or edited?)")
            data = head + handle.read(size - _HEADER.size)
        payload = memoryview(data)[_HEADER.size :]
        if len(data) != size or hashlib.sha256(payload).digest() != digest:
            raise CorruptPack("checksum mismatch")
        keys = [bytes(payload[i * _KEY : (i + 1) * _KEY]) for i in range(n)]
        start = _HEADER.size + n * _KEY
        if magic == _MAGIC:
            live = np.frombuffer(data, dtype="<f4", count=n, offset=start).astype(np.float64)
            start += n * 4
        else:
            live = np.full(n, np.nan)
        vectors = np.frombuffer(data, dtype="<f4", count=n * dim, offset=start)
        if not np.isfinite(vectors).all():
            raise CorruptPack("a vector holds NaN or infinity")
        if not (np.isnan(live) | (np.isfinite(live) & (live >= 0))).all():
            raise CorruptPack("a live latency is negative or infinite")
        return keys, vectors.reshape(n, dim), live

    def _readable(self, path: Path) -> tuple[list[bytes], np.ndarray, np.ndarray] | None:
        """A pack's contents; ``None`` if it is gone (merged) or was damaged (then removed)."""
        try:
            return self.read_pack(path)
        except FileNotFoundError:
            return None
        except CorruptPack as problem:
            warn(f"embedding cache file {path} is damaged ({problem}); removed, its texts will be encoded again")
            path.unlink(missing_ok=True)
            return None
        except OSError as error:
            warn(f"embedding cache file {path} cannot be read ({error}); its texts will be encoded again")
            return None

    def get(self, keys: Sequence[bytes], live: dict[bytes, float] | None = None) -> dict[bytes, np.ndarray]:
        """The cached vector of each key found (float32 rows); into ``live``, when given,
        each found key's live latency in ms (NaN when not measured)."""
        wanted = set(keys)
        found: dict[bytes, np.ndarray] = {}
        seen: set[Path] = set()
        for _ in range(3):  # a pack merged away while we read: list again
            missing_pack = False
            for path in self.packs():
                if path in seen or len(found) == len(wanted):
                    continue
                seen.add(path)
                contents = self._readable(path)
                if contents is None:
                    missing_pack = missing_pack or not path.exists()
                    continue
                pack_keys, vectors, pack_live = contents
                rows = [i for i, k in enumerate(pack_keys) if k in wanted and k not in found]
                if rows:
                    picked = np.array(vectors[rows], dtype=np.float32)
                    for i, row in zip(rows, picked):
                        found[pack_keys[i]] = row
                    if live is not None:
                        live.update(zip((pack_keys[i] for i in rows), pack_live[rows].tolist()))
            if not missing_pack:
                break
        return found

    def holds(self, keys: Sequence[bytes]) -> np.ndarray:
        """Whether each key is in a pack, as a boolean array, reading only each pack's header
        and key block (32 bytes a text, not its vector): what a driver needs to know before
        it hands texts to other processes, at 1/(1 + dim / 8) of reading the packs. Packs are
        not checksummed here; :meth:`get` checks each one it reads, and a damaged pack's
        texts are encoded again then."""
        blocks = []
        seen: set[Path] = set()
        for _ in range(3):  # a pack merged away while we read: list again (the merged pack is new)
            gone = False
            for path in self.packs():
                if path in seen:
                    continue
                seen.add(path)
                try:
                    with open(path, "rb") as handle:
                        head = handle.read(_HEADER.size)
                        if len(head) < _HEADER.size:
                            continue
                        magic, dim, n, _ = _HEADER.unpack(head)
                        size = _pack_size(magic, n, dim)
                        if size is None or os.fstat(handle.fileno()).st_size != size:
                            continue
                        blocks.append(np.frombuffer(handle.read(n * _KEY), dtype=f"S{_KEY}"))
                except FileNotFoundError:
                    gone = True
                except OSError:  # unreadable: its texts count as missing
                    continue
            if not gone:
                break
        if not len(keys) or not blocks:
            return np.zeros(len(keys), dtype=bool)
        wanted = np.frombuffer(b"".join(keys), dtype=f"S{_KEY}")
        return np.isin(wanted, np.concatenate(blocks))

    # ---- writing

    def put(self, keys: Sequence[bytes], vectors: np.ndarray, live_ms: Sequence[float] | None = None) -> None:
        """Add vectors (and each text's live latency in ms, NaN or None when not measured)
        as a new pack (atomically); merge packs when there are too many."""
        if not len(keys) or not self.writable:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            about = self.folder / "model.json"
            if not about.exists():
                text = json.dumps(self.identity, indent=2, sort_keys=True) + "\n"
                atomic_write(about, lambda tmp: tmp.write_text(text, encoding="utf-8"))
            self._write_pack(list(keys), vectors, live_ms)
            if len(self.packs()) > self.max_packs:
                self.compact()
        except OSError as error:
            self.writable = False
            warn(f"embeddings cannot be saved in {self.folder} ({error}); going on without the cache")

    def _write_pack(self, keys: list[bytes], vectors: np.ndarray, live_ms: Sequence[float] | None = None) -> Path:
        vectors = np.ascontiguousarray(vectors, dtype="<f4")
        n, dim = vectors.shape
        if len(keys) != n or any(len(k) != _KEY for k in keys):
            raise ValueError("one 32-byte key per vector")
        live = np.full(n, np.nan, dtype="<f4") if live_ms is None else np.asarray(live_ms, dtype="<f4")
        if live.shape != (n,):
            raise ValueError("one live latency per vector")
        payload = b"".join(keys) + live.tobytes() + vectors.tobytes()
        header = _HEADER.pack(_MAGIC, dim, n, hashlib.sha256(payload).digest())
        name = f"pack-{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(4)}.emb"
        target = self.folder / name

        def write(tmp: Path) -> None:
            with open(tmp, "wb") as handle:
                handle.write(header)
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())

        atomic_write(target, write)
        return target

    def compact(self) -> None:
        """Merge the smaller packs into one, then delete the merged ones.

        Size-tiered: the smallest packs are merged until about ``max_packs / 2``
        remain, so a large pack is not rewritten every time a few texts are added.
        Safe beside other writers: packs added meanwhile are not touched, and two
        jobs merging at once leave two merged packs (duplicates are harmless).
        """
        sizes = {}
        for path in self.packs():
            try:
                sizes[path] = path.stat().st_size
            except FileNotFoundError:
                continue
        smallest = sorted(sizes, key=lambda p: (sizes[p], p.name))
        take = smallest[: max(2, len(smallest) - self.max_packs // 2)]
        merged_from: list[Path] = []
        keys: list[bytes] = []
        parts: dict[int, list[np.ndarray]] = {}
        lives: list[np.ndarray] = []
        index: set[bytes] = set()
        for path in take:
            contents = self._readable(path)
            if contents is None:
                continue
            merged_from.append(path)
            pack_keys, vectors, pack_live = contents
            rows = [i for i, k in enumerate(pack_keys) if k not in index]
            index.update(pack_keys)
            if rows:
                keys.extend(pack_keys[i] for i in rows)
                parts.setdefault(vectors.shape[1], []).append(vectors[rows])
                lives.append(pack_live[rows])
        if len(parts) != 1 or len(merged_from) < 2:
            return  # nothing to merge, or vectors of several sizes: leave them be
        self._write_pack(keys, np.concatenate(next(iter(parts.values()))), np.concatenate(lives))
        for path in merged_from:
            path.unlink(missing_ok=True)

