"""Secrets kept out of messages, files and labels: what looks like a key, which URLs
carry one, and what a message may show of text from outside.

- A URL is read by :func:`split_url`, the one normalisation: the HTTP client
  (:mod:`receval.clients.http`) builds request URLs from what it returns and
  :mod:`receval.core.trust` checks the same, so ``" http://host"`` is one host to both.
- A key is read from the environment variable *named* by the config (:func:`api_key`),
  at each request; it is never stored, and any text that could echo it is redacted.
- Text from a server (status line, error body, reply keys, ids, a bad answer) reaches
  a message only through :func:`clip`: redacted first, then cut, so a key straddling
  the cut cannot leak its first characters; :func:`cut` is the same for text that
  holds no key (a stored file's value, a user's code's answer).
- A value that may be a key is shown by :func:`receval.core.formatting.shown`
  (``"secret"``): a URL without its user,
  password, query or fragment, a key-like host or path segment as ``<hidden>``; a
  key-like string not at all. :func:`url_secret` reads every part of a URL by the one
  rule (:func:`looks_like_key`), so a key in a path (``http://host/sk-.../v1``) is
  refused as one in a query is. A label shows a URL by
  its host alone (:func:`without_urls`).
"""

from __future__ import annotations

import ipaddress
import os
import re
import reprlib
import unicodedata
import urllib.parse

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
KEY_PREFIXES = (
    "sk-", "sk_", "pk_", "rk_", "ghp_", "gho_", "github_pat_", "xox", "AKIA", "ASIA", "hf_", "glpat-", "AIza",
)
_C0_OR_SPACE = "".join(map(chr, range(0x21)))
SHOWN = 80  # characters of a config value in a message
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s,;)\]]*")


AUTH_SCHEME = re.compile(r"(?:bearer|basic|token|apikey|digest)\s+\S{6,}", re.I)  # an Authorization value
OPAQUE = re.compile(r"[A-Za-z0-9]{20,}")  # a key's random run: 20+ letters and digits, no separator
HEX = re.compile(r"(?:0x)?[0-9a-f]+")  # a hash or id as receval, git and OpenTelemetry write one (lower case, 0x allowed), not a key; upper-case hex may be one
# a setting (or a URL's query parameter) named as a credential holds one (``token``,
# ``body.api_key``, ``x-api-key``, ``client_secret``, ``?sig=``, ``X-Amz-Signature``): the
# name's last word is one, or the whole name is a short one (``key``, ``sig``, ``auth``:
# ``id_key`` and ``score_key`` name fields). ``api_key_env`` (a variable's NAME),
# ``max_tokens``, ``passages``, ``author`` and ``design`` are not such names.
CREDENTIAL_NAME = re.compile(
    r"(?:^|[_.-])(?:api[_-]?key|apikey|token|access[_-]?token|auth[_-]?token|refresh[_-]?token|secret|"
    r"client[_-]?secret|password|passwd|pwd|authorization|bearer|credentials?|private[_-]?key|signature|"
    r"session[_-]?(?:id|key|token))$"
    r"|^(?:key|sig|auth|pass|session)$",
    re.I,
)


def looks_like_key(value, name: str | None = None) -> bool:
    """The one rule for a secret: ``value`` (a config value, an override's value) is a key,
    never to be saved, sent as a parameter or shown. It is when it starts with a known
    key prefix (``sk-``, ``ghp_``, ``hf_``...), is an Authorization value (``Bearer
    ...``), or holds a random-looking run (20+ letters and digits mixed, no separator,
    not a hexadecimal hash); or, with ``name`` (its setting's name), when that name is a
    credential's (``token``, ``api_key``, ``password``...). Model names
    (``claude-3-5-sonnet-20241022``), paths and prompts are none of these."""
    if not isinstance(value, str) or not value.strip():
        return False
    if name is not None and credential_name(name):
        return True
    text = value.strip()
    if text.startswith(KEY_PREFIXES) or AUTH_SCHEME.fullmatch(text):
        return True
    return any(
        any(c.isdigit() for c in run) and any(c.isalpha() for c in run) and not HEX.fullmatch(run)
        for run in OPAQUE.findall(text)
    )


def credential_name(name) -> bool:
    """Whether a setting's (or query parameter's) ``name`` says it holds a credential
    (:data:`CREDENTIAL_NAME`); the name half of :func:`looks_like_key`, which decides."""
    return bool(CREDENTIAL_NAME.search(str(name)))


def split_url(value) -> urllib.parse.SplitResult | None:
    """``value`` read as a URL the way the client reads it (None when urllib cannot):
    surrounding whitespace and control characters stripped, then urllib's split, which
    also drops tabs and newlines anywhere and lower-cases the scheme. The one
    normalisation: :func:`api_url` builds request URLs from it, :mod:`receval.core.trust`
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


_URL_PIECE = re.compile(r"[/;,&=:@.?#+!$'()*\s]+")  # what parts a URL's words (``-`` and ``_`` stay in a key)


def holds_key(text: str) -> bool:
    """Whether a part of a URL (percent-decoded) is or holds a key: the whole part, or
    any of its pieces between URL punctuation, under :func:`looks_like_key`."""
    decoded = urllib.parse.unquote(text)
    return looks_like_key(decoded) or any(looks_like_key(piece) for piece in _URL_PIECE.split(decoded))


def url_secret(value) -> str | None:
    """What secret a URL carries in itself (None for none), reading every part of it with
    :func:`looks_like_key`, the one rule: credentials before the host (``user:KEY@``), a
    key-like host label or port text (``host:KEY``), a key-like path segment
    (``/sk-.../v1``, as some APIs take tokens), or a key-like parameter (``api_key=``,
    ``token=``, ``sig=``..., or a key-like value) in its query or fragment.
    Such a URL is refused wherever it would be saved or sent."""
    parts = network_url(value)
    if parts is None:
        return None
    if "@" in parts.netloc:
        return "credentials (user:KEY@host)"
    host, _, port = parts.netloc.rpartition(":") if not parts.netloc.endswith("]") else (parts.netloc, "", "")
    if holds_key(host or parts.netloc) or (port and not port.isdigit() and holds_key(port)):
        return "a key in its host or port (host:KEY)"
    if any(holds_key(segment) for segment in parts.path.split("/") if segment):
        return "a key in its path (/KEY/...)"
    for text in (parts.query, parts.fragment):
        for name, found in urllib.parse.parse_qsl(text, keep_blank_values=True):
            if looks_like_key(found, name):
                return "a key in its query string (?api_key=...)"
        if text and holds_key(text):
            return "a key in its query string (?api_key=...)"
    return None


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


def api_key(api_key_env: str | None) -> str | None:
    return os.environ.get(api_key_env) if api_key_env else None


def redact(text: str, *envs: str | None) -> str:
    """``text`` with the value of each variable named in ``envs`` replaced by ``***``."""
    for env in envs:
        key = api_key(env)
        if key:
            text = text.replace(key, "***")
    return text


def clip(text, limit: int, *envs: str | None) -> str:
    """Server text fit for a message: redacted (the values of the variables ``envs``
    name: the key, header values; and every key-like word, as :func:`hide_keys` hides
    them from answers), THEN put on one line and cut to ``limit`` characters (cutting
    first could leave the start of a key that straddles the cut). Bytes are
    decoded; anything else (a reply's keys, an id that is not a string) is its repr."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    elif not isinstance(text, str):
        text = brief(text, limit)
    text = " ".join(_KEY_TOKEN.sub(_hidden_word, redact(text, *envs)).split())
    if len(text) <= limit:
        return text
    end = max(0, limit - 3)
    while 0 < end < len(text) and unicodedata.combining(text[end]):
        end -= 1  # never between a letter and its marks (a Thai vowel sign, an accent)
    return text[:end] + "..."


def brief(value, limit: int = SHOWN) -> str:
    """``repr(value)`` bounded: at most 6 levels of nesting, 8 items a container and
    ``limit`` characters a string, so a value nested 100,000 deep (an agent's query, a
    server's reply) is shown as ``[[[[[[[...]]]]]]]`` rather than raising RecursionError."""
    shortened = reprlib.Repr()
    shortened.maxlevel, shortened.maxlist, shortened.maxdict, shortened.maxtuple = 6, 8, 8, 8
    shortened.maxstring = shortened.maxother = max(limit, 12)
    try:
        return shortened.repr(value)
    except (RecursionError, ValueError):  # a custom __repr__ that recurses or fails
        return f"<{type(value).__name__}>"


def _hidden_word(match: re.Match) -> str:
    return HIDDEN if looks_like_key(match.group(0)) else match.group(0)


def cut(text: str, limit: int = 80) -> str:
    """What a message shows of a string from outside that holds no key (a user's code's
    answer, a stored file's value): :func:`clip` with nothing to redact."""
    return clip(text, limit, None)


def _host(match: re.Match) -> str:
    try:
        host = urllib.parse.urlsplit(match.group(0)).hostname
    except ValueError:
        host = None
    return host or "remote"


def has_url(text: str) -> bool:
    """Whether ``text`` holds a URL (``scheme://...``) that :func:`without_urls` replaces."""
    return _URL.search(text) is not None


def without_urls(text: str) -> str:
    """Every URL in ``text`` replaced by its host: ``http://127.0.0.1:8089/v1`` -> ``127.0.0.1``
    (how a run's label shows a URL)."""
    return _URL.sub(_host, text)


# ---------------------------------------------------------------------- keys in answers

HIDDEN = "<hidden: key>"  # what an answer holds where a key was
MIN_CREDENTIAL = 6  # a credential shorter than this is not looked for in answers (it would match ordinary text)
_KEY_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{15,}")  # a word of an answer long enough to be a key


class _Built:
    """A mapping waiting for its values (:func:`map_strings`)."""

    def __init__(self, keys: list, values: list):
        self.keys, self.values = keys, values


def map_strings(value, change):
    """``value`` (JSON-like: mappings, lists, strings, numbers) with ``change`` applied to
    every string, a mapping's keys included; walked without recursion, so a reply nested
    as deep as a JSON decoder allows cannot exhaust Python's stack."""
    holder = [None]
    stack = [(value, holder, 0)]
    while stack:
        item, parent, slot = stack.pop()
        if isinstance(item, _Built):
            parent[slot] = dict(zip(item.keys, item.values))
        elif isinstance(item, str):
            parent[slot] = change(item)
        elif isinstance(item, (list, tuple)):
            parent[slot] = out = [None] * len(item)
            stack.extend((inner, out, i) for i, inner in enumerate(item))
        elif isinstance(item, dict):
            built = _Built([change(k) if isinstance(k, str) else k for k in item], [None] * len(item))
            stack.append((built, parent, slot))  # popped after every value below it is filled
            stack.extend((inner, built.values, i) for i, inner in enumerate(item.values()))
        else:
            parent[slot] = item
    return holder[0]


def key_tokens(value) -> frozenset[str]:
    """The key-like words (:func:`looks_like_key`, 16 characters or more) in every string of
    ``value``: what a prompt already holds (a passage quoting an id), which its answer may repeat."""
    found: set[str] = set()

    def collect(text: str) -> str:
        found.update(t for t in _KEY_TOKEN.findall(text) if looks_like_key(t))
        return text

    map_strings(value, collect)
    return frozenset(found)


def hide_keys(value, own=(), keep: frozenset[str] = frozenset()) -> tuple[object, int]:
    """``value`` (an answer: JSON-like) with every occurrence of each of ``own`` (the
    request's own credential values: an echoing server puts its Authorization header or
    key in its answer) and every key-like word (:func:`looks_like_key`, 16 characters or
    more) replaced by :data:`HIDDEN`, and how many were replaced. A key-like word in
    ``keep`` (:func:`key_tokens` of the prompt: data the request sent, such as a
    passage's id) is kept. Credentials shorter than :data:`MIN_CREDENTIAL` are not looked for."""
    own = sorted({s for s in own if isinstance(s, str) and len(s) >= MIN_CREDENTIAL}, key=len, reverse=True)
    count = 0

    def word(match: re.Match) -> str:
        nonlocal count
        token = match.group(0)
        if token in keep or not looks_like_key(token):
            return token
        count += 1
        return HIDDEN

    def change(text: str) -> str:
        nonlocal count
        for secret in own:
            if secret in text:
                count += text.count(secret)
                text = text.replace(secret, HIDDEN)
        return _KEY_TOKEN.sub(word, text)

    cleaned = map_strings(value, change)
    return cleaned, count


def credential_values(settings) -> tuple[str, ...]:
    """The credentials a component's resolved settings send (a request body's ``token``,
    an agent's ``api_key`` param): each string :func:`looks_like_key` says is one, with
    its setting's name; what :func:`hide_keys` looks for in that component's answers."""
    found: list[str] = []
    stack = [(None, settings)]
    while stack:
        name, value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.items())
        elif isinstance(value, (list, tuple)):
            stack.extend((name, v) for v in value)
        elif isinstance(value, str) and looks_like_key(value, name):
            found.append(value)
    return tuple(dict.fromkeys(found))


def without_keys(settings, name: str | None = None):
    """Resolved settings (a component's node, as a summary file keeps it) with every value
    the one rule calls a secret (:func:`looks_like_key` with its setting's name, or a URL
    :func:`url_secret` refuses) as ``<hidden>`` and every key-like setting NAME as
    ``hidden``: what reaches a file when a value came from ``${oc.env:...}``."""
    if isinstance(settings, dict):
        return {("hidden" if isinstance(k, str) and looks_like_key(k) else k): without_keys(v, str(k))
                for k, v in settings.items()}
    if isinstance(settings, (list, tuple)):
        return [without_keys(v, name) for v in settings]
    if isinstance(settings, str) and not (name or "").endswith("_env") and (
            looks_like_key(settings, name) or url_secret(settings)):
        return "<hidden>"
    return settings


def hidden_message(step: str, count: int) -> str:
    """The warning a step gives when answers held keys: where, and how many (never the values)."""
    values = "value" if count == 1 else "values"
    return (
        f"{step}: {count} key-like {values} (the request's own credential, or a word that looks like a key) in "
        f"the server's answers replaced by {HIDDEN} before they were cached or stored"
    )
