"""What a stored run, or a command line, may make receval do: the trust rules in one place.

A stored run is data. Every path that turns a saved config into something runnable
(``reproduce``, ``select --out``: :func:`receval.results.configs.runnable_config`)
reads it as plain YAML and walks the parsed tree itself: no interpolation or resolver
is ever evaluated, whatever shape its key has (``a.b``, ``1``, quoted, unicode, a
list item). :func:`fill_interpolations` takes each one's value from the same position
of run.json's saved config (the two trees walked together, never a path rebuilt from
key strings) or refuses it. :func:`check_reach` then refuses, naming the key, a config
that reaches the network or names code to import, unless the user says so
(``--allow-remote`` / ``--allow-code``), and under ``--allow-remote`` names every host
and every environment variable whose value will be sent. The rules look at keys and
values anywhere in the config tree, so components added later are covered without
changes here:

- remote: a key ``url``, ``base_url``, ``endpoint``, ``host`` (or ending in ``_url`` /
  ``_endpoint``) with a value; any value that is a network URL once normalised as the
  client normalises it (:func:`receval.core.secrets.split_url`: ``" http://h"`` is one);
  ``backend``/``kind: http``; ``distributed: ray`` (it joins a Ray cluster). What it
  sends: the value of every ``*_env`` and every ``headers`` value in the same mapping;
- code: a key ``target`` or ``_target_`` (or ending in ``_target``).

On the command line (:func:`receval.run.argv.check_argv`) and in a composed config
(:func:`config_problems`, checked by :mod:`receval.cli.preflight`), both before Hydra writes
anything: a value given where a variable NAME belongs (``*.api_key_env=sk-...``, a
header value) and a URL carrying a secret (``https://user:KEY@host``, ``?api_key=...``)
are refused without echoing them.
"""

from __future__ import annotations

import copy
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from receval.core.formatting import shown
from receval.core.secrets import ENV_NAME, host_of, looks_like_key, network_url, url_secret
from receval.core.errors import RunError

__all__ = [
    "Reach", "check_reach", "config_problems", "fill_interpolations", "header_message", "is_env_name",
    "is_interpolation", "key_message", "label", "looks_like_key", "reaches", "shown", "url_message",
]

REMOTE_KEYS = {"url", "base_url", "endpoint", "host", "api_base"}
REMOTE_KINDS = {"http", "https", "api", "remote", "ray"}
KIND_KEYS = {"backend", "kind", "distributed"}  # distributed: ray joins a Ray cluster and runs work there
CODE_KEYS = {"target", "_target_"}
PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
ABSENT = object()  # no value at this position
#: The fix for a stored config that cannot be re-run as saved: editing it would unseal the
#: run (every reader then calls it incomplete), so the configuration is run again.
RERUN_CONFIG = "run the configuration again with this receval, which saves in run.json the values it read"


# ----------------------------------------------------------------- values


def is_env_name(value) -> bool:
    return isinstance(value, str) and bool(ENV_NAME.fullmatch(value)) and not looks_like_key(value)


def is_interpolation(value) -> bool:
    """Text OmegaConf would evaluate (``${...}``): a parsed key or value, never a path."""
    return isinstance(value, str) and "${" in value


def holds_interpolation(node) -> bool:
    if isinstance(node, dict):
        return any(is_interpolation(k) or holds_interpolation(v) for k, v in node.items())
    if isinstance(node, list):
        return any(holds_interpolation(v) for v in node)
    return is_interpolation(node)


class Index(int):
    """A list position in a config path (a mapping's key may be an int too)."""


def label(path: tuple) -> str:
    """A position for messages: ``retriever.body['a.b'][0]`` (a key that is not a plain
    name is quoted and cut; one that looks like a secret is not shown)."""
    out = ""
    for part in path:
        if isinstance(part, Index):
            out += f"[{int(part)}]"
        elif isinstance(part, str) and PLAIN_KEY.fullmatch(part) and not looks_like_key(part):
            out += ("." if out else "") + part
        else:
            out += f"[{shown(part, 'secret')}]"
    return out or "(the top level)"


def _walk(node, path: tuple = ()):
    """(path, value, parent mapping or None) for every mapping value and list item."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield path + (key,), value, node
            yield from _walk(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield path + (Index(i),), value, None
            yield from _walk(value, path + (Index(i),))


def _last_key(path: tuple) -> str:
    last = path[-1] if path else ""
    return last.lower() if isinstance(last, str) else ""


# ----------------------------------------------------------------- secrets written into a config


def key_message(where: str) -> str:
    return (
        f"{where} must be the NAME of an environment variable holding the key (e.g. OPENAI_API_KEY), "
        "not the key itself: export the key as that variable and give its name (nothing was written)"
    )


def header_message(where: str) -> str:
    return (
        f"{where}: a header's value is the NAME of an environment variable holding it (e.g. "
        "{Authorization: ES_AUTH}), never the value itself (nothing was written)"
    )


def url_message(where: str, secret: str) -> str:
    return (
        f"{where}: a URL with {secret} is refused so the key is never saved: give the URL "
        "without it and the key in an environment variable named by the matching api_key_env "
        "(or headers) (nothing was written)"
    )


def _secret_message(where: str) -> str:
    return (
        f"{where} holds what looks like a key (not shown); a key is never written into a config: "
        "export it as an environment variable and give that variable's NAME in the component's "
        "api_key_env (or headers: {Authorization: VAR}), or write ${oc.env:VAR} here (nothing was written)"
    )


def _name_message(where: str) -> str:
    return (
        f"{where} holds a setting whose NAME looks like a key (not shown); a config's names are saved "
        "with the run: give the key through an environment variable, never as a name (nothing was written)"
    )


def _in_headers(path: tuple) -> bool:
    return len(path) >= 2 and isinstance(path[-2], str) and path[-2].lower() == "headers"


def config_problems(data) -> list[str]:
    """Secrets written into a composed config (a config file or an override), one message
    each, never echoing them: a URL carrying a key (in any part: user, host, path, query),
    a key where a variable NAME belongs, a key-like setting NAME, and a key-like value anywhere (``retriever.body.token``, params, any mapping:
    :func:`receval.core.secrets.looks_like_key`, the one rule). Checked by the run spec
    and before Hydra saves the config (:mod:`receval.cli.preflight`); an interpolation
    (``${oc.env:VAR}``, how a secret should come) is left to run time."""
    problems = []
    for path, value, _ in _walk(data):
        key = _last_key(path)
        if isinstance(path[-1], str) and not is_interpolation(path[-1]) and looks_like_key(path[-1]):
            problems.append(_name_message(label(path[:-1])))  # a key as a setting's NAME is saved as well
            continue
        if key == "headers" and isinstance(value, dict):
            if any(isinstance(v, str) and not is_interpolation(v) and not is_env_name(v) for v in value.values()):
                problems.append(header_message(label(path)))
        if not isinstance(value, str) or is_interpolation(value):
            continue
        secret = url_secret(value)
        if secret:
            problems.append(url_message(label(path), secret))
        elif key.endswith("key_env") and value and not is_env_name(value):
            problems.append(key_message(label(path)))
        elif not key.endswith("_env") and not _in_headers(path) and looks_like_key(value, key):
            problems.append(_secret_message(label(path)))
    return problems


# ----------------------------------------------------------------- stored configs


def fill_interpolations(data: dict, saved, where: Path | str, *, strict: bool = True, fallback=None) -> dict:
    """``data`` (a parsed config; its ``hydra`` node dropped) with each interpolation
    replaced by what ``saved`` (run.json's config) holds at the same position of its
    own tree, else by ``fallback(path)`` (when it returns something other than
    :data:`ABSENT`); none is ever evaluated. An interpolation without either, or a key
    holding ``${``, is refused (``strict``: one RunError naming each) or kept as written
    (for display)."""
    problems = []

    def fill(node, twin, path: tuple):
        if isinstance(node, dict):
            out = {}
            for key, value in node.items():
                if not path and key == "hydra":  # Hydra's own settings: never used by a re-run
                    continue
                if is_interpolation(key):
                    problems.append(
                        f"{where}: the key {label(path + (key,))} holds an interpolation; a stored run is "
                        f"data and receval evaluates none: {RERUN_CONFIG}"
                    )
                mate = twin.get(key, ABSENT) if isinstance(twin, dict) and isinstance(key, str) else ABSENT
                out[key] = fill(value, mate, path + (key,))
            return out
        if isinstance(node, list):
            return [
                fill(value, twin[i] if isinstance(twin, list) and i < len(twin) else ABSENT, path + (Index(i),))
                for i, value in enumerate(node)
            ]
        if not is_interpolation(node):
            return node
        if twin is not ABSENT and not holds_interpolation(twin):
            return copy.deepcopy(twin)
        if fallback is not None and (value := fallback(path)) is not ABSENT:
            return value
        problems.append(
            f"{where}: {label(path)}={shown(node, 'secret')} is an interpolation; a stored run is data and "
            f"receval evaluates none: {RERUN_CONFIG}"
        )
        return node

    out = fill(data, saved if isinstance(saved, dict) else ABSENT, ())
    if strict and problems:
        raise RunError(problems)
    return out


@dataclass
class Reach:
    """One thing a config makes receval do beyond reading files."""

    key: str  # where, as :func:`label` shows it
    value: object
    what: str  # remote | code
    envs: tuple[str, ...] = ()  # remote: the variables whose values it sends
    node: int = 0  # identity of the mapping holding it (one message per component)
    name: str = ""  # its own key, lower case


def sent_envs(node) -> tuple[str, ...]:
    """The variables a component's mapping sends the values of: each ``*_env`` value
    (``api_key_env``) and each ``headers`` value (``{Authorization: ES_AUTH}``)."""
    if not isinstance(node, dict):
        return ()
    envs = []
    for key, value in node.items():
        name = key.lower() if isinstance(key, str) else ""
        if name.endswith("_env") and isinstance(value, str) and value:
            envs.append(value)
        elif name == "headers" and isinstance(value, dict):
            envs.extend(str(v) for v in value.values() if v not in (None, ""))
    return tuple(dict.fromkeys(envs))


def reaches(data: dict) -> list[Reach]:
    """Every key of ``data`` that sends requests or imports code (see the module doc)."""
    found = []
    for path, value, parent in _walk(data):
        key = _last_key(path)
        if key in CODE_KEYS or key.endswith("_target"):
            if value not in (None, ""):
                found.append(Reach(label(path), value, "code"))
            continue
        if value is None or value == "" or isinstance(value, (dict, list)):
            continue
        remote = (
            key in REMOTE_KEYS or key.endswith(("_url", "_endpoint"))
            or (key in KIND_KEYS and str(value).lower() in REMOTE_KINDS)
            or network_url(value) is not None
        )
        if remote:
            found.append(Reach(label(path), value, "remote", sent_envs(parent), id(parent), key))
    with_url = {r.node for r in found if r.what == "remote" and network_url(r.value)}
    return [r for r in found if not (r.what == "remote" and r.node in with_url and not network_url(r.value))]


def sending(envs: tuple[str, ...]) -> str:
    if not envs:
        return "no key"
    names = ", ".join(f"${env}" for env in envs)
    return f"the key from {names}" if len(envs) == 1 else f"the keys from {names}"


def imported(target) -> str:
    """The module a code key names (``module:attribute``, or a dotted ``module.attribute``)
    and where it would be imported from, found without importing anything."""
    from importlib.machinery import PathFinder

    text = str(target)
    module = text.partition(":")[0] if ":" in text else text.rpartition(".")[0] or text
    top = module.split(".")[0]
    try:
        spec = PathFinder.find_spec(top) if top.isidentifier() else None
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin not in (None, "built-in", "frozen"):
        found = f"from {spec.origin}"
    elif spec is not None and spec.submodule_search_locations:
        found = f"from {list(spec.submodule_search_locations)[0]}"
    else:
        found = "not found on this Python's path"
    return f"module {shown(module, 'secret')} ({found})"


def check_reach(data: dict, where: Path | str, *, allow_remote: bool, allow_code: bool, stream=None) -> None:
    """Refuse what the user did not allow; before anything runs, name every host an
    allowed config sends requests to and every variable whose value goes with them,
    and every module it imports (:func:`imported`)."""
    found = reaches(data)
    problems = []
    for reach in found:
        if reach.what == "code" and not allow_code:
            problems.append(
                f"{where}: {reach.key}={shown(reach.value, 'secret')} names code to import; a stored run does "
                "not run code unless you pass --allow-code"
            )
        elif reach.what == "remote" and not allow_remote:
            problems.append(
                f"{where}: {reach.key}={shown(reach.value, 'secret')} would send requests over the network; "
                "a stored run does not unless you pass --allow-remote"
            )
        elif reach.what == "remote":
            if not all(map(is_env_name, reach.envs)):
                problems.append(
                    f"{where}: beside {reach.key}, an api_key_env or header value is not a variable name"
                )
            if secret := url_secret(reach.value):
                problems.append(f"{where}: {reach.key}={shown(reach.value, 'secret')} carries {secret}; it is not sent")
    if problems:
        raise RunError(problems)
    stream = stream or sys.stderr
    for reach in found:
        if reach.what == "code":
            print(f"receval: {where}: {reach.key} imports {imported(reach.value)}, and its code runs",
                  file=stream, flush=True)
            continue
        parts = network_url(reach.value) if reach.what == "remote" else None
        if parts is not None or (reach.what == "remote" and reach.name in REMOTE_KEYS):
            host = host_of(parts) if parts is not None else shown(reach.value, "secret")
            print(
                f"receval: {where}: {reach.key} sends requests to {host} with {sending(reach.envs)}",
                file=stream, flush=True,
            )
