"""The bootstrap settings: saved with every run (the ``bootstrap`` config group) and read
back by every report, so both sides import them from here. And the endpoint settings
every remote component's schema extends (:class:`EndpointFields`, :class:`ApiRoot`,
:class:`ApiFields`): one name and one range per setting.

The Hydra schema of the group is :class:`BootstrapConfig` itself (registered by
:mod:`receval.run.config`); the read side checks saved or given values against the same
ranges (:mod:`receval.analysis.settings`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Optional

from receval.core.ranges import RETRIES, SECONDS, SEED, WAIT, range_


class BootstrapMethod(StrEnum):
    percentile = "percentile"
    bca = "bca"


# All resampled means are held (8 bytes each per measure); beyond this an interval no
# longer changes in its printed digits, while memory runs out.
MAX_RESAMPLES = 1_000_000


@dataclass
class BootstrapConfig:
    """How intervals are computed (saved with a run, so its report repeats them): the one
    type of the bootstrap settings, read back by :mod:`receval.analysis.settings`."""

    n_resamples: int = field(default=2000, metadata=range_(1, MAX_RESAMPLES, hint="every resample is held in memory"))
    level: float = field(default=0.95, metadata=range_(0, 1, low_open=True, high_open=True))
    seed: int = field(default=0, metadata=range_(*SEED))
    method: BootstrapMethod = BootstrapMethod.percentile

    def kwargs(self) -> dict:
        """As keyword arguments of :mod:`receval.stats.bootstrap` (and as JSON shows them)."""
        return {"n_resamples": self.n_resamples, "level": self.level, "seed": self.seed, "method": str(self.method)}


@dataclass
class EndpointFields:
    """How a remote component calls its endpoint (through :mod:`receval.clients.http`): the
    fields of every remote component's schema (the http retriever, the http and llm
    re-rankers, the LLM transforms, synth, the llm judge), one name each; a schema
    changes a default by declaring the field again."""

    timeout: float = field(default=60.0, metadata=range_(*SECONDS))  # seconds per request
    # per request: 408/409/425/429/5xx, timeouts, dropped connections, malformed replies
    retries: int = field(default=4, metadata=range_(*RETRIES))
    backoff: float = field(default=1.0, metadata=range_(*WAIT))  # first retry delay in seconds, doubled each time
    max_backoff: float = field(default=30.0, metadata=range_(*WAIT))  # cap on one delay (Retry-After included)


@dataclass
class ApiRoot:
    """An API root and the NAME of the environment variable holding its key (the key
    itself is never in a config, :mod:`receval.core.secrets`), as every remote
    component's schema names them (the dense encoders' ``backend=http`` too, by the same
    names in :class:`receval.retrievers.dense.EncoderChoice`, whose model comes first)."""

    base_url: Optional[str] = None  # the API root, e.g. http://localhost:11434/v1
    api_key_env: Optional[str] = None  # NAME of the environment variable holding the key; null: none


@dataclass
class ApiFields(EndpointFields, ApiRoot):
    """A remote component's endpoint: :class:`ApiRoot`, then :class:`EndpointFields`."""


def retries_of(node, where: str) -> int:
    """``node.retries``; a config that still says ``max_retries`` (its old name in synth and
    the llm judge) is read as it, with a one-line notice."""
    from receval.core.progress import warn  # rich: only when there is something to say

    old = getattr(node, "max_retries", None)
    if old is None:
        return int(node.retries)
    warn(f"{where}.max_retries is deprecated: it is read as {where}.retries={old}; write {where}.retries")
    return int(old)
