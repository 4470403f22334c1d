"""The command line's secret check, before Hydra writes anything: a value given where an
environment variable's NAME belongs (``*.api_key_env=sk-...``, a header value), a URL
carrying a secret, or a key-like value anywhere an override sets, refused without echoing
it. Each override is read by Hydra's parser (:func:`receval.core.overrides.key_values`),
so this lives on the run side, beside :mod:`receval.hydra_internals`; the rules on values
are :mod:`receval.core.trust`'s (the same ones a composed config gets)."""

from __future__ import annotations

from receval.core.errors import ConfigError
from receval.core.overrides import key_values
from receval.core.secrets import url_secret
from receval.core.trust import config_problems, header_message, is_env_name, key_message, url_message

__all__ = ["argv_problems", "check_argv"]


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


def check_argv(argv: list[str]) -> None:
    """Stop (exit 2, one message per problem) on :func:`argv_problems`."""
    problems = argv_problems(argv)
    if problems:
        raise ConfigError(problems)
