"""How receval shows a value it did not choose: :func:`shown`, one formatter for

- ``"text"``: a stored free text (a question) in a display, at most
  :data:`TEXT_CHARS` characters (CSV and JSON hold it all);
- ``"label"``: a setting in a run's label (:mod:`receval.results.labels`): ``none``,
  ``true``, a float to 4 significant digits, a URL as its host, a path by its last part,
  at most :data:`LABEL_CHARS` characters;
- ``"secret"``: a config value that may be a key, in a message
  (:mod:`receval.core.secrets`' rules): a URL as ``scheme://host/path`` (user, password,
  query and fragment left out, a key-like host or path segment as ``<hidden>``), a
  key-like string not at all, anything else its repr, at most
  :data:`receval.core.secrets.SHOWN` characters.

A value longer than its limit is cut by :func:`_cut`, the one rule: the end replaced by a
mark, the whole at most the limit.
"""

from __future__ import annotations

import urllib.parse
from pathlib import PurePath
from typing import Any, Literal

from receval.core.secrets import SHOWN, has_url, holds_key, host_of, looks_like_key, network_url, without_urls

TEXT_CHARS = 300  # of a question in a table, a --show block or the HTML page
LABEL_CHARS = 48  # of one setting in a run's label

__all__ = ["LABEL_CHARS", "TEXT_CHARS", "shown"]


def _cut(text: str, limit: int, mark: str = "…") -> str:
    """``text`` if it fits in ``limit`` characters, else its start and ``mark``, ``limit`` in all."""
    return text if len(text) <= limit else text[: limit - len(mark)] + mark


def shown(value: Any, how: Literal["text", "label", "secret"] = "text", limit: int | None = None) -> str:
    """``value`` as a display shows it (``how``: see the module docstring); ``limit``:
    characters at most, instead of the default for ``how``."""
    if how == "label":
        return _label(value, LABEL_CHARS if limit is None else limit)
    if how == "secret":
        return _secret(value, SHOWN if limit is None else limit)
    return _cut(value or "", TEXT_CHARS if limit is None else limit)


def _label(value: Any, limit: int) -> str:
    """A setting as a label shows it: ``none``, ``true``, ``0.9``, ``[1, 3]``; a float to
    4 significant digits (Optuna's 1.3232202558909871 as 1.323), a URL as its host, a
    path (``/models/e5``) by its last part, a long text cut."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_label(v, limit) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_label(v, limit)}" for k, v in value.items()) + "}"
    text = str(value)
    if has_url(text):
        text = without_urls(text)
    elif text.startswith(("/", "~", "./", "../")) and PurePath(text).name:
        text = PurePath(text).name
    return _cut(text, limit)


def _secret(value: Any, limit: int) -> str:
    """A config value safe to print: a URL without what may hold a key, a key-like
    string not at all, anything else cut."""
    parts = network_url(value)
    if parts is not None:
        hidden = " (query not shown)" if parts.query or parts.fragment else ""
        host = "<hidden>" if holds_key(host_of(parts)) else host_of(parts)
        path = "/".join("<hidden>" if holds_key(segment) else segment for segment in parts.path.split("/"))
        return urllib.parse.urlunsplit((parts.scheme, host, path, "", "")) + hidden
    if isinstance(value, str) and looks_like_key(value.strip()):
        return "<hidden: looks like a key>"
    return _cut(repr(value) if isinstance(value, str) else str(value), limit, "...")
