"""What a Parquet column chunk decompresses to, from its bytes, before Arrow reads it.

A footer's ``total_uncompressed_size`` is what the writer declared; what a reader
allocates is what each page's header declares (``uncompressed_page_size``), and a
highly compressed page (zstd, gzip) can declare gigabytes in a few kilobytes. So the
bound of :mod:`receval.results.bounded` takes, per column chunk:

- for an uncompressed or Snappy chunk (what receval writes), its compressed size times
  the codec's largest expansion (:data:`MAX_EXPANSION`: Snappy's longest copy, 64 bytes,
  takes 3 bytes; a page that claims more fails Snappy's own length check before it is
  written), no page read;
- otherwise, or when that bound is too loose to pass, the sum of its pages' declared
  sizes, read from the page headers themselves (:func:`page_bytes`).

The page headers are Thrift compact structs (the Parquet format's ``PageHeader``,
https://github.com/apache/parquet-format/blob/master/src/main/thrift/parquet.thrift;
the encoding: https://github.com/apache/thrift/blob/master/doc/specs/thrift-compact-protocol.md),
read here with depth, length and page-count limits, so a hostile header is a
:class:`PageError`, never a hang.
"""

from __future__ import annotations

from typing import NamedTuple

#: Largest decompressed/compressed ratio of a codec whose decoder checks the length it
#: declares (Snappy: a 64-byte copy in 3 bytes, https://github.com/google/snappy/blob/main/format_description.txt).
MAX_EXPANSION = {"UNCOMPRESSED": 1, "SNAPPY": 22}
MAX_PAGES = 200_000  # pages walked in one file
MAX_DEPTH = 8  # Thrift structs nested in a page header


class PageError(ValueError):
    """A column chunk whose page headers cannot be read (cut short, out of range, nested too deep)."""


class _Compact:
    """A reader of Thrift's compact protocol over ``data[pos:end]``: the struct fields a
    page header's sizes need, every other field skipped."""

    def __init__(self, data, pos: int, end: int):
        self.data, self.pos, self.end = data, pos, end

    def byte(self) -> int:
        if self.pos >= self.end:
            raise PageError("a page header runs past its column chunk")
        value = self.data[self.pos]
        self.pos += 1
        return value

    def varint(self) -> int:
        value = shift = 0
        while True:
            b = self.byte()
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise PageError("a page header holds an integer longer than 64 bits")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def skip(self, count: int) -> None:
        if count < 0 or self.pos + count > self.end:
            raise PageError("a page header runs past its column chunk")
        self.pos += count

    def struct(self, depth: int = 0) -> dict[int, object]:
        """Field id -> value: integers and booleans, nested structs as dicts, the rest None."""
        if depth > MAX_DEPTH:
            raise PageError(f"a page header nests more than {MAX_DEPTH} structs")
        fields: dict[int, object] = {}
        last = 0
        while (head := self.byte()) != 0:
            kind, delta = head & 0x0F, head >> 4
            last = last + delta if delta else self.zigzag()
            fields[last] = self.value(kind, depth)
        return fields

    def value(self, kind: int, depth: int):
        if kind in (1, 2):  # a struct field's boolean lives in its type
            return kind == 1
        if kind == 3:
            return self.byte()
        if kind in (4, 5, 6):
            return self.zigzag()
        if kind == 7:
            self.skip(8)
        elif kind == 8:
            self.skip(self.varint())
        elif kind in (9, 10):
            head = self.byte()
            size = head >> 4 if head >> 4 != 15 else self.varint()
            self._skip_items(size, [head & 0x0F], depth)
        elif kind == 11:
            size = self.varint()
            if size:
                head = self.byte()
                self._skip_items(size, [head >> 4, head & 0x0F], depth)
        elif kind == 12:
            return self.struct(depth + 1)
        elif kind == 13:
            self.skip(16)
        else:
            raise PageError(f"a page header holds Thrift type {kind}, which is no type")
        return None

    def _skip_items(self, size: int, kinds: list[int], depth: int) -> None:
        if size > self.end - self.pos:  # every item takes a byte at least
            raise PageError("a page header runs past its column chunk")
        for _ in range(size):
            for kind in kinds:
                if kind in (1, 2):  # a boolean in a list or map is one byte
                    self.byte()
                else:
                    self.value(kind, depth + 1)


def chunk_range(column) -> tuple[int, int]:
    """(start, end) of a column chunk's pages in the file, as Arrow reads them: from the
    dictionary page when there is one before the data pages."""
    start = column.data_page_offset
    dictionary = column.dictionary_page_offset
    if column.has_dictionary_page and dictionary and 0 < dictionary < start:
        start = dictionary
    return start, start + column.total_compressed_size


class Walk(NamedTuple):
    """A column chunk's pages: the bytes they declare decompressed, how many, and the
    bytes of their headers (with ``declared``, the footer's total when it is honest)."""

    declared: int
    pages: int
    headers: int


def page_bytes(data, column, budget: int) -> Walk:
    """The pages of ``column`` (``pyarrow`` column chunk metadata) of the Parquet file
    ``data``, walked from their headers; a :class:`PageError` when the chunk leaves the
    file, a header cannot be read, or more than ``budget`` pages are walked."""
    start, end = chunk_range(column)
    if start < 4 or end > len(data) - 8 or end < start:  # "PAR1", then the footer and "PAR1"
        raise PageError(f"its column chunk {column.path_in_schema!r} lies outside the file")
    total = count = headers = 0
    pos = start
    while pos < end:
        count += 1
        if count > budget:
            raise PageError(f"more than {MAX_PAGES:,} pages")
        reader = _Compact(data, pos, end)
        header = reader.struct()
        uncompressed, compressed = header.get(2), header.get(3)
        if not all(isinstance(size, int) and size >= 0 for size in (uncompressed, compressed)):
            raise PageError(f"a page of {column.path_in_schema!r} declares no sizes")
        total += uncompressed
        headers += reader.pos - pos
        pos = reader.pos + compressed
    if pos != end:
        raise PageError(f"the pages of {column.path_in_schema!r} run past their column chunk")
    return Walk(total, count, headers)


def expansion_bound(column) -> int | None:
    """Decompressed bytes a chunk can reach without reading its pages (:data:`MAX_EXPANSION`), None for other codecs."""
    ratio = MAX_EXPANSION.get(str(column.compression).upper())
    return None if ratio is None else ratio * column.total_compressed_size
