"""Files written whole or not at all: every file receval writes goes through
:func:`atomic_write` (a temporary file beside the target, renamed over it), so a
reader never sees a half-written file and a full disk is one clear error."""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from receval.core.errors import RecevalError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class WriteError(RecevalError, OSError):
    """A path the user gave (an --out file, a cache or output folder) that cannot be
    written: exit status 2 with one line, and still an ``OSError`` for callers that
    go on without writing (the embeddings cache)."""


FULL = frozenset(
    code for code in (errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", None)) if code is not None
)  # a full disk, a file too large, a quota: the user's to fix, not a bug


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it over;
    a full disk is a ``WriteError`` naming ``path``, the temporary file removed."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as error:  # a folder that cannot be made or written: the user's path
        raise WriteError(
            f"{path}: cannot write it ({error.strerror or error}); choose a folder you can write to"
        ) from None
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except OSError as error:
        Path(tmp).unlink(missing_ok=True)
        if error.errno in FULL or any(os.strerror(code) in str(error) for code in FULL):  # pyarrow
            raise WriteError(
                f"{path}: cannot write it, {error.strerror or 'no space left'}; free some space "
                "or choose another folder (nothing was left half-written)"
            ) from None
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
