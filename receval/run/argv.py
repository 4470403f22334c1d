"""The command line's secret check, before Hydra writes anything: a value given where an
environment variable's NAME belongs (``*.api_key_env=sk-...``, a header value), a URL
carrying a secret, or a key-like value anywhere an override sets, refused without echoing
it. Each override is read by Hydra's parser (:func:`receval.core.overrides.key_values`),
so this lives on the run side, beside :mod:`receval.run.hydra_internals`; the rules on values
are :mod:`receval.core.trust`'s (the same ones a composed config gets).

Also a config group given an option ``conf/`` does not have (``retriever=bm52``):
one line with the nearest option and the group's options (:func:`group_problems`),
where Hydra would list its internal schema names (``base_bm25``) and suggest nothing."""

from __future__ import annotations

import difflib
from pathlib import Path

from receval.core.errors import ConfigError
from receval.core.overrides import key_values
from receval.core.secrets import url_secret
from receval.core.trust import config_problems, header_message, is_env_name, key_message, url_message

__all__ = ["argv_problems", "check_argv", "group_problems"]


def _nested(key: str, value) -> dict:
    """An override's value placed at its dotted key (``a.b=v`` -> ``{a: {b: v}}``)."""
    for part in reversed(key.split(".")):
        value = {part: value}
    return value


def argv_problems(argv: list[str]) -> list[str]:
    """Override problems that must stop a command before anything is written (each
    override read by Hydra's parser, :func:`receval.core.overrides.key_values`)."""
    problems = []
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        key, values = key_values(arg)
        texts = [v for v in values if isinstance(v, str)]
        if key.endswith("key_env"):
            named = [str(v) for v in values if v not in ("", None, "null", "None")]
            if not all(map(is_env_name, named)):
                problems.append(key_message(key))
        elif (headers := _header_values(key, values)) is not None:
            if not all(map(is_env_name, headers)):
                problems.append(header_message(key))
        elif secret := next(filter(None, map(url_secret, [arg.partition("=")[2], *texts])), None):
            problems.append(url_message(key, secret))
        elif key.split(".")[-1].lower().endswith("_env"):
            continue
        else:  # a key-like value anywhere in what it sets (a mapping's too)
            found = [p for v in values for p in config_problems(_nested(key, v))]
            problems += list(dict.fromkeys(found))
    return problems


def _header_values(key: str, values: list) -> list[str] | None:
    """The values a ``*.headers`` mapping (or ``*.headers.NAME``) override sets; None for other keys."""
    if key.endswith(".headers") or key == "headers":
        return [str(v) for value in values for v in (value.values() if isinstance(value, dict) else [value])]
    return [str(v) for v in values] if ".headers." in key or key.startswith("headers.") else None


def group_options(root: Path, more: list[Path] = ()) -> dict[str, list[str]]:
    """Each config group under ``root`` (``conf/``: ``retriever``, ``retriever/fusion``,
    ...) and its options, the YAML files it holds, with those the same groups hold in the
    ``more`` folders (``-cp``/``-cd``; only those groups are looked at there: such a
    folder may be any folder). Hydra's own groups (``hydra/...``), whose options come
    from plugins too, are left to Hydra."""
    groups: dict[str, set[str]] = {}
    for file in root.rglob("*.yaml"):
        group = file.parent.relative_to(root).as_posix()
        if group != "." and group.split("/")[0] != "hydra":
            groups.setdefault(group, set()).add(file.stem)
    for folder in more:
        for group, options in groups.items():
            options.update(file.stem for file in (folder / group).glob("*.yaml"))
    return {group: sorted(options) for group, options in groups.items()}


def option_message(group: str, value: str, options: list[str]) -> str:
    """``retriever=bm52: no such option; did you mean bm25? (options: bm25, dense, ...)``."""
    if value == "null":  # no option's name: only "none" is near it
        near = ["none"] if "none" in options else []
    else:
        near = difflib.get_close_matches(value, options, n=1, cutoff=0.5)
    guess = f"; did you mean {near[0]}?" if near else ""
    return f"{group}={value}: no such option{guess} (options: {', '.join(options)})"


def group_problems(argv: list[str], root: Path, more: list[Path] = ()) -> list[str]:
    """Overrides choosing a group's option (``retriever=...``, ``+experiment=...``, each
    value of a sweep) that names none of the group's options (:func:`group_options`). A schema's
    own name (``base_bm25``) is left to Hydra, which knows it; null is no option (``rerank=none``
    is how a stage is left out)."""
    groups = group_options(root, more)
    problems = []
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        key, values = key_values(arg)
        group = key.split("@", 1)[0]
        if group not in groups:
            continue
        for value in values:
            value = "null" if value is None else value
            if isinstance(value, str) and (value in groups[group] or value.startswith("base_")):
                continue
            problems.append(option_message(group, str(value), groups[group]))
    return problems


CONFIG_FOLDER_FLAGS = ("-cp", "--config-path", "-cd", "--config-dir")
CONFIG_NAME_FLAGS = ("-cn", "--config-name")


def _flag_values(argv: list[str], flags: tuple[str, ...]) -> list[str]:
    """The values given to ``flags`` (``-cp DIR`` or ``--config-path=DIR``)."""
    found = []
    for i, arg in enumerate(argv):
        flag, eq, value = arg.partition("=")
        if flag in flags:
            found.append(value if eq else (argv[i + 1] if i + 1 < len(argv) else ""))
    return [value for value in found if value]


def config_folders(argv: list[str]) -> list[Path] | None:
    """The folders ``-cp``/``-cd`` (and their long forms) add to the config search path:
    their groups' options are options too. None when a search path may add options from
    elsewhere (``hydra.searchpath`` on the command line or in a ``-cp``/``-cn`` primary
    config): Hydra is left to judge them."""
    if any(arg.lstrip("+").startswith("hydra.searchpath") for arg in argv):
        return None
    folders = [Path(value) for value in _flag_values(argv, CONFIG_FOLDER_FLAGS) if Path(value).is_dir()]
    for folder in folders:
        for name in _flag_values(argv, CONFIG_NAME_FLAGS):
            primary = folder / (name if name.endswith(".yaml") else f"{name}.yaml")
            try:
                if "searchpath" in primary.read_text(encoding="utf-8", errors="replace"):
                    return None
            except OSError:
                continue
    return folders


def check_argv(argv: list[str], root: Path | None = None) -> None:
    """Stop (exit 2, one message per problem) on :func:`argv_problems`, then on
    :func:`group_problems` (options under ``root``, receval's ``conf/`` by default, and
    under the folders ``-cp``/``-cd`` name)."""
    problems = argv_problems(argv)
    folders = config_folders(argv)
    if not problems and folders is not None:
        if root is None:
            from receval.run.config import config_dir

            root = Path(config_dir())
        problems = group_problems(argv, root, folders)
    if problems:
        raise ConfigError(problems)
