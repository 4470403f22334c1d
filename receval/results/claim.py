"""One run, one folder: a run takes its folder for itself before it writes there.

:func:`taken` locks ``<run folder>/writer.lock`` (an exclusive ``flock``, which the
system releases when the process ends however it ends, so a killed run leaves no stale
lock) and writes into it who holds it. A second writer into the same folder (two runs
started into one fixed ``hydra.run.dir``) is refused at once with one message naming
the first (exit 2), and writes nothing: the first run's files are untouched.

Hydra saves a job's ``.hydra/`` files before the job starts, so the refused writer's
Hydra has already saved its config over the first run's. The holder therefore writes
its own saved files (``saved``: the text Hydra saved for it, headed by the run id,
:mod:`receval.results.bond`) when it starts (:meth:`Claim.start`) and again, if they
changed, just before it seals (:meth:`Claim.seal`): the folder is sealed with the
holder's config, or, if another write lands between the two, reads as incomplete.

A run started without Hydra (``receval.run.pipeline.run`` from Python, ``reproduce``) saves
no ``.hydra/`` files: older ones in its folder are removed when it starts, as they are
another run's.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from receval.core.errors import RunError
from receval.core.io import atomic_write
from receval.core.secrets import cut
from receval.results import bond, manifest
from receval.results.format import CONFIG_PATH, OVERRIDES_PATH

LOCK = "writer.lock"
SAVED = (CONFIG_PATH, OVERRIDES_PATH)  # the sealed files Hydra saves for a job


class Claim:
    """A run folder held by this run: its id, and the saved files it writes as its own."""

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.run_id: str | None = None
        self.saved: dict[str, str] = {}
        self.started = False

    def start(self, saved: dict[str, str] | None = None) -> "Claim":
        """Begin writing a new run (once; later calls do nothing): unseal, draw the run id,
        write ``saved`` (name -> text, the run id as its first line) and remove the
        saved files of an earlier run."""
        if not self.started:
            self._begin(bond.new_id(), saved)
        return self

    def keep(self, run_id: str | None, saved: dict[str, str] | None = None) -> "Claim":
        """Begin sealing again a finished run found in the folder (resume): its own id
        (None for a run written before run ids), with the config Hydra saved now."""
        self._begin(run_id, saved)
        return self

    def _begin(self, run_id: str | None, saved: dict[str, str] | None) -> None:
        self.started = True
        manifest.unseal(self.run_dir)
        self.run_id = run_id
        self.saved = {name: bond.headed(run_id, text) for name, text in (saved or {}).items()}
        for name in SAVED:
            if name not in self.saved:
                (self.run_dir / name).unlink(missing_ok=True)
        self._write_saved()

    def _write_saved(self) -> None:
        for name, text in self.saved.items():
            path = self.run_dir / name
            try:
                if path.read_text(encoding="utf-8") == text:
                    continue
            except (OSError, UnicodeDecodeError):
                pass
            atomic_write(path, lambda tmp, text=text: tmp.write_text(text, encoding="utf-8"))

    def seal(self) -> Path:
        """Write the saved files again if another writer's Hydra replaced them, then the
        manifest with the run id (last)."""
        self._write_saved()
        return manifest.seal(self.run_dir, self.run_id)


def _holder() -> dict:
    return {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%d %H:%M:%S"),
            "command": " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))}


def _named(raw: bytes) -> str:
    """Who holds a folder, from its lock file's text."""
    try:
        who = json.loads(raw)
        return (f"pid {int(who['pid'])} on {cut(str(who['host']), 60)}, since {cut(str(who['since']), 20)}: "
                f"{cut(str(who['command']), 160)}")
    except (ValueError, KeyError, TypeError):
        return "another receval run (just starting)"


@contextmanager
def taken(run_dir: Path) -> Iterator[Claim]:
    """Hold ``run_dir`` for one run (see the module docstring); a RunError naming the
    holder when another run holds it."""
    import fcntl  # POSIX; imported here so that the read side never needs it

    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / LOCK
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _named(os.pread(fd, 4096, 0))
            os.close(fd)
            raise RunError(
                f"{run_dir}: another run is writing into this folder ({holder}); one folder holds one run: "
                "give this run its own hydra.run.dir (or run a sweep, whose jobs have their own folders), "
                "or wait for that one to finish"
            ) from None
        try:  # the lock file may have been removed by the holder that just released it
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(_holder()).encode(), 0)
        yield Claim(run_dir)
    finally:
        path.unlink(missing_ok=True)  # while held: a waiting writer's file is then checked as above
        os.close(fd)


def holding(run_dir: Path, claim: Claim | None):
    """``claim`` when the caller holds the folder already (the command line takes it
    before Hydra's job runs), else :func:`taken` of ``run_dir``."""
    return nullcontext(claim) if claim is not None else taken(run_dir)
