"""A run's saved config and facts read back, and how configs differ.

- :func:`runnable_config`: a run's saved config (read through
  :func:`receval.results.door.open_run`) checked by :mod:`receval.core.trust` (no interpolation
  left, network and code use refused unless allowed): what ``reproduce`` re-runs and
  ``select --out`` writes, the one path from a stored config to something runnable.
  (:func:`receval.run.written.saved_config` merges it onto receval's schema, on the run side).
- :func:`anchor_paths`: a config's relative paths made absolute against the folder the
  run read them from (``run.json``'s ``workdir``), so ``select --out``'s best.yaml runs
  from any folder.
- :func:`ordered_as_named`: keys in the order the command line named them (the naming
  of runs, :func:`receval.results.labels.naming`, orders its columns so).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from receval.core import trust
from receval.core.errors import RunError
from receval.results.door import contained, open_run, read_config_yaml
from receval.results.format import CONFIG_PATH, HYDRA_DIR, RUN_JSON
from receval.results.identity import PLACE_KEYS
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


def _override_key(override: str) -> str:
    key = override.split("=", 1)[0].lstrip("+~")
    return key.split("@", 1)[0]


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


def runnable_config(
    run_dir: Path, *, allow_remote: bool = False, allow_code: bool = False, stream=None, fallback=None,
) -> dict:
    """The run's saved config as data a re-run may use: ``.hydra/config.yaml`` (else
    run.json's copy) read as plain YAML, every interpolation replaced by the value
    run.json saved at the same position (:func:`receval.core.trust.fill_interpolations`; a
    setting that does not change results, by ``fallback(path)``: the run side's
    :func:`receval.run.written.own_default`) or refused, then
    checked for network and code use (:func:`receval.core.trust.check_reach`). Holds no
    interpolation. With a ``fallback``, the keys that say where a run writes
    (:data:`receval.results.identity.PLACE_KEYS`: ``cache_dir``) are its value, whatever
    the run saved."""
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
    data = trust.fill_interpolations(data, saved, where, fallback=fallback)
    for key in PLACE_KEYS if fallback is not None else ():
        if key in data and (own := fallback((key,))) is not trust.ABSENT:
            data[key] = own
    trust.check_reach(data, where, allow_remote=allow_remote, allow_code=allow_code, stream=stream)
    return data


COMPONENT_GROUPS = ("chunking", "retriever", "rerank", "transform")

#: Keys whose value is a path, read from the working directory when relative.
PATH_KEYS = ("dataset.path", "dataset.questions", "tokenizer.subword", "cache_dir")
#: A component's ``model`` is a path when a folder of that name is there (else a bundled
#: or an API model's name: all-MiniLM-L6-v2).
MODEL_KEY = "model"


def workdir_of(info: dict | None) -> Path | None:
    """The folder a run read its relative paths from (``run.json``'s ``workdir``); None for
    a run written before it was stored, or a value that is no absolute path."""
    value = (info or {}).get("workdir")
    return Path(value) if isinstance(value, str) and os.path.isabs(value) else None


def _relative(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and value != "???" and "://" not in value and not (
        os.path.isabs(value) or value.startswith("~"))


def anchor_paths(config: dict, base: Path) -> tuple[dict, dict[str, str]]:
    """``config`` with each relative path made absolute against ``base`` (the run's
    working directory): the :data:`PATH_KEYS`, and a component's ``model`` (at any depth:
    a fused member's too) when ``base`` holds a folder of that name; and what changed,
    dotted key -> new value. Normalised, links not followed: the path the run read."""
    changed: dict[str, str] = {}

    def absolute(value: str) -> str:
        return os.path.normpath(os.path.join(base, value))

    def walk(node: Any, key: str) -> Any:
        if isinstance(node, dict):
            return {k: walk(v, f"{key}.{k}" if key else str(k)) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, f"{key}.{i}") for i, v in enumerate(node)]
        in_component = key.split(".")[0] in COMPONENT_GROUPS
        if _relative(node) and (key in PATH_KEYS or (
                in_component and key.rsplit(".", 1)[-1] == MODEL_KEY and (base / node).is_dir())):
            changed[key] = absolute(node)
            return changed[key]
        return node

    return walk(config, ""), changed


def component_settings(config: dict) -> dict[str, Any]:
    """The saved settings of a run's components, dotted (``retriever.fusion.k``); a group
    the run does not use (``rerank: null``) has none."""
    return flatten({group: config[group] for group in COMPONENT_GROUPS if config.get(group)})
