"""A content-addressed cache on disk for work that sweeps repeat: chunk sets and token counts.

Jobs that share dataset and chunking reuse one chunk set; jobs that also share the
tokenizer reuse one vocabulary with every chunk's token ids (the costly part of a
lexical index; BM25 and TF-IDF weights are derived from it in one vectorised step).
Keys are sha256 hashes of everything the content depends on: the dataset
fingerprint, the chunking settings, the tokenizer, and a format version. So a stale
entry is never read, and nothing needs invalidating.

Safe under parallel jobs: entries are written to a temporary file and renamed into
place (two jobs building the same entry write the same bytes; the last rename wins).
An entry that cannot be read is rebuilt and rewritten. Each entry carries a sha256
checksum of its content (like the embedding packs): a file that decodes but whose
content does not match it (an edited chunk text, swapped rows) is rebuilt with a
one-line warning, never trusted. Within one process (Hydra's basic launcher runs a
sweep's jobs in one process) recent entries stay in memory.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from receval.chunking import Chunk
from receval.core.progress import warn
from receval.retrievers.lexical import Vocabulary
from receval.core.io import atomic_write
from receval.results.write import arrow_column
from receval.retrievers.text import Tokenizer

FORMAT = 4  # 2: chunks keep their page offsets; 3: entries carry a content checksum; 4: CJK characters count as words
CHECKSUM = "checksum"
_MEMORY: OrderedDict[str, object] = OrderedDict()
_MEMORY_SIZE = 4


def key_of(**parts) -> str:
    blob = json.dumps({"format": FORMAT, **parts}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class ChecksumMismatch(ValueError):
    """A cache entry that decodes but whose content is not what was written."""


def _strings(digest, values: list[str]) -> None:
    """Feed a list of strings to ``digest`` unambiguously (count, lengths, text)."""
    digest.update(len(values).to_bytes(8, "little"))
    digest.update(np.fromiter(map(len, values), np.int64, len(values)).tobytes())
    digest.update("\0".join(values).encode("utf-8", "surrogatepass"))


def _array(digest, values) -> None:
    array = np.ascontiguousarray(values)
    digest.update(f"{array.dtype.str}{array.shape}".encode())
    digest.update(memoryview(array).cast("B"))


def chunks_checksum(section_ids: list[str], ordinals, texts: list[str], starts, ends) -> str:
    digest = hashlib.sha256(b"chunks")
    _strings(digest, section_ids)
    _array(digest, np.asarray(ordinals, dtype="<i8"))
    _strings(digest, texts)
    _array(digest, np.asarray(starts, dtype="<i8"))
    _array(digest, np.asarray(ends, dtype="<i8"))
    return digest.hexdigest()


def vocabulary_checksum(tokens: list[str], doc_term_ids, lengths) -> str:
    digest = hashlib.sha256(b"vocabulary")
    _strings(digest, tokens)
    _array(digest, doc_term_ids)
    _array(digest, lengths)
    return digest.hexdigest()


def _verify(path: Path, stored, computed: str) -> None:
    if stored != computed:
        raise ChecksumMismatch(f"{path}: content does not match its checksum")


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
            except ChecksumMismatch:  # decodes, but not what was written: say so
                warn(f"cache entry {path} does not match its checksum (edited or damaged); rebuilding it")
                path.unlink(missing_ok=True)
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
                _load_npz,
            )

        return vocabulary


def _save_chunks(chunks: list[Chunk], path: Path) -> None:
    columns = {
        "section_id": [c.section_id for c in chunks],
        "ordinal": [c.ordinal for c in chunks],
        "text": [c.text for c in chunks],
        "start": [c.start for c in chunks],
        "end": [c.end for c in chunks],
    }
    checksum = chunks_checksum(*columns.values())
    types = {"section_id": pa.string(), "ordinal": pa.int32(), "text": pa.string(), "start": pa.int64(), "end": pa.int64()}
    # from numpy buffers: pa.array of a list imports pandas when it is installed (0.5 s a sweep)
    table = pa.table({name: arrow_column(columns[name], type_) for name, type_ in types.items()}, metadata={CHECKSUM: checksum})
    pq.write_table(table, path)


def _load_chunks(path: Path) -> list[Chunk]:
    # ParquetFile, not pq.read_table: read_table imports pyarrow.dataset (about 0.2 s of
    # CPU, once per sweep process) for a single file it does not need it for
    table = pq.ParquetFile(path).read()
    columns = [table.column(name).to_pylist() for name in ("section_id", "ordinal", "text", "start", "end")]
    stored = (table.schema.metadata or {}).get(CHECKSUM.encode(), b"").decode()
    _verify(path, stored, chunks_checksum(*columns))
    return list(map(Chunk, *columns))


def _save_npz(vocabulary: Vocabulary, tmp: Path) -> None:
    checksum = vocabulary_checksum(list(vocabulary.ids), vocabulary.doc_term_ids, vocabulary.lengths)
    with open(tmp, "wb") as handle:  # a file object: np.savez would add ".npz" to a name
        vocabulary.save(handle, **{CHECKSUM: np.array(checksum)})


def _load_npz(path: Path) -> Vocabulary:
    with np.load(path, allow_pickle=False) as data:
        tokens, ids, lengths = data["tokens"].tolist(), data["doc_term_ids"], data["lengths"]
        stored = str(data[CHECKSUM]) if CHECKSUM in data.files else ""
    _verify(path, stored, vocabulary_checksum(tokens, ids, lengths))
    return Vocabulary(tokens, ids, lengths)
