"""The run spec: a composed run config validated once, then frozen.

Hydra composes a run's config; :func:`run_spec` turns it into one :class:`RunSpec`, in
one place, checking everything a run needs before any data is read or any file is
written:

- keys and ranges (:func:`receval.run.config.check`: every key known, every number in its
  range, each component's own rules, the values that must agree);
- secrets (:func:`receval.core.trust.config_problems`: a key-like value anywhere, a
  value under a credential's name, a URL carrying a key, a key where a variable NAME
  belongs), never echoing the value;
- the stages: built once, light (models load in fit), so ``cost.<stage>`` must name
  one of them.

Everything after reads the spec: its ``config`` is read-only, the stages are built
from it without checking again (:class:`receval.run.components.Context` ``checked``), and
its identity hash and saved form are computed here once. A single run's callback
(:class:`receval.cli.preflight.ConfigCheck`), receval's sweeper and the run itself ask
for the spec of the same config; the first asks builds it, the others get the same
object (:data:`_SPECS`, keyed by the config as written and as resolved), so one run is
validated exactly once per process.
"""

from __future__ import annotations

import copy
import json
from collections import OrderedDict
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from omegaconf import DictConfig, OmegaConf, open_dict

from receval.core.errors import ConfigError

_KEEP = 512  # specs remembered (a sweep's jobs are checked before the first runs)
_SPECS: OrderedDict[str, "RunSpec"] = OrderedDict()


@dataclass(frozen=True)
class RunSpec:
    """One run's validated settings. ``config`` is read-only (a write raises);
    ``written`` is the config with every interpolation as written (what run.json saves,
    so a ``${oc.env:NAME}`` secret is never stored); ``resolved`` what the identity
    hash is of; ``prices`` the checked ``cost`` per stage."""

    config: DictConfig
    written: Mapping[str, Any]
    resolved: Mapping[str, Any]
    config_hash: str
    stage_names: tuple[str, ...]
    prices: Mapping[str, Mapping[str, float]]


def plain(cfg, resolve: bool) -> dict:
    """``cfg`` as plain data, Hydra's node left out; an interpolation that cannot be
    resolved is a ConfigError naming its key."""
    try:
        data = OmegaConf.to_container(cfg, resolve=resolve, enum_to_str=True)
    except Exception as error:  # noqa: BLE001 - OmegaConf's resolution errors name the key
        where = getattr(error, "full_key", None) or "the config"
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ConfigError(f"{where}: {reason}: fix the value or set what it refers to") from None
    data.pop("hydra", None)
    return data


def _frozen(data):
    if isinstance(data, dict):
        return MappingProxyType({k: _frozen(v) for k, v in data.items()})
    if isinstance(data, list):
        return tuple(_frozen(v) for v in data)
    return data


def thawed(data):
    """A spec's frozen mapping as plain, writable data (for JSON and labels)."""
    if isinstance(data, Mapping):
        return {k: thawed(v) for k, v in data.items()}
    if isinstance(data, tuple):
        return [thawed(v) for v in data]
    return data


def run_spec(cfg) -> RunSpec:
    """The validated spec of a composed run config (a ``RunSpec`` is returned as is); a
    ConfigError naming every problem at once, else the spec. Built once per config:
    asking again for an equal config returns the same spec without checking again."""
    if isinstance(cfg, RunSpec):
        return cfg
    written = plain(cfg, resolve=False)
    resolved = plain(cfg, resolve=True)
    key = json.dumps([written, resolved], sort_keys=True, default=str)
    found = _SPECS.get(key)
    if found is not None:
        _SPECS.move_to_end(key)
        return found
    spec = validate(cfg, written, resolved)
    _SPECS[key] = spec
    while len(_SPECS) > _KEEP:
        _SPECS.popitem(last=False)
    return spec


def validate(cfg, written: dict, resolved: dict) -> RunSpec:
    """Every check of a run's config, once (see the module doc); the spec it yields."""
    from receval.run import config as config_schema
    from receval import retrievers
    from receval.run import stages
    from receval.core import trust
    from receval.measures import cost, tokens
    from receval.results.identity import identity_hash
    from receval.retrievers.text import Tokenizer

    secrets = trust.config_problems(written)  # before anything else: never echoed, nothing written
    if secrets:
        raise ConfigError(secrets)
    config_schema.check(cfg)  # keys, ranges, each component's own rules
    frozen = copy.deepcopy(cfg)
    if "hydra" in frozen:
        with open_dict(frozen):
            frozen.pop("hydra")
    OmegaConf.set_readonly(frozen, True)
    tokenizer = Tokenizer.of(frozen.tokenizer)
    built = stages.build(frozen, retrievers.Context(cache_dir=frozen.cache_dir, tokenizer=tokenizer, checked=True))
    names = tuple(cost.stage_names(built))
    prices = cost.prices_of(frozen.get("cost"), list(names))
    return RunSpec(
        config=frozen,
        written=_frozen(written),
        resolved=_frozen(resolved),
        config_hash=identity_hash(resolved, tokens.contents(frozen.metrics.get("tokenizer"))),
        stage_names=names,
        prices=_frozen(prices),
    )
