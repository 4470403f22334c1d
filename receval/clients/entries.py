"""One cached answer on disk: the entry the cached-call layer (:mod:`receval.clients.calls`)
writes and reads back. The cache is data from elsewhere (another run, another version,
a hand that edited it), read with the same care as a server's answer.

An entry is ``<cache_dir>/calls/v2/<2 hex>/<key>.json``, a JSON object written whole
(:func:`receval.core.io.atomic_write`): ``key``; what the key is made of (``endpoint``,
``model``, ``fields``, ``prompt``: the prompt's sha256); the answer (``reply``,
``input_tokens``, ``output_tokens``, ``tokens_estimated``, ``live_ms``); and ``digest``,
the sha256 of all of these (canonical JSON: sorted keys, UTF-8).

Read (:func:`decode`), an entry is replayed only when

- it is a regular file of at most :data:`ENTRY_BYTES` (1 MiB), by ``lstat`` before a byte
  is read (a larger answer is not written either: it is asked again next time);
- it is one JSON object with every field, of its type: the token counts under the one
  usage rule's test (whole numbers from 0 to 2**53, as
  :func:`receval.clients.calls.usage_count` checks a server's), ``live_ms`` a real number >= 0;
- its digest is that of its content, and its ``key`` the one it was read for (the layer
  also checks that its endpoint, model, fields and prompt hash to that key);
- the caller's own check accepts its reply (a grade from 0 to 3, a list of scores ...).

Otherwise it is refused, for one of :data:`REFUSED`'s reasons, and asked again; the step
says how many and why (:func:`refused_message`, :mod:`receval.core.notices`). Entries
written before entries carried a digest cannot be verified: they are asked again once
(``unverified``) and rewritten. The digest is a checksum, not a signature: it catches an
edit or a damaged copy, not a forger who recomputes it; the shape and range checks hold
for those too.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from functools import partial
from pathlib import Path

from receval.core import numeric

ENTRY_BYTES = 1 << 20  # an entry's bound, checked before it is read and before it is written
FIELDS = ("key", "endpoint", "model", "fields", "prompt", "reply", "input_tokens", "output_tokens",
          "tokens_estimated", "live_ms")
REFUSED = {
    "oversized": f"over the entry bound of {ENTRY_BYTES >> 20} MiB (not read)",
    "damaged": "that are not an entry receval wrote (not a file, or not its JSON)",
    "edited": "whose content no longer matches the digest and key written with it (edited)",
    "misshapen": "of the wrong shape (a field missing, of the wrong type or out of range)",
    "unverified": "written before entries carried a digest, so they cannot be verified",
}


class Refused(Exception):
    """An entry that is not replayed; ``reason`` is one of :data:`REFUSED`'s keys."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def digest(value) -> str:
    """sha256 of ``value`` as canonical JSON (sorted keys, UTF-8)."""
    blob = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def encode(entry: dict) -> bytes | None:
    """The bytes of an entry (``entry`` holds :data:`FIELDS`), its digest added; None when
    they would pass :data:`ENTRY_BYTES` (such an answer is not cached)."""
    data = {name: entry[name] for name in FIELDS}
    data["digest"] = digest(data)
    blob = json.dumps(data, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return blob if len(blob) <= ENTRY_BYTES else None


def decode(path: Path, key: str) -> dict | None:
    """The checked content of the entry at ``path`` read for ``key`` (see the module doc);
    None when there is none; :class:`Refused` when it may not be replayed."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError:
        raise Refused("damaged") from None
    if not stat.S_ISREG(found.st_mode):
        raise Refused("damaged")
    if found.st_size > ENTRY_BYTES:
        raise Refused("oversized")
    try:
        with open(path, "rb") as handle:
            raw = handle.read(ENTRY_BYTES + 1)
        data = json.loads(raw)
    except (OSError, ValueError, RecursionError):
        raise Refused("damaged") from None
    if len(raw) > ENTRY_BYTES:  # grew since it was measured
        raise Refused("oversized")
    if not isinstance(data, dict):
        raise Refused("damaged")
    if "digest" not in data:
        raise Refused("unverified")
    if set(data) != {*FIELDS, "digest"}:
        raise Refused("misshapen")
    content = {name: data[name] for name in FIELDS}
    if data["digest"] != digest(content) or data["key"] != key:
        raise Refused("edited")
    if not _shaped(content):
        raise Refused("misshapen")
    return content


def _shaped(data: dict) -> bool:
    """The types and ranges every entry's fields must have (the reply's own are the
    caller's): token counts under the usage rule's test (:func:`receval.core.numeric.count`,
    what :func:`receval.clients.calls.usage_count` applies to a server's counts)."""
    texts = all(isinstance(data[name], str) for name in ("key", "endpoint", "model", "prompt"))
    counts = all(numeric.count(data[name]) is not None for name in ("input_tokens", "output_tokens"))
    live_ms = numeric.real(data["live_ms"])
    return (texts and counts and isinstance(data["fields"], dict) and isinstance(data["tokens_estimated"], bool)
            and live_ms is not None and live_ms >= 0)


def _refused_words(reason: str, step: str, count: int) -> str:
    answers, were = ("answer", "was") if count == 1 else ("answers", "were")
    return f"{step}: {count} cached {answers} {REFUSED[reason]} {were} not replayed but asked again"


def _uncached_words(step: str, count: int) -> str:
    answers, were = ("answer", "was") if count == 1 else ("answers", "were")
    return f"{step}: {count} {answers} over the cache's entry bound of {ENTRY_BYTES >> 20} MiB {were} not cached"


#: The words of each refusal for :mod:`receval.core.notices` (one function per reason: its tally's key).
refused_message = {reason: partial(_refused_words, reason) for reason in REFUSED}
uncached_message = _uncached_words
