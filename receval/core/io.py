"""Files written whole or not at all: every file receval writes goes through
:func:`atomic_write` (a temporary file beside the target, renamed over it), so a
reader never sees a half-written file and a full disk is one clear error; a stored
file is read once, bounded (:func:`read_whole`), so the bytes checked are the bytes used."""

from __future__ import annotations

import errno
import os
import stat
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


class TooLarge(OSError):
    """A file holding more bytes than its reader takes (``size``: what it holds)."""

    def __init__(self, path: Path, size: int):
        super().__init__(f"{path}: {size:,} bytes")
        self.size = size


def read_whole(path: Path, limit: int) -> bytearray:
    """The bytes of one file, read once through one descriptor: what is checked (hashed)
    is what is then parsed, whatever replaces the file meanwhile. A :class:`TooLarge`
    when it holds more than ``limit`` bytes (from ``fstat``, before a byte is read, and
    again if it grew while read); a symlink as the last component is not followed
    (give the resolved path); a file that is not regular is an ``OSError``."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb", buffering=0) as handle:
        facts = os.fstat(fd)
        if not stat.S_ISREG(facts.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if facts.st_size > limit:
            raise TooLarge(path, facts.st_size)
        data = bytearray(facts.st_size)
        view, done = memoryview(data), 0
        while done < len(data) and (n := handle.readinto(view[done:])):
            done += n
        if done < len(data):  # cut short while read
            del data[done:]
        elif handle.read(1):
            raise TooLarge(path, facts.st_size + 1)
        return data
