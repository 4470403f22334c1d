"""Calling a remote API (embeddings, chat completions): one place for the URL rules,
the API key, redaction and backoff.

- The base URL is an ``http(s)://`` API root holding no user, password, query or
  fragment (a key belongs in an environment variable, not a URL).
- The key is read from the environment variable *named* by the config, at each
  request; it is never stored, and any text that could echo it is redacted.
- Text from a server (status line, error body, a bad answer) reaches a message only
  through :func:`clip`: redacted first, then cut, so a key straddling the cut
  cannot leak its first characters.
- Retries wait ``base * 2**(attempt - 1)`` seconds, or a longer ``Retry-After`` (in
  seconds), at most ``cap``. The HTTP client that applies these rules is
  :mod:`receval.remote`.
"""

from __future__ import annotations

import ipaddress
import os
import re
import urllib.parse

from receval.errors import ConfigError

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def is_local(host: str | None) -> bool:
    """Loopback hosts (localhost, 127.0.0.0/8, ::1), where a server usually needs no key."""
    if not host:
        return False
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def api_url(base_url: str | None, suffix: str, option: str, key_option: str) -> str:
    """``{base_url}{suffix}`` after checking the URL; a ConfigError naming ``option``."""
    if not base_url or not str(base_url).strip():
        before = f" before {suffix}" if suffix else ""
        raise ConfigError(
            f"{option} is required: the API root{before} "
            f"(e.g. {option}=http://localhost:11434/v1 for Ollama)"
        )
    parts = urllib.parse.urlsplit(str(base_url).strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{option}={base_url!r}: use an http:// or https:// URL, e.g. http://localhost:11434/v1")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ConfigError(
            f"{option} must hold no user, password, query or fragment; give the API key through "
            f"an environment variable and name it in {key_option}"
        )
    path = parts.path.rstrip("/")
    if suffix and path.endswith(suffix):
        path = path[: -len(suffix)]
    return urllib.parse.urlunsplit(parts._replace(path=path + suffix))


def check_key_env(api_key_env: str | None, url: str, option: str, unset_ok_on_loopback: bool = True) -> None:
    """The variable name must look like one (never echoing it: it may be the key
    itself), and be set, unless the server is on this machine and that is allowed."""
    if api_key_env in (None, ""):
        return
    if not ENV_NAME.fullmatch(str(api_key_env)):
        raise ConfigError(
            f"{option} must be the NAME of an environment variable holding the key "
            "(e.g. OPENAI_API_KEY), not the key itself"
        )
    if os.environ.get(api_key_env):
        return
    if unset_ok_on_loopback and is_local(urllib.parse.urlsplit(url).hostname):
        return
    raise ConfigError(
        f"the environment variable {api_key_env} (named by {option}) is not set; "
        f"export {api_key_env}=<your key> (or set {option}=null for an API that needs none)"
    )


def api_key(api_key_env: str | None) -> str | None:
    return os.environ.get(api_key_env) if api_key_env else None


def headers(api_key_env: str | None) -> dict[str, str]:
    """JSON request headers, with ``Authorization: Bearer <key>`` when a key is set."""
    out = {"Content-Type": "application/json", "Accept": "application/json"}
    key = api_key(api_key_env)
    if key:
        out["Authorization"] = f"Bearer {key}"
    return out


def redact(text: str, api_key_env: str | None) -> str:
    """``text`` with the key named by ``api_key_env`` replaced by ``***``."""
    key = api_key(api_key_env)
    return text.replace(key, "***") if key else text


def clip(text: str | bytes, limit: int, api_key_env: str | None) -> str:
    """Server text fit for a message: redacted, THEN put on one line and cut to ``limit``
    characters (cutting first could leave the start of a key that straddles the cut)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = " ".join(redact(text, api_key_env).split())
    return text if len(text) <= limit else text[: max(0, limit - 3)] + "..."


def cut(text: str, limit: int = 80) -> str:
    """What a message shows of a string from outside that holds no key (a user's code's
    answer, a stored file's value): :func:`clip` with nothing to redact."""
    return clip(text, limit, None)


def backoff_delay(attempt: int, retry_after: str | None, base: float, cap: float) -> float:
    """Seconds to wait before retry ``attempt`` (1 = the first retry)."""
    delay = base * 2 ** (attempt - 1)
    if retry_after:
        try:
            delay = max(delay, float(retry_after))
        except ValueError:
            pass  # an HTTP date: keep the backoff
    return max(0.0, min(delay, cap))
