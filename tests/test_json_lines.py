"""chunks.json written item by item (receval.results.write.json_lines): the same data
back, its length its bytes, and a file past the limit not written at all."""

from __future__ import annotations

import json

import pytest

from receval.results.write import TooLargeJson, json_lines, write_json_lines

DATA = {"chunks": {"c2": ["s1", 0, 4, "été\n\"x\""], "c1": ["s1", 5, 9, "b"]}, "sections": {}, "top": 10,
        "evidence": {"q1": {"found": {"e": 1}, "holds": {}, "passages": {"e": "ü"}}}, "run_id": "r"}


def test_the_pieces_read_back_as_the_data_and_count_their_bytes(tmp_path):
    text = "".join(json_lines(DATA))
    assert json.loads(text) == DATA
    assert len(text) == len(text.encode("utf-8"))  # ASCII: a piece's length is its bytes
    write_json_lines(tmp_path / "chunks.json", DATA)
    assert (tmp_path / "chunks.json").read_bytes() == text.encode()


def test_a_file_past_its_limit_is_not_written(tmp_path):
    size = len("".join(json_lines(DATA)))
    with pytest.raises(TooLargeJson):
        write_json_lines(tmp_path / "chunks.json", DATA, limit=size - 1)
    assert list(tmp_path.iterdir()) == []  # no file, no temporary left
    write_json_lines(tmp_path / "chunks.json", DATA, limit=size)
    assert json.loads((tmp_path / "chunks.json").read_text()) == DATA
