"""A run's saved config and facts read back, and how configs differ.

- :func:`runnable_config`: a run's saved config (read through
  :func:`receval.results.door.open_run`) checked by :mod:`receval.core.trust` (no interpolation
  left, network and code use refused unless allowed): what ``reproduce`` re-runs and
  ``select --out`` writes, the one path from a stored config to something runnable.
- :func:`saved_config`: that merged onto receval's schema, to re-run it.
- :func:`differing_params`: the flattened keys whose values differ between runs
  (``retriever.kind``, ``chunking.max_words``), shown by :func:`short_names`
  (``retriever``, ``max_words``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from omegaconf import OmegaConf

from receval import config as config_schema
from receval.core import trust
from receval.core.errors import ConfigError, RunError
from receval.results.door import contained, open_run, read_config_yaml
from receval.results.identity import is_result_key
from receval.results.format import CONFIG_PATH, HYDRA_DIR, RUN_JSON
from receval.results.record import UNUSED_COLUMNS, flatten

CONFIG_YAML = "config.yaml"
OVERRIDES_YAML = "overrides.yaml"


def format_value(value: Any) -> str:
    """A config value as people type it: null, true, 120, [1, 3]."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return str(value)


_DEFAULTS: dict[str, Any] | None = None


def schema_defaults() -> dict[str, Any]:
    """Flattened defaults of receval's config schema (``???`` for required values)."""
    global _DEFAULTS
    if _DEFAULTS is None:
        schema = OmegaConf.structured(config_schema.RecevalConfig)
        _DEFAULTS = flatten(OmegaConf.to_container(schema, resolve=False))
    return dict(_DEFAULTS)


def _override_key(override: str) -> str:
    key = override.split("=", 1)[0].lstrip("+~")
    return key.split("@", 1)[0]


def differing_params(flats: list[dict[str, Any]], overrides: list[list[str]] | None = None) -> list[str]:
    """Dotted keys whose values differ between the runs, settings that do not change
    results (:data:`receval.results.identity.NON_RESULT_KEYS`) left out.

    Ordered as the command line named them (``retriever=bm25,tfidf
    chunking.max_words=20,40`` -> retriever first), then in config order.
    """
    keys: list[str] = []
    for flat in flats:
        keys.extend(k for k in flat if k not in keys)
    # a key only some runs have (k1 of bm25 beside tfidf) applies to those alone: it
    # differs when they hold different values, not because the others lack it
    differ = [
        k for k in keys
        if is_result_key(k) and len({repr(flat[k]) for flat in flats if k in flat}) > 1
    ]
    return ordered_as_named(differ, overrides)


def ordered_as_named(keys: list[str], overrides: list[list[str]] | None) -> list[str]:
    """``keys`` in the order the command line named them (``retriever=bm25,tfidf
    chunking.max_words=20,40``: retriever first), then as given."""
    named: list[str] = []
    for run_overrides in overrides or []:
        for override in run_overrides or []:
            key = _override_key(str(override))
            if key not in named:
                named.append(key)

    def rank(key: str) -> tuple[int, int]:
        for i, name in enumerate(named):
            if key == name or key.startswith(name + "."):
                return (i, keys.index(key))
        return (len(named), keys.index(key))

    return sorted(keys, key=rank)


def jsonable(value: Any) -> Any:
    """A flattened config value as JSON has it (tuples back to lists)."""
    return list(value) if isinstance(value, tuple) else value


def short_name(key: str) -> str:
    parts = key.split(".")
    if len(parts) > 1 and parts[-1] in ("name", "kind"):  # a group's choice: by its group
        return parts[-2]
    return parts[-1]


def short_names(keys: list[str]) -> dict[str, str]:
    """Display names: ``retriever.kind`` -> ``retriever``, ``chunking.max_words`` ->
    ``max_words``; the dotted key wherever two short names would collide."""
    shorts = [short_name(k) for k in keys]
    return {k: (s if shorts.count(s) == 1 else k) for k, s in zip(keys, shorts)}


_OWN: dict | None = None


def own_default(path: tuple):
    """For a setting that does not change results (:data:`receval.results.identity.NON_RESULT_KEYS`:
    ``cache_dir``, ...) saved as an interpolation: what receval's own ``conf/config.yaml``
    sets there, else its schema's default (:data:`receval.core.trust.ABSENT` for a result
    setting, which is refused instead). Evaluates receval's own file, never the run's."""
    global _OWN
    if not path or not all(isinstance(part, str) for part in path) or is_result_key(".".join(path)):
        return trust.ABSENT
    if _OWN is None:
        own = yaml.safe_load((Path(config_schema.config_dir()) / "config.yaml").read_text(encoding="utf-8"))
        own = {k: v for k, v in own.items() if k not in ("defaults", "hydra")}
        _OWN = {**schema_defaults(), **flatten(OmegaConf.to_container(OmegaConf.create(own), resolve=True))}
    value = _OWN.get(".".join(path), trust.ABSENT)
    return trust.ABSENT if value == "???" else jsonable(value)


def runnable_config(run_dir: Path, *, allow_remote: bool = False, allow_code: bool = False, stream=None) -> dict:
    """The run's saved config as data a re-run may use: ``.hydra/config.yaml`` (else
    run.json's copy) read as plain YAML, every interpolation replaced by the value
    run.json saved at the same position (:func:`receval.core.trust.fill_interpolations`; a
    setting that does not change results, by :func:`own_default`) or refused, then
    checked for network and code use (:func:`receval.core.trust.check_reach`). Holds no
    interpolation."""
    run_dir = Path(run_dir)
    info = open_run(run_dir, skip=UNUSED_COLUMNS).info  # complete, contained, bounded
    saved = info.get("config") if isinstance(info.get("config"), dict) else None
    path = contained(run_dir, CONFIG_PATH)
    if path is not None:
        where = path.resolve()
        data = read_config_yaml(path)
    elif saved is not None:
        data, where, saved = saved, run_dir / RUN_JSON, None
    else:
        raise RunError(f"{run_dir}: no saved config (.hydra/config.yaml, or run.json's config); cannot re-run it")
    data = trust.fill_interpolations(data, saved, where, fallback=own_default)
    trust.check_reach(data, where, allow_remote=allow_remote, allow_code=allow_code, stream=stream)
    return data


def saved_config(run_dir: Path, *, allow_remote: bool = False, allow_code: bool = False):
    """:func:`runnable_config` merged onto receval's schema (a key this receval no
    longer knows is an error)."""
    from omegaconf.errors import OmegaConfBaseException

    data = runnable_config(run_dir, allow_remote=allow_remote, allow_code=allow_code)
    try:
        return config_schema.structured_run(data)
    except ConfigError as error:  # a group's own schema refused a key or kind
        raise RunError([f"{run_dir}: its saved config is not valid in this receval: {p}" for p in error.problems]) from None
    except OmegaConfBaseException as error:
        message = str(error).splitlines()[0]
        raise RunError(f"{run_dir}: its saved config does not fit this receval ({message})") from None


COMPONENT_GROUPS = ("chunking", "retriever", "rerank", "transform")


def component_settings(config: dict) -> dict[str, Any]:
    """The saved settings of a run's components, dotted (``retriever.fusion.k``); a group
    the run does not use (``rerank: null``) has none."""
    return flatten({group: config[group] for group in COMPONENT_GROUPS if config.get(group)})
