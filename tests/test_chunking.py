"""Tests for receval.chunking: windows stay inside sections, cover every word, overlap
exactly, end at the last word, never nest; whole sections; heading prefixes; checks."""

from __future__ import annotations

import pytest

from receval.chunking import Chunk
from receval.chunking.words import check_chunking, chunk_sections, window_starts
from receval.datasets import Section
from receval.core.errors import ConfigError


def section(sid: str, n_words: int, heading_path=("Page", "Heading")) -> Section:
    words = " ".join(f"{sid}-w{i}" for i in range(n_words))
    return Section(f"page#{sid}", "page", tuple(heading_path), words)


def word_positions(chunk: Chunk, sid: str) -> list[int]:
    words = chunk.text.split()
    assert all(w.startswith(f"{sid}-w") for w in words), chunk
    return [int(w.split("-w")[1]) for w in words]


def greedy_windows(n_words: int, max_words: int, overlap: int) -> list[range]:
    """Reference: slide by max_words - overlap until a window reaches the last word."""
    windows, start = [], 0
    while True:
        windows.append(range(start, min(start + max_words, n_words)))
        if start + max_words >= n_words:
            return windows
        start += max_words - overlap


@pytest.mark.parametrize("max_words", range(1, 13))
@pytest.mark.slow
def test_window_grid(max_words):
    """n_words 1..60 x overlap 0..max_words-1: contiguous windows inside the section,
    every word covered, consecutive windows sharing exactly ``overlap`` words, the
    last ending at the last word, none inside another."""
    for n_words in range(1, 61):
        sec = section("s", n_words)
        for overlap in range(max_words):
            chunks = chunk_sections([sec], max_words, overlap, headings=False)
            windows = [word_positions(c, "s") for c in chunks]
            assert [c.ordinal for c in chunks] == list(range(len(chunks)))
            assert all(c.section_id == sec.id for c in chunks)
            for w in windows:
                assert w == list(range(w[0], w[0] + len(w)))  # contiguous, in order
                assert 1 <= len(w) <= max_words
            assert windows[0][0] == 0
            assert windows[-1][-1] == n_words - 1
            assert set().union(*map(set, windows)) == set(range(n_words))
            for prev, cur in zip(windows, windows[1:]):
                assert len(set(prev) & set(cur)) == overlap
                assert cur[0] > prev[0] and cur[-1] > prev[-1]  # no nesting
                assert len(prev) == max_words  # only the last window may be short
            assert windows == [list(r) for r in greedy_windows(n_words, max_words, overlap)]
            assert [w[0] for w in windows] == window_starts(n_words, max_words, overlap)


def test_windows_never_cross_sections():
    sections = [section("a", 7), section("b", 1), section("c", 12), section("d", 3)]
    chunks = chunk_sections(sections, max_words=4, overlap=1, headings=False)
    assert [c.section_id for c in chunks] == (
        ["page#a"] * 2 + ["page#b"] + ["page#c"] * 4 + ["page#d"]
    )
    for c in chunks:
        sid = c.section_id.split("#")[1]
        word_positions(c, sid)  # every word of the chunk is a word of its section
    for s in sections:
        sid = s.id.split("#")[1]
        covered = {p for c in chunks if c.section_id == s.id for p in word_positions(c, sid)}
        assert covered == set(range(len(s.text.split())))
    assert [c.id for c in chunks][:3] == ["page#a@0", "page#a@1", "page#b@0"]


def test_worked_windows():
    sec = Section("p#s", "p", ("P", "S"), "one two three four five six seven")
    chunks = chunk_sections([sec], max_words=3, overlap=1, headings=False)
    assert [c.text for c in chunks] == ["one two three", "three four five", "five six seven"]
    chunks = chunk_sections([sec], max_words=3, overlap=0, headings=False)
    assert [c.text for c in chunks] == ["one two three", "four five six", "seven"]


def test_max_words_none_keeps_each_section_whole():
    sections = [
        Section("p#a", "p", ("P", "A"), "first  line\nsecond line"),
        Section("p#b", "p", ("P",), " ".join(["w"] * 500)),
    ]
    chunks = chunk_sections(sections, max_words=None, overlap=0, headings=False)
    assert [(c.section_id, c.ordinal, c.text) for c in chunks] == [
        ("p#a", 0, "first  line\nsecond line"),
        ("p#b", 0, sections[1].text),
    ]
    # overlap is ignored for whole sections
    assert chunk_sections(sections, max_words=None, overlap=7, headings=False) == chunks


def test_headings_prefix_every_window():
    sec = Section("fines#late-returns", "fines", ("Fines", "Late returns"), "a b c d e")
    chunks = chunk_sections([sec], max_words=2, overlap=0, headings=True)
    assert [c.text for c in chunks] == [
        "Fines > Late returns\na b",
        "Fines > Late returns\nc d",
        "Fines > Late returns\ne",
    ]
    whole = chunk_sections([sec], max_words=None, headings=True)
    assert [c.text for c in whole] == ["Fines > Late returns\na b c d e"]
    # heading words do not count towards max_words
    assert all(len(c.text.split("\n", 1)[1].split()) <= 2 for c in chunks)


def test_headings_default_on():
    sec = Section("p#x", "p", ("P", "X"), "word")
    assert chunk_sections([sec], max_words=5)[0].text == "P > X\nword"


@pytest.mark.parametrize(
    "max_words, overlap, message",
    [
        (0, 0, r"chunking\.max_words=0: out of range; use an integer in \[1, 1000000\], or null for whole sections"),
        (-3, 0, r"chunking\.max_words=-3"),
        (5, -1, r"chunking\.overlap=-1: out of range; use an integer in \[0, 1000000\]"),
        (None, -1, r"chunking\.overlap=-1"),
        (3, 3, r"chunking\.overlap=3 must be smaller than chunking\.max_words=3"),
        (3, 4, r"chunking\.overlap=4 must be smaller than chunking\.max_words=3"),
    ],
)
def test_invalid_settings_raise(max_words, overlap, message):
    with pytest.raises(ConfigError, match=message):
        check_chunking(max_words, overlap)
    with pytest.raises(ConfigError, match=message):
        chunk_sections([section("s", 3)], max_words, overlap)


@pytest.mark.parametrize("max_words, overlap", [(1, 0), (5, 4), (None, 0), (None, 10)])
def test_valid_settings_pass(max_words, overlap):
    check_chunking(max_words, overlap)  # raises nothing
    assert len(chunk_sections([section("s", 6)], max_words, overlap)) >= 1
