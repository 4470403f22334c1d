"""A run's saved config and facts read back, and how configs differ.

- :func:`read_info`: ``run.json`` (the facts written last).
- :func:`load_config`: ``.hydra/config.yaml`` as plain data (run.json's copy when missing),
  for display: an interpolation is shown as written, never evaluated.
- :func:`runnable_config`: the same checked by :mod:`receval.core.trust` (no interpolation
  left, network and code use refused unless allowed): what ``reproduce`` re-runs and
  ``select --out`` writes, the one path from a stored config to something runnable.
- :func:`saved_config`: that merged onto receval's schema, to re-run it.
- :func:`differing_params`: the flattened keys whose values differ between runs
  (``retriever.kind``, ``chunking.max_words``), shown by :func:`short_names`
  (``retriever``, ``max_words``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from omegaconf import OmegaConf

from receval import config as config_schema
from receval.core import trust
from receval.core.errors import ConfigError, RunError
from receval.results.identity import is_result_key
from receval.results.format import RESULTS, RUN_JSON

HYDRA_DIR = ".hydra"
CONFIG_YAML = "config.yaml"
OVERRIDES_YAML = "overrides.yaml"


class ConfigLoader(yaml.SafeLoader):
    """YAML as OmegaConf reads it: ``1e-3`` is a float (YAML 1.1 says a string) and
    dates stay strings, so a saved config parses the same without building a
    DictConfig (half the time, which counts over hundreds of runs)."""


ConfigLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
ConfigLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


def read_config_yaml(path: Path) -> dict:
    """A saved ``config.yaml`` parsed as plain YAML (never through OmegaConf: nothing in
    it is evaluated), its ``hydra`` node dropped; a RunError naming the file and line."""
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=ConfigLoader)  # noqa: S506 - a SafeLoader
    except (yaml.YAMLError, UnicodeDecodeError, OSError, RecursionError) as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or getattr(error, "reason", None) or type(error).__name__
        raise RunError(
            f"{path}: not a readable YAML config ({problem}{where}); "
            "fix it, or delete it to use the config saved in run.json"
        ) from None
    if not isinstance(data, dict):
        raise RunError(f"{path}: not a config mapping; delete it to use the config saved in run.json")
    data.pop("hydra", None)
    return data


def read_info(run_dir: Path) -> dict:
    """``run.json`` as a dict ({} when absent); a damaged one is a RunError."""
    path = Path(run_dir) / RUN_JSON
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:
        data, why = None, str(error)
    else:
        why = f"a JSON {type(data).__name__}, not an object"
    if not isinstance(data, dict):  # written last and atomically: this job did not end cleanly
        raise RunError(
            f"{path}: not a run's facts ({why}); re-run the job (the same command resumes "
            f"it), or delete {RUN_JSON} to read {RESULTS} alone"
        )
    return data


def load_config(run_dir: Path, info: dict | None = None) -> dict:
    """The run's saved config as plain data: ``.hydra/config.yaml``, else run.json's."""
    path = Path(run_dir) / HYDRA_DIR / CONFIG_YAML
    if path.is_file():  # interpolations: the values run.json saved (receval.core.trust), else as written
        return trust.fill_interpolations(read_config_yaml(path), (info or {}).get("config"), path, strict=False)
    config = (info or {}).get("config")
    return dict(config) if isinstance(config, dict) else {}


def load_overrides(run_dir: Path) -> list[str]:
    path = Path(run_dir) / HYDRA_DIR / OVERRIDES_YAML
    if not path.is_file():
        return []
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return []
    return [str(item) for item in data] if isinstance(data, list) else []


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}, "c": [1, 2]}`` -> ``{"a.b": 1, "c": (1, 2)}`` (lists as tuples)."""
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(flatten(value, f"{prefix}{key}."))
        return out
    if isinstance(data, list):
        return {prefix[:-1]: tuple(data)}
    return {prefix[:-1]: data}


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
    info = read_info(run_dir)
    saved = info.get("config") if isinstance(info.get("config"), dict) else None
    path = run_dir / HYDRA_DIR / CONFIG_YAML
    if path.is_file():
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
