"""An endpoint's identity without its address: :func:`endpoint_id`.

A run's LLM stage and a judge are "the same endpoint" when their API roots agree after
normalising what does not change where requests go (scheme and host case, a default
port, a trailing slash); credentials in the URL and its query are left out, and the
result is a digest, so a pool or a labels file can say which endpoint served what
without holding a URL (which may carry a key).
"""

from __future__ import annotations

import hashlib
from urllib.parse import urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}


def endpoint_id(url: str) -> str:
    """16 hex digits naming the API root ``url`` (see the module docstring)."""
    parts = urlsplit(str(url).strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    if port == _DEFAULT_PORTS.get(scheme):
        port = None
    root = f"{scheme}://{host}{'' if port is None else f':{port}'}{parts.path.rstrip('/')}"
    return hashlib.sha256(root.encode()).hexdigest()[:16]
