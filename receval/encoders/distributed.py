"""Corpus encoding spread over Ray workers (``retriever.distributed=ray``).

The run's process lists the distinct texts the embedding cache lacks, orders them as
:func:`receval.encoders.base.embed` would (longest first) and cuts that list into
*shards* whose boundaries fall on embed's call boundaries (``CALL_BATCHES`` batches of
``batch_size``). Each shard goes to a Ray actor (:class:`ShardEncoder`) that loads the
same local model once (the bundled all-MiniLM-L6-v2, a model folder, or its ONNX
copy; offline, nothing is downloaded) and runs :func:`embed` on the shard with the
same cache folder. So every encoder call on a worker holds exactly the texts, in the
same order, that the same call of a single-process encode would hold, and so does
every batch the model runs: the vectors are the same bits on the same kind of CPU
(``tests/test_ray_encoding.py`` checks it). On other CPUs (another instruction set),
float32 kernels may round differently, as they would for a single process there.

The actors write their vectors into the content-addressed cache
(:class:`receval.encoders.cache.EmbeddingCache`, packs written atomically, so writers
at once are safe); nothing but counts travels back. The run's process then checks
every text is in the cache as it sees it (a ``cache_dir`` not shared by the nodes is
refused by name), and its own ``embed`` reads them: it encodes nothing.

Which Ray: the one this process already runs in (a job of ``hydra/launcher=receval_ray``),
else ``address`` (``auto``, ``HOST:PORT``, ``local``), else Ray's own choice (``RAY_ADDRESS``,
the latest ``ray start`` on this machine, else a private local Ray, shut down afterwards).
A head named there is first asked for a TCP connection (:func:`ray_target`): a dead one
named only by Ray's address file (a Ray-launcher sweep leaves it behind) gives a private
local Ray and a warning; one the user named is an error naming it and the fix. Either way
the run ends in bounded time instead of waiting on a head that is gone.
"""

from __future__ import annotations

import math
import os
import socket
import sys
import time
import warnings
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from receval.core.errors import ConfigError, RecevalError
from receval.core.progress import Progress, warn
from receval.encoders.base import Encoder, call_size, distinct, embed, longest_first
from receval.encoders.cache import EmbeddingCache
from receval.encoders.local import BUNDLED, LocalEncoder
from receval.encoders.onnx_runtime import OnnxEncoder

INSTALL = "pip install 'receval[ray]'"


@dataclass
class RayEncoded:
    """What :func:`encode_on_ray` did."""

    texts: int  # distinct texts the cache lacked, each encoded on a worker
    shards: int
    workers: int  # actors that started
    hosts: list[str]  # where they ran
    seconds: float


def require_ray() -> None:
    """A ``ConfigError`` naming the extra when Ray is not installed."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise ConfigError(f"distributed=ray needs Ray, which is not installed: {INSTALL}")


def shard_plan(texts: list[str], first: dict[bytes, int], held, step: int, shard_size: int) -> list[list[int]]:
    """Positions in ``texts`` of each shard's texts. ``first``: each distinct text's key and
    first position (:func:`distinct`); ``held``: whether the cache holds each of them.
    The texts not held, longest first as :func:`embed` orders them, cut every
    ``shard_size`` texts rounded up to a multiple of ``step`` (texts per encoder call),
    so no shard splits one of embed's calls."""
    misses = [k for k, there in zip(first, held) if not there]
    longest_first(misses, texts, first)
    size = max(1, math.ceil(shard_size / step)) * step
    return [[first[k] for k in misses[i : i + size]] for i in range(0, len(misses), size)]


def worker_spec(encoder: Encoder, cache: EmbeddingCache, worker_cpus: int) -> dict:
    """What a worker needs to build the same encoder and cache (plain data, for pickling)."""
    if not isinstance(encoder, (LocalEncoder, OnnxEncoder)):
        raise ConfigError(
            "distributed=ray encodes with a local model (backend=local or backend=onnx); "
            "an embeddings API is served elsewhere already: drop distributed=ray"
        )
    info = encoder.model_info
    spec = {
        "backend": "onnx" if isinstance(encoder, OnnxEncoder) else "local",
        "model": BUNDLED if info.bundled else str(info.path),  # a folder: resolved, absolute
        "batch_size": encoder.batch_size,
        "identity": encoder.identity,
        "label": encoder.label,
        "cache_dir": str(cache.folder.resolve().parent.parent),  # <cache_dir>/embeddings/<model>
        "folder": str(cache.folder.resolve()),
        "threads": int(worker_cpus),
    }
    if isinstance(encoder, OnnxEncoder):
        spec["onnx_dir"] = str(encoder.folder.resolve().parent.parent)  # <cache_dir>/onnx/<model>
    return spec


class ShardEncoder:
    """One Ray actor: builds the encoder of ``spec`` on first use (one model load per
    actor), checks it is the driver's model, and encodes shards into the shared cache."""

    def __init__(self, spec: dict):
        self.spec = spec
        self.host = socket.gethostname()
        self.encoder: Encoder | None = None
        self.cache: EmbeddingCache | None = None

    def where(self) -> str:
        return self.host

    def _open(self) -> None:
        spec = self.spec
        if spec["backend"] == "onnx":
            encoder: Encoder = OnnxEncoder(spec["model"], spec["onnx_dir"], spec["batch_size"], threads=spec["threads"])
        else:
            encoder = LocalEncoder(spec["model"], batch_size=spec["batch_size"])
        if encoder.identity != spec["identity"]:
            ours, theirs = spec["identity"], encoder.identity
            differ = "; ".join(
                f"{k}: {theirs.get(k)!r} there, {ours.get(k)!r} here"
                for k in sorted({*ours, *theirs}) if ours.get(k) != theirs.get(k)
            )
            raise RecevalError(
                f"the Ray worker on {self.host} has another {spec['label']} than the run's process ({differ}): "
                "install the same model (and receval) on every node, or keep the model folder on shared storage"
            )
        encoder.load()
        if spec["backend"] == "local":  # one torch thread per CPU Ray gave this actor
            import torch

            torch.set_num_threads(spec["threads"])
        cache = EmbeddingCache(spec["cache_dir"], encoder.identity, encoder.label)
        if str(cache.folder) != spec["folder"]:  # the same identity and cache_dir make the same folder
            raise RecevalError(f"the Ray worker on {self.host} would cache in {cache.folder}, not {spec['folder']}")
        self.encoder, self.cache = encoder, cache

    def encode(self, texts: list[str]) -> tuple[int, int]:
        """Encode a shard into the cache; (texts encoded, texts found cached meanwhile)."""
        if self.encoder is None:
            self._open()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = embed(texts, self.encoder, self.cache, progress=False)
        if not self.cache.writable:
            said = "; ".join(str(w.message) for w in caught) or "not writable"
            raise RecevalError(
                f"the Ray worker on {self.host} cannot save vectors in {self.cache.folder} ({said}): "
                "cache_dir must be writable by every node"
            )
        return result.encoded, result.cache_hits


PROBE_SECONDS = 3.0  # how long a Ray head's port may take to accept a connection


def address_file() -> Path:
    """Where Ray keeps the address of the latest ``ray start`` on this machine (its temp
    folder: ``RAY_TMPDIR``, else ``TMPDIR`` on Linux, else /tmp, then ``ray/ray_current_cluster``)."""
    base = os.environ.get("RAY_TMPDIR") or (os.environ.get("TMPDIR") if sys.platform.startswith("linux") else None)
    return Path(base or "/tmp") / "ray" / "ray_current_cluster"


def answers(target: str, seconds: float = PROBE_SECONDS) -> bool:
    """A TCP connection to ``HOST:PORT`` opens within ``seconds`` (a Ray head listens there)."""
    host, _, port = target.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=seconds):
            return True
    except (OSError, ValueError):
        return False


def ray_target(address: str | None) -> tuple[str | None, str | None]:
    """What to pass to ``ray.init`` and a warning to print, after checking that a Ray head
    named by ``ray.address``, ``RAY_ADDRESS`` or Ray's address file answers, so a dead one
    never makes ``ray.init`` wait forever. A dead head in the address file alone (a
    ``hydra/launcher=ray`` sweep leaves one) gives a private local Ray and a warning; a
    dead one the user named is an error naming it and the fix."""
    env = os.environ.get("RAY_ADDRESS", "").strip()
    if address and address != "auto":
        target, source, fix = address, f"ray.address={address}", "point ray.address at a live head"
    elif env:
        target, source, fix = env, f"RAY_ADDRESS={env}", "unset RAY_ADDRESS or point it at a live head"
    else:
        path = address_file()
        try:
            target = path.read_text(encoding="utf-8").strip() if path.is_file() else ""
        except OSError:
            target = ""
        if not target:
            return address, None  # "auto" with nothing to find: Ray says so at once; None: a local Ray
        source = f"Ray's address file {path}"
        fix = f"run `ray stop` or delete {path}, or start a head there (ray start --head)"
        if address is None and ":" in target and not answers(target):
            return "local", (f"distributed=ray: no Ray answers at {target} (named by {source}, left by a Ray that "
                             f"has stopped); encoding on a private local Ray instead ({fix} to silence this)")
    if target == "local" or target.startswith("ray://") or ":" not in target or answers(target):
        return target, None
    raise RecevalError(f"distributed=ray: no Ray answers at {target} (named by {source}) within "
                       f"{PROBE_SECONDS:g} s; {fix}, or set ray.address=local for a private Ray on this machine")


def connect(address: str | None):
    """(the ray module, True when this call started or joined Ray and should shut it down).
    Ctrl-C while Ray starts stops it and passes on (the run exits 130)."""
    require_ray()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import logging

    import ray

    if ray.is_initialized():  # a job running on Ray: use that Ray
        return ray, False
    target, note = ray_target(address)
    if note:
        warn(note)
    try:
        ray.init(
            address=target or None, include_dashboard=False, log_to_driver=False,
            logging_level=logging.WARNING, configure_logging=True,
        )
    except KeyboardInterrupt:
        ray.shutdown()
        raise
    except (ConnectionError, ValueError, RuntimeError) as error:
        where = f"ray.address={address}" if address else "Ray (RAY_ADDRESS, or a new local Ray)"
        raise RecevalError(f"distributed=ray cannot reach {where}: {str(error).splitlines()[0]}") from None
    return ray, True


def _unwrap(ray, error: Exception) -> RecevalError:
    """A worker's own ``RecevalError`` as it was raised, anything else as one line."""
    cause = getattr(error, "cause", None)
    if isinstance(cause, RecevalError):
        return cause
    if isinstance(error, ray.exceptions.RayActorError):
        return RecevalError(f"a Ray worker died while encoding ({str(error).splitlines()[0]})")
    last = [line for line in str(cause or error).splitlines() if line.strip()]
    return RecevalError(f"a Ray worker failed while encoding: {last[-1] if last else type(error).__name__}")


def encode_on_ray(
    texts: list[str],
    encoder: Encoder,
    cache: EmbeddingCache,
    *,
    address: str | None = None,
    workers: int = 2,
    worker_cpus: int = 1,
    shard_size: int = 4096,
    start_timeout: float = 120.0,
    progress: bool | None = None,
) -> RayEncoded:
    """Encode the texts ``cache`` lacks on ``workers`` Ray actors, into ``cache``.

    Nothing is started when every text is cached. Shards go to whichever actor is free;
    an actor that cannot start (no free CPU) is left out, and when none has started
    within ``start_timeout`` seconds the run stops with a message naming the CPUs asked
    for. Raises ``RecevalError`` when a worker fails (its own message when it is a
    receval one: another model on that node, an unwritable cache) or when, afterwards,
    the cache as this process sees it still lacks texts (``cache_dir`` not shared).
    """
    started = time.monotonic()
    keys, first = distinct(texts, encoder)
    plan = shard_plan(texts, first, cache.holds(list(first)), call_size(encoder), shard_size)
    if not plan:
        return RayEncoded(0, 0, 0, [], 0.0)
    spec = worker_spec(encoder, cache, worker_cpus)
    total = sum(len(s) for s in plan)
    ray, owned = connect(address)
    actors = []
    try:
        actor_class = ray.remote(num_cpus=worker_cpus, max_restarts=0)(ShardEncoder)
        actors = [actor_class.remote(spec) for _ in range(min(workers, len(plan)))]
        with Progress(f"encoding with {encoder.label} on Ray ({len(actors)} workers)", total, progress, unit="texts") as line:
            hosts, failed = _dispatch(ray, actors, texts, plan, line, deadline=started + start_timeout,
                                      start_timeout=start_timeout, worker_cpus=worker_cpus)
        if failed:
            warn(f"{len(failed)} of {len(actors)} Ray workers could not start and were left out: {failed[0]}")
    finally:
        for actor in actors:
            ray.kill(actor)
        if owned:
            ray.shutdown()
    lacking = int((~cache.holds([keys[i] for shard in plan for i in shard])).sum())
    if lacking:
        raise RecevalError(
            f"{lacking} of the {total} texts the Ray workers encoded are not in {cache.folder.resolve()} as this "
            "process sees it: cache_dir must be an absolute path on a filesystem every node mounts at that path"
        )
    return RayEncoded(total, len(plan), len(hosts), sorted(set(hosts.values())), time.monotonic() - started)


def _dispatch(ray, actors: list, texts: list[str], plan: list[list[int]], line: Progress, *, deadline: float,
              start_timeout: float, worker_cpus: int) -> tuple[dict[int, str], list[str]]:
    """Hand the shards to whichever actor is free until every shard is encoded: (actor
    position -> host of the actors that started, why the others could not start)."""
    starting = {actor.where.remote(): n for n, actor in enumerate(actors)}
    running: dict = {}  # ref -> (actor position, shard position)
    hosts: dict[int, str] = {}  # actor position -> host, once started
    todo = deque(range(len(plan)))
    failed: list[str] = []
    while todo or running:
        if not starting and not running:
            raise RecevalError(f"no Ray worker could start: {'; '.join(failed)}")
        timeout = None if hosts else max(0.0, deadline - time.monotonic())
        done, _ = ray.wait([*starting, *running], num_returns=1, timeout=timeout)
        if not done:
            free = ray.available_resources().get("CPU", 0)
            raise RecevalError(
                f"no Ray worker started within {start_timeout:g} s: each asks for {worker_cpus} CPU "
                f"and the cluster has {free:g} free; lower ray.worker_cpus, free CPUs, or raise ray.start_timeout"
            )
        ref = done[0]
        if ref in starting:
            n = starting.pop(ref)
            try:
                hosts[n] = ray.get(ref)
            except ray.exceptions.RayError as error:  # an actor that could not be created
                failed.append(str(_unwrap(ray, error)))
                continue
        else:
            n, shard = running.pop(ref)
            try:
                ray.get(ref)
            except ray.exceptions.RayError as error:
                raise _unwrap(ray, error) from None
            line.advance(len(plan[shard]))
        if todo:
            shard = todo.popleft()
            running[actors[n].encode.remote([texts[i] for i in plan[shard]])] = (n, shard)
    return hosts, failed

