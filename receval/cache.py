"""A content-addressed cache on disk for work that sweeps repeat: chunk sets and token counts.

Jobs that share dataset and chunking reuse one chunk set; jobs that also share the
tokenizer reuse one vocabulary with every chunk's token ids (the costly part of a
lexical index; BM25 and TF-IDF weights are derived from it in one vectorised step).
Keys are sha256 hashes of everything the content depends on: the dataset
fingerprint, the chunking settings, the tokenizer, and a format version. So a stale
entry is never read, and nothing needs invalidating.

Safe under parallel jobs: entries are written to a temporary file and renamed into
place (two jobs building the same entry write the same bytes; the last rename wins).
An entry that cannot be read is rebuilt and rewritten. Within one process (Hydra's
basic launcher runs a sweep's jobs in one process) recent entries stay in memory.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from receval.chunking import Chunk
from receval.retrievers.lexical import Vocabulary
from receval.store import atomic_write
from receval.text import Tokenizer

FORMAT = 2  # 2: chunks keep their page offsets
_MEMORY: OrderedDict[str, object] = OrderedDict()
_MEMORY_SIZE = 4


def key_of(**parts) -> str:
    blob = json.dumps({"format": FORMAT, **parts}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _remember(key: str, value: object) -> None:
    _MEMORY[key] = value
    _MEMORY.move_to_end(key)
    while len(_MEMORY) > _MEMORY_SIZE:
        _MEMORY.popitem(last=False)


class IndexCache:
    """Chunk sets and vocabularies by content key; ``events`` records hit/built per entry."""

    def __init__(self, root: str | Path | None):
        self.root = Path(root) if root else None
        self.events: dict[str, str] = {}

    def _cached(self, kind: str, key: str, suffix: str, build: Callable, save: Callable, load: Callable):
        memo = f"{kind}/{key}"
        if memo in _MEMORY:
            self.events[kind] = "hit"
            _MEMORY.move_to_end(memo)
            return _MEMORY[memo]
        path = self.root / kind / f"{key}{suffix}" if self.root else None
        if path is not None and path.is_file():
            try:
                value = load(path)
            except Exception:  # a damaged entry is rebuilt, never trusted
                path.unlink(missing_ok=True)
            else:
                self.events[kind] = "hit"
                _remember(memo, value)
                return value
        value = build()
        self.events[kind] = "built"
        if path is not None:
            atomic_write(path, lambda tmp: save(value, tmp))
        _remember(memo, value)
        return value

    def chunks(self, key: str, build: Callable[[], list[Chunk]]) -> list[Chunk]:
        return self._cached("chunks", key, ".parquet", build, _save_chunks, _load_chunks)

    def vocabularies(self, chunk_key: str) -> Callable[[list[str], Tokenizer], Vocabulary]:
        """A source of vocabularies for lexical retrievers fitted on this chunk set."""

        def vocabulary(texts: list[str], tokenizer: Tokenizer) -> Vocabulary:
            key = key_of(chunks=chunk_key, tokenizer=tokenizer.key)
            return self._cached(
                "vocabulary", key, ".npz",
                lambda: Vocabulary.from_texts(texts, tokenizer),
                lambda value, tmp: _save_npz(value, tmp),
                Vocabulary.load,
            )

        return vocabulary


def _save_chunks(chunks: list[Chunk], path: Path) -> None:
    table = pa.table({
        "section_id": [c.section_id for c in chunks],
        "ordinal": pa.array([c.ordinal for c in chunks], pa.int32()),
        "text": [c.text for c in chunks],
        "start": pa.array([c.start for c in chunks], pa.int64()),
        "end": pa.array([c.end for c in chunks], pa.int64()),
    })
    pq.write_table(table, path)


def _load_chunks(path: Path) -> list[Chunk]:
    # ParquetFile, not pq.read_table: read_table imports pyarrow.dataset (about 0.2 s of
    # CPU, once per sweep process) for a single file it does not need it for
    table = pq.ParquetFile(path).read()
    return list(map(Chunk, *(table.column(name).to_pylist() for name in ("section_id", "ordinal", "text", "start", "end"))))


def _save_npz(vocabulary: Vocabulary, tmp: Path) -> None:
    with open(tmp, "wb") as handle:  # a file object: np.savez would add ".npz" to a name
        vocabulary.save(handle)
