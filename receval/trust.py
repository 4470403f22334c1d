"""What a stored run, or a command line, may make receval do: the trust rules in one place.

A stored run is data. ``reproduce`` reads its saved config as plain YAML (no
interpolation or resolver is ever evaluated: ``${oc.env:...}`` would read a secret
into a URL or a file) and refuses, naming the key and the value, a config that
reaches the network or names code to import, unless the user says so
(``--allow-remote`` / ``--allow-code``). The rules look at keys and values
anywhere in the config tree, so components added later are covered without
changes here:

- remote: a key ``url``, ``base_url``, ``endpoint``, ``host`` (or ending in
  ``_url`` / ``_endpoint``) with a value; any value that is a network URL
  (``scheme://`` other than ``file://``); ``backend``/``kind: http``;
- code: a key ``target`` or ``_target_`` (or ending in ``_target``).

On the command line (:func:`check_argv`, before Hydra writes anything): a value
given where a variable NAME belongs (``*.api_key_env=sk-...``) and a URL carrying
credentials (``https://user:KEY@host``) are refused without echoing them.
"""

from __future__ import annotations

import re
import sys
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import yaml

from receval.errors import ConfigError, RunError

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
KEY_PREFIXES = (
    "sk-", "sk_", "pk_", "rk_", "ghp_", "gho_", "github_pat_", "xox", "AKIA", "ASIA", "hf_", "glpat-", "AIza",
)
REMOTE_KEYS = {"url", "base_url", "endpoint", "host", "api_base"}
REMOTE_KINDS = {"http", "https", "api", "remote"}
KIND_KEYS = {"backend", "kind"}
CODE_KEYS = {"target", "_target_"}
URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


# ----------------------------------------------------------------- values


def looks_like_key(value: str) -> bool:
    """A secret rather than a variable name: a known key prefix, or long mixed text with digits."""
    return value.startswith(KEY_PREFIXES) or (
        len(value) >= 24 and any(c.isdigit() for c in value) and any(c.islower() for c in value)
    )


def is_env_name(value) -> bool:
    return isinstance(value, str) and bool(ENV_NAME.fullmatch(value)) and not looks_like_key(value)


def has_userinfo(value: str) -> bool:
    """A URL carrying credentials (``scheme://user:KEY@host``)."""
    if not URL.match(value):
        return False
    netloc = urllib.parse.urlsplit(value).netloc
    return "@" in netloc


def shown(value) -> str:
    """A value safe to print: a URL loses its userinfo; a key-like string is not shown."""
    text = str(value)
    if isinstance(value, str) and URL.match(text):
        parts = urllib.parse.urlsplit(text)
        host = parts.netloc.rsplit("@", 1)[-1]
        return urllib.parse.urlunsplit(parts._replace(netloc=host))
    if isinstance(value, str) and looks_like_key(text):
        return "<hidden: looks like a key>"
    return repr(value) if isinstance(value, str) else text


def host_of(value: str) -> str:
    parts = urllib.parse.urlsplit(value)
    return (parts.hostname or "?") + (f":{parts.port}" if parts.port else "")


# ----------------------------------------------------------------- command line


def argv_problems(argv: list[str]) -> list[str]:
    """Override problems that must stop a command before anything is written."""
    problems = []
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        key, value = arg.split("=", 1)
        key = key.lstrip("+~")
        values = [v.strip() for v in re.sub(r"^(choice|range)\(|\)$", "", value).split(",")]
        if key.endswith("api_key_env") and any(
            v not in ("", "null", "None") and not is_env_name(v) for v in values
        ):
            problems.append(
                f"{key} must be the NAME of an environment variable holding the key (e.g. "
                f"OPENAI_API_KEY), not the key itself: export the key as that variable and "
                f"pass {key}=NAME (nothing was written)"
            )
        elif _header_values(key, value) is not None and not all(map(is_env_name, _header_values(key, value))):
            problems.append(
                f"{key}: a header's value is the NAME of an environment variable holding it (e.g. "
                "{Authorization: ES_AUTH}), never the value itself (nothing was written)"
            )
        elif any(has_userinfo(v) for v in values):
            problems.append(
                f"{key}: a URL with credentials (user:KEY@host) is refused so the key is never "
                "saved: give the URL without them and the key in an environment variable named "
                "by the matching api_key_env (nothing was written)"
            )
    return problems


def _header_values(key: str, value: str) -> list[str] | None:
    """The values of a ``*.headers`` mapping (or ``*.headers.NAME``) override; None for other keys."""
    if key.endswith(".headers") or key == "headers":
        try:
            data = yaml.safe_load(value)
        except yaml.YAMLError:
            return [value]
        return [str(v) for v in data.values()] if isinstance(data, dict) else []
    return [value] if ".headers." in key or key.startswith("headers.") else None


def check_argv(argv: list[str]) -> None:
    problems = argv_problems(argv)
    if problems:
        raise ConfigError(problems)


# ----------------------------------------------------------------- stored configs


def _walk(node, prefix: str = ""):
    """(dotted key, last key, value, parent mapping) for every leaf and mapping value."""
    if isinstance(node, dict):
        for key, value in node.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            yield path, str(key), value, node
            yield from _walk(value, path)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            path = f"{prefix}[{i}]"
            yield path, "", value, None
            yield from _walk(value, path)


def _lookup(data, dotted: str):
    node = data
    for part in re.split(r"\.|\[(\d+)\]", dotted):
        if part in (None, ""):
            continue
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def load_saved_config(run_dir: Path, config_file: Path, info: dict) -> dict:
    """A run's saved config as plain data, nothing resolved (the ``hydra`` node dropped).

    Hydra saves a value like ``cache_dir: ${oc.env:...}`` as written; the run's
    ``run.json`` holds the value it resolved to, which is used instead. An
    interpolation without such a saved value is refused, never evaluated."""
    saved = info.get("config") if isinstance(info.get("config"), dict) else None
    if config_file.is_file():
        data = yaml.safe_load(config_file.read_text(encoding="utf-8"))
        where = config_file
        if not isinstance(data, dict):
            raise RunError(f"{config_file}: not a config mapping; delete it to re-run from run.json's config")
    elif saved is not None:
        data, where, saved = saved, run_dir / "run.json", None
    else:
        raise RunError(f"{run_dir}: no saved config (.hydra/config.yaml, or run.json's config); cannot re-run it")
    return fill_interpolations(data, saved, where)


def fill_interpolations(data: dict, saved: dict | None, where: Path | str, strict: bool = True) -> dict:
    """``data`` with each interpolation replaced by the value ``saved`` (run.json's
    resolved config) holds at the same key; none is ever evaluated. One without a
    saved value is an error (``strict``) or kept as written (for display)."""
    data = dict(data)
    data.pop("hydra", None)  # Hydra's own settings: never used by a re-run
    for dotted, _, value, parent in list(_walk(data)):
        if not (isinstance(value, str) and "${" in value):
            continue
        resolved = _lookup(saved, dotted) if isinstance(saved, dict) else None
        if resolved is None or "${" in str(resolved) or parent is None:
            if not strict:
                continue
            raise RunError(
                f"{where}: {dotted}={shown(value)} is an interpolation; a stored run is data and "
                "reproduce evaluates none: write the value itself there"
            )
        parent[dotted.rsplit(".", 1)[-1]] = resolved
    return data


@dataclass
class Reach:
    """One thing a config makes receval do beyond reading files."""

    key: str
    value: object
    what: str  # remote | code
    key_env: str | None = None  # remote: the variable named beside it
    node: int = 0  # identity of the mapping holding it (one message per component)


def reaches(data: dict) -> list[Reach]:
    """Every key of ``data`` that sends requests or imports code (see the module doc)."""
    found = []
    for dotted, key, value, parent in _walk(data):
        if key in CODE_KEYS or key.endswith("_target"):
            if value not in (None, ""):
                found.append(Reach(dotted, value, "code"))
            continue
        if value in (None, "") or isinstance(value, (dict, list)):
            continue
        remote = (
            key in REMOTE_KEYS or key.endswith(("_url", "_endpoint"))
            or (key in KIND_KEYS and str(value).lower() in REMOTE_KINDS)
            or (isinstance(value, str) and (m := URL.match(value)) and m.group(1).lower() != "file")
        )
        if remote:
            env = None
            if parent is not None:
                env = next((str(v) for k, v in parent.items() if str(k).endswith("api_key_env") and v), None)
                headers = parent.get("headers")  # retriever=http: header name -> variable name
                if env is None and isinstance(headers, dict) and headers:
                    env = str(next(iter(headers.values())))
            found.append(Reach(dotted, value, "remote", env, id(parent)))
    with_url = {r.node for r in found if r.what == "remote" and isinstance(r.value, str) and URL.match(r.value)}
    return [r for r in found if not (r.what == "remote" and r.node in with_url and not URL.match(str(r.value)))]


def check_reach(data: dict, where: Path, *, allow_remote: bool, allow_code: bool, stream=None) -> None:
    """Refuse what the user did not allow; print what an allowed remote call will use."""
    found = reaches(data)
    problems = []
    for reach in found:
        if reach.what == "code" and not allow_code:
            problems.append(
                f"{where}: {reach.key}={shown(reach.value)} names code to import; a stored run does "
                "not run code unless you pass --allow-code"
            )
        elif reach.what == "remote" and not allow_remote:
            problems.append(
                f"{where}: {reach.key}={shown(reach.value)} would send requests over the network; "
                "a stored run does not unless you pass --allow-remote"
            )
        elif reach.what == "remote" and reach.key_env is not None and not is_env_name(reach.key_env):
            problems.append(f"{where}: the api_key_env beside {reach.key} is not a variable name")
    if problems:
        raise RunError(problems)
    stream = stream or sys.stderr
    for reach in found:
        if reach.what == "remote" and isinstance(reach.value, str) and URL.match(reach.value):
            key = f"the key from ${reach.key_env}" if reach.key_env else "no key"
            print(
                f"receval: {where}: {reach.key} sends requests to {host_of(reach.value)} with {key}",
                file=stream, flush=True,
            )
