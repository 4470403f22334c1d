"""The splits of a BEIR folder: which ``qrels/<split>.tsv`` files ``dataset.split``
names, the rule that a query belongs to one split, and the query ids of the files
not loaded (for the notes). See :mod:`receval.datasets.beir`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from receval.core.errors import DatasetError

MAX_PROBLEMS = 50


def split_names(value) -> list[str] | None:
    """``dataset.split`` as a list of names (None: every split of the folder)."""
    if value is None:
        return None
    names = [value] if isinstance(value, str) else list(value) if isinstance(value, Sequence) else None
    if not names or not all(isinstance(n, str) and n.strip() and "/" not in n for n in names):
        raise DatasetError(
            f"dataset.split={value!r}: name a qrels file of the folder (dataset.split=test), a list "
            "of them (dataset.split=[train,test]), or null for every split"
        )
    if len(set(names)) < len(names):
        raise DatasetError(f"dataset.split={names}: names a split twice; list each once")
    return names


def judged_ids(path: Path) -> set[str]:
    """The query ids of a qrels file not loaded, for the notes only: read leniently
    (its own problems are for the run that loads it)."""
    ids = set()
    with path.open("rb") as handle:
        for raw in handle:
            qid = raw.split(b"\t", 1)[0].strip()
            if qid and qid != b"query-id":
                ids.add(qid.decode("utf-8", "replace"))
    return ids


def one_split_each(qrels: dict[str, dict], files: dict[str, Path]) -> None:
    """A query judged in two loaded files is an error naming it and both files and lines."""
    first: dict[str, tuple[str, int]] = {}
    problems = []
    for name, judged in qrels.items():
        for qid, docs in judged.items():
            line = min(number for _, number in docs.values())
            if qid in first:
                other, other_line = first[qid]
                problems.append(
                    f"query {qid!r} is judged in {files[other]}:{other_line} and in {files[name]}:{line}; "
                    "a question belongs to one split (tuning on one must not see the other): keep its "
                    "judgements in one file, or load one of them with dataset.split=NAME"
                )
            else:
                first[qid] = (name, line)
    if problems:
        shown = problems[:MAX_PROBLEMS]
        if len(problems) > MAX_PROBLEMS:
            shown.append(f"... and {len(problems) - MAX_PROBLEMS} more problems")
        raise DatasetError(shown)
