"""Forging a stored run in a test: after editing a run folder's files, :func:`forged`
writes its manifest again, as a forger would, so the test reaches the checks that hold
whatever the manifest says (types, ranges, sizes, trust). Without it the door stops
earlier: the folder reads as incomplete (tests/test_door.py)."""

from pathlib import Path

from receval.results.manifest import seal


def forged(run_dir: Path) -> Path:
    seal(run_dir)
    return Path(run_dir)
