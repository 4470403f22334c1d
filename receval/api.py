"""Calling a remote API (embeddings, chat completions): one place for the URL rules,
the API key, redaction and backoff.

- The base URL is an ``http(s)://`` API root holding no user, password, query or
  fragment (a key belongs in an environment variable, not a URL). It is read by
  :func:`split_url`, the one normalisation: every request URL is built from what it
  returns and :mod:`receval.trust` checks the same, so ``" http://host"`` is one host
  to both.
- The key is read from the environment variable *named* by the config, at each
  request; it is never stored, and any text that could echo it is redacted.
- Text from a server (status line, error body, reply keys, ids, a bad answer) reaches
  a message only through :func:`clip`: redacted first, then cut, so a key straddling
  the cut cannot leak its first characters. httpx and httpcore never log
  (:func:`quiet_http_logs`): their lines carry the server's reason phrase unredacted.
- A value that may be a key is shown by :func:`shown`: a URL without its user,
  password, query or fragment; a key-like string not at all.
- Retries wait ``base * 2**(attempt - 1)`` seconds, or a longer ``Retry-After`` (in
  seconds), at most ``cap``. The HTTP client that applies these rules is
  :mod:`receval.remote`.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import urllib.parse

from receval.errors import ConfigError

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
KEY_PREFIXES = (
    "sk-", "sk_", "pk_", "rk_", "ghp_", "gho_", "github_pat_", "xox", "AKIA", "ASIA", "hf_", "glpat-", "AIza",
)
CREDENTIAL_PARAM = re.compile(r"key|token|secret|pass|pwd|auth|sig|credential|session|bearer", re.I)
_C0_OR_SPACE = "".join(map(chr, range(0x21)))
SHOWN = 80  # characters of a config value in a message


def looks_like_key(value: str) -> bool:
    """A secret rather than a variable name: a known key prefix, or long mixed text with digits."""
    return value.startswith(KEY_PREFIXES) or (
        len(value) >= 24 and any(c.isdigit() for c in value) and any(c.islower() for c in value)
    )


def split_url(value) -> urllib.parse.SplitResult | None:
    """``value`` read as a URL the way the client reads it (None when urllib cannot):
    surrounding whitespace and control characters stripped, then urllib's split, which
    also drops tabs and newlines anywhere and lower-cases the scheme. The one
    normalisation: :func:`api_url` builds request URLs from it, :mod:`receval.trust`
    checks what it returns."""
    try:
        return urllib.parse.urlsplit(str(value).strip().strip(_C0_OR_SPACE))
    except ValueError:  # a bad IPv6 literal, a port out of range
        return None


def network_url(value) -> urllib.parse.SplitResult | None:
    """The split URL when ``value`` names a host over a network (``scheme://host``,
    any scheme but ``file``), else None."""
    if not isinstance(value, str):
        return None
    parts = split_url(value)
    if parts is None or not parts.scheme or not parts.netloc or parts.scheme == "file":
        return None
    return parts


def host_of(parts: urllib.parse.SplitResult) -> str:
    """``host:port`` as written, without any ``user:KEY@``."""
    return parts.netloc.rsplit("@", 1)[-1] or "?"


def url_secret(value) -> str | None:
    """What secret a URL carries in itself (None for none): credentials before the
    host, or a key-like parameter (``api_key=``, ``token=``, ``sig=``...) in its query
    or fragment. Such a URL is refused wherever it would be saved or sent."""
    parts = network_url(value)
    if parts is None:
        return None
    if "@" in parts.netloc:
        return "credentials (user:KEY@host)"
    for text in (parts.query, parts.fragment):
        for name, found in urllib.parse.parse_qsl(text, keep_blank_values=True):
            if CREDENTIAL_PARAM.search(name) or looks_like_key(found):
                return "a key in its query string (?api_key=...)"
    return None


def shown(value) -> str:
    """A config value safe to print: a URL as ``scheme://host/path`` (user, password,
    query and fragment left out), a key-like string not at all, anything else cut."""
    parts = network_url(value)
    if parts is not None:
        hidden = " (query not shown)" if parts.query or parts.fragment else ""
        return urllib.parse.urlunsplit((parts.scheme, host_of(parts), parts.path, "", "")) + hidden
    if isinstance(value, str) and looks_like_key(value.strip()):
        return "<hidden: looks like a key>"
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= SHOWN else text[: SHOWN - 3] + "..."


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
    parts = split_url(base_url)
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{option}={shown(base_url)}: use an http:// or https:// URL, e.g. http://localhost:11434/v1")
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


def redact(text: str, *envs: str | None) -> str:
    """``text`` with the value of each variable named in ``envs`` replaced by ``***``."""
    for env in envs:
        key = api_key(env)
        if key:
            text = text.replace(key, "***")
    return text


def clip(text, limit: int, *envs: str | None) -> str:
    """Server text fit for a message: redacted (the values of the variables ``envs``
    name: the key, header values), THEN put on one line and cut to ``limit`` characters
    (cutting first could leave the start of a key that straddles the cut). Bytes are
    decoded; anything else (a reply's keys, an id that is not a string) is its repr."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    elif not isinstance(text, str):
        text = repr(text)
    text = " ".join(redact(text, *envs).split())
    return text if len(text) <= limit else text[: max(0, limit - 3)] + "..."


def quiet_http_logs() -> None:
    """httpx logs every request at INFO with the server's reason phrase and httpcore
    its raw headers at DEBUG, neither redacted; Hydra's job logging would put them on
    stderr and in the run's log file. Their loggers are switched off (idempotent)."""
    for name in ("httpx", "httpcore"):
        logger = logging.getLogger(name)
        logger.setLevel(logging.CRITICAL + 1)
        logger.propagate = False
        if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
            logger.addHandler(logging.NullHandler())


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
