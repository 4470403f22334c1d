"""results.parquet bounded as decoded, before it is decoded (:mod:`receval.results.bounded`,
:mod:`receval.results.pages`): a dictionary entry counts at every use, a compressed page
counts what its header declares, a string's length is checked on the dictionary."""

from __future__ import annotations

import io
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import run_of
from forge import forged

from receval.core.errors import RunError
from receval.results import bounded, pages
from receval.results.door import open_run
from receval.results.format import META_KEY, RESULTS


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    return run_of(tmp_path_factory, "retriever=bm25")


def with_question(good: Path, where: Path, text: str, rows: int, plain: bool = False, **options) -> Path:
    """A copy of ``good`` with ``rows`` questions whose text is ``text``, written as a
    hostile writer would: one dictionary entry used by every row (``plain``: each row
    stored in full), a string column to any reader. Resealed, not tied (reading the rows
    back to tie them would expand them)."""
    shutil.copytree(good, where)
    table = pq.read_table(good / RESULTS)
    meta = table.schema.metadata[META_KEY].decode()
    table = pa.concat_tables([table] * (rows // table.num_rows + 1)).slice(0, rows)
    table = table.set_column(0, "question_id", pa.array([f"q{i}" for i in range(rows)]))
    index = table.schema.get_field_index("question")
    if plain:
        question = pa.array([text] * rows)
    else:
        question = pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, np.int32)), pa.array([text]))
    table = table.set_column(index, "question", question).replace_schema_metadata(None)
    with pq.ParquetWriter(where / RESULTS, table.schema, store_schema=False,
                          dictionary_pagesize_limit=64 << 20, **options) as writer:
        writer.write_table(table)
        writer.add_key_value_metadata({META_KEY.decode(): meta})
    return forged(where, agree=False)


def test_dictionary_bomb_a_5_mb_question_over_600_rows_is_refused_on_its_dictionary(good, tmp_path):
    """The hostile trial's file: 0.3 MB on disk, its footer counting the 5 MB dictionary
    page once, 3 GB once each row holds its copy. Refused from the dictionary's longest
    entry, before any row holds a copy."""
    folder = with_question(good, tmp_path / "bomb", "x" * 5_000_000, 600)
    assert (folder / RESULTS).stat().st_size < 400_000
    column = pq.ParquetFile(folder / RESULTS).metadata.row_group(0).column(3)
    assert column.path_in_schema == "question" and column.total_uncompressed_size < 5_100_000
    with pytest.raises(RunError, match=r"results\.parquet: column 'question' holds a string of 5,000,000 characters "
                                       r"\(at most 100,000 in a question\)"):
        open_run(folder)


def test_dictionary_bomb_within_the_text_limit_counts_each_use(good, tmp_path, monkeypatch):
    """64 KB questions (within the text limit), one entry over 300 rows: 19.7 MB decoded,
    counted at each use against the decoded bound, before it is expanded."""
    folder = with_question(good, tmp_path / "bomb", "y" * 65_536, 300)
    assert (folder / RESULTS).stat().st_size < 100_000
    monkeypatch.setattr(bounded, "MAX_DECODED_BYTES", 8 << 20)
    with pytest.raises(RunError, match=r"the columns read would decode to 19,[\d,]+ bytes \(at most 8,388,608; "
                                       r"column 'question' 19,66[\d,]+: a dictionary-encoded string counts "
                                       r"at each use\)"):
        open_run(folder)
    monkeypatch.setattr(bounded, "MAX_DECODED_BYTES", 32 << 20)  # under the bound: read, and equal to the plain file
    plain = with_question(good, tmp_path / "plain", "y" * 65_536, 300, plain=True)
    tables = [bounded.read_results(f / RESULTS, (f / RESULTS).read_bytes(), frozenset())[0] for f in (folder, plain)]
    assert tables[0].equals(tables[1]) and tables[0].column("question").type == pa.string()


def test_dictionary_bomb_decoded_bytes_equal_the_plain_columns(good):
    """The count of decoded bytes is each entry's length at each use: for a plain column
    read as a dictionary, the plain column's own string bytes plus its offsets."""
    table = pq.read_table(good / RESULTS)
    read = pq.ParquetFile(good / RESULTS, read_dictionary=["question", "kind"]).read(columns=["question", "kind"])
    for name in ("question", "kind"):
        (chunk,) = read.column(name).chunks
        strings = sum(len(v.encode()) for v in table.column(name).to_pylist() if v is not None)
        assert bounded.decoded_bytes(chunk) == strings + 4 * len(chunk)


@pytest.mark.slow
@pytest.mark.parametrize(("text", "rows", "words"), [
    ("x" * 5_000_000, 600, "column 'question' holds a string of 5,000,000 characters"),
    ("z" * 99_000, 45_000, "the columns read would decode to 4,4"),
], ids=["5MB-x-600", "99KB-x-45000"])
def test_dictionary_bomb_report_refuses_it_with_one_message_under_1_gib(good, tmp_path, text, rows, words):
    """``receval report --per-question`` (which reads the questions' text; without it the
    streamed report never decodes that column) on the dictionary bombs (3 GB and 4.5 GB decoded, from files
    of 0.3 MB and 1 MB): exit 2, one message, and the process's peak memory (its maximum
    resident set, measured by a parent of its own) under 1 GiB."""
    folder = with_question(good, tmp_path / "bomb", text, rows)
    assert (folder / RESULTS).stat().st_size < 2_000_000
    measure = (
        "import resource, subprocess, sys, json\n"
        "done = subprocess.run([sys.executable, '-m', 'receval', 'report', sys.argv[1], '--per-question'],\n"
        "                      capture_output=True, text=True)\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024\n"
        "print(json.dumps({'code': done.returncode, 'err': done.stderr, 'peak': peak}))\n"
    )
    done = subprocess.run([sys.executable, "-c", measure, str(folder)], capture_output=True, text=True, timeout=300)
    result = json.loads(done.stdout)
    lines = result["err"].strip().splitlines()
    assert result["code"] == 2 and len(lines) == 1 and lines[0].startswith("receval: error: "), result["err"]
    assert words in lines[0] and "Traceback" not in result["err"]
    assert result["peak"] < 1 << 30, f"peak resident memory {result['peak']:,} bytes"


# ----------------------------------------------------------------- pages


def zstd_bomb(good: Path, where: Path) -> Path:
    """300 questions of 40 KB each, stored plain and zstd-compressed: 12 MB in pages that
    take a few KB, the footer's own total aside."""
    return with_question(good, where, "w" * 40_000, 300, plain=True, compression="zstd", use_dictionary=False)


def test_a_compressed_page_bomb_is_refused_from_its_page_headers_before_any_row_is_read(good, tmp_path, monkeypatch):
    folder = zstd_bomb(good, tmp_path / "bomb")
    assert (folder / RESULTS).stat().st_size < 200_000
    monkeypatch.setattr(bounded, "MAX_DECODED_BYTES", 4 << 20)

    def never(*args, **kwargs):
        raise AssertionError("rows were read")

    monkeypatch.setattr(pq.ParquetFile, "read", never)
    with pytest.raises(RunError, match=r"results\.parquet: its pages decode to 12,[\d,]+ bytes in the columns read "
                                       r"\(at most 4,194,304\)"):
        open_run(folder)


@pytest.mark.parametrize("compression", ["snappy", "zstd", "gzip", "none", "lz4", "brotli"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_page_headers_add_up_to_the_footer_s_totals(good, compression, version):
    """Walked from their headers, a column chunk's pages end where the chunk ends and
    declare what the footer totals (less the headers' own bytes), for every codec and
    both data page versions."""
    table = pq.read_table(good / RESULTS)
    sink = io.BytesIO()
    pq.write_table(table, sink, compression=compression, data_page_version=version, data_page_size=2048)
    data = sink.getvalue()
    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    for c in range(meta.num_columns):
        column = meta.row_group(0).column(c)
        walk = pages.page_bytes(data, column, pages.MAX_PAGES)
        assert walk.declared + walk.headers == column.total_uncompressed_size, column.path_in_schema
        assert walk.pages >= 1 and walk.headers > 0
        bound = pages.expansion_bound(column)
        assert bound is None or walk.declared <= bound


def test_a_hostile_page_header_is_one_message_never_a_hang(good, tmp_path):
    """Bytes of the pages' headers changed at random: each walk ends in sizes or a
    PageError (no other exception, no loop); in a run folder, one message."""
    sink = io.BytesIO()
    pq.write_table(pq.read_table(good / RESULTS), sink, compression="zstd")
    data = sink.getvalue()
    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    columns = [meta.row_group(0).column(c) for c in range(meta.num_columns)]
    rng = random.Random(48)
    for _ in range(300):
        column = rng.choice(columns)
        start, _ = pages.chunk_range(column)
        broken = bytearray(data)
        for at in rng.sample(range(start, start + 24), 3):
            broken[at] = rng.randrange(256)
        try:
            walk = pages.page_bytes(bytes(broken), column, pages.MAX_PAGES)
        except pages.PageError:
            continue
        assert walk.declared >= 0 and 1 <= walk.pages <= pages.MAX_PAGES
    folder = tmp_path / "run"
    shutil.copytree(good, folder)
    start, _ = pages.chunk_range(columns[3])
    broken = bytearray(data)
    broken[start:start + 8] = b"\x8c" * 8  # a field of no Thrift type
    (folder / RESULTS).write_bytes(bytes(broken))
    forged(folder, agree=False)
    with pytest.raises(RunError, match=r"results\.parquet: cannot be read as results \(a page header"):
        open_run(folder)
