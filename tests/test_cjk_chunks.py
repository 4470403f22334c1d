"""Chunkers count words by the one rule the token measures use: each CJK character is a
word (:func:`receval.chunking.wordspans.token_spans`), so a Chinese section with no
spaces is cut at ``max_words`` like any other; English chunks are unchanged to the bit."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from receval.chunking import cut
from receval.chunking.wordspans import count_words, join_words, token_spans, word_spans
from receval.datasets import Section, load_dataset
from receval.measures import spans

FIXTURES = Path(__file__).resolve().parent / "fixtures"
HAN = "".join(chr(0x4E00 + i) for i in range(100))  # 100 Han characters, no spaces


def folder(path):
    return load_dataset(OmegaConf.create({"name": "x", "format": "folder", "path": path,
                                          "questions": None, "split": None, "title": True}))


def digest(chunks) -> str:
    h = hashlib.sha256()
    for c in chunks:
        h.update(repr((c.section_id, c.ordinal, c.start, c.end, c.text)).encode())
    return h.hexdigest()[:16]


# Chunk ids, offsets and texts of the built-in library as the chunkers cut them before
# CJK characters were counted as words (commit 6d417c7): counting must not move a bit.
BEFORE = {
    ("words", 120, 0): (99, "f635a056fb136b28"),
    ("words", 20, 5): (393, "20c2628205782594"),
    ("words", 7, 0): (853, "966ee5b4a99832f4"),
    ("paragraphs", 20, 0): (345, "f48b031cef39b498"),
    ("sentences", 20, 5): (418, "ef57d0096aca6818"),
    ("recursive", 7, 0): (966, "628a0c8e9d63afd8"),
}


def test_english_chunks_are_unchanged_to_the_bit():
    library = folder(None)
    for (kind, max_words, overlap), (n, expected) in BEFORE.items():
        fields = {"overlap": overlap} if overlap else {}
        chunks = cut(OmegaConf.create({"kind": kind, "max_words": max_words, **fields}), library.sections)
        assert (len(chunks), digest(chunks)) == (n, expected), (kind, max_words, overlap)


def han_section(text: str = HAN) -> Section:
    return Section(id="zh#a", page="zh", heading_path=("zh",), text=text, start=10, end=10 + len(text))


@pytest.mark.parametrize("kind", ["words", "paragraphs", "sentences", "recursive"])
def test_a_cjk_section_of_100_characters_is_cut_into_5_chunks_of_20(kind):
    page = "x" * 9 + "\n" + HAN
    chunks = cut(OmegaConf.create({"kind": kind, "max_words": 20, "headings": False}), [han_section()])
    assert len(chunks) == 5
    assert [(c.start, c.end) for c in chunks] == [(10 + 20 * i, 30 + 20 * i) for i in range(5)]
    assert all(page[c.start : c.end] == c.text for c in chunks)  # offsets exact, no spaces put in
    assert "".join(c.text for c in chunks) == HAN


def test_mixed_text_is_joined_as_the_page_parts_it():
    text = "Tokyo 東京都 is  big"
    starts, ends = token_spans(text)
    assert [text[s:e] for s, e in zip(starts, ends)] == ["Tokyo", "東", "京", "都", "is", "big"]
    assert join_words(text, starts, ends) == "Tokyo 東京都 is big"  # one space where whitespace was
    assert count_words(text) == 6 and count_words("plain  words\there") == 3
    section = Section(id="p#a", page="p", heading_path=("p",), text=text, start=0, end=len(text))
    chunks = cut(OmegaConf.create({"kind": "words", "max_words": 3, "overlap": 1, "headings": False}), [section])
    assert [c.text for c in chunks] == ["Tokyo 東京", "京都 is", "is big"]
    assert [text[c.start : c.end] for c in chunks] == ["Tokyo 東京", "京都 is", "is  big"]


def test_join_words_is_the_space_join_of_plain_words():
    text = " a  bb\tccc\n\nd "
    starts, ends = word_spans(text)
    assert join_words(text, starts, ends) == " ".join(text.split()) == "a bb ccc d"
    assert join_words("", *word_spans("")) == ""


def test_the_chunkers_and_the_token_measures_count_the_same_words():
    dataset = folder(str(FIXTURES / "cjk"))
    assert spans.token_spans is token_spans  # one rule, imported, not copied
    chunks = cut(OmegaConf.create({"kind": "words", "max_words": 15, "headings": False}), dataset.sections)
    by_section = {s.id: s for s in dataset.sections}
    counts = np.array([len(token_spans(c.text)[0]) for c in chunks])
    assert counts.max() == 15 and len(chunks) > len(dataset.sections)  # the sections were split
    for section in dataset.sections:
        mine = [c for c in chunks if c.section_id == section.id]
        assert sum(len(token_spans(c.text)[0]) for c in mine) == len(token_spans(section.text)[0])
        page = dataset.pages[section.page]
        assert all(token_spans(page[c.start : c.end])[0].size == token_spans(c.text)[0].size for c in mine)
    assert set(by_section) == {c.section_id for c in chunks}


def test_has_cjk_agrees_with_the_one_class_at_every_range_edge():
    """:func:`has_cjk` looks in two cheap steps (BMP, then astral); it must say what one
    search of the whole class says, at each edge of each range and just outside it."""
    from receval.core.cjk import _CJK_ANY, CJK_RANGES, has_cjk

    texts = [f"a{chr(c)}b’" for lo, hi in CJK_RANGES for c in (lo - 1, lo, hi, hi + 1)]
    texts += ["plain", "", "naïve \U0001F600", "\U00020000", "x\U0001F200"]
    got = [has_cjk(t) for t in texts]
    assert got == [_CJK_ANY.search(t) is not None for t in texts]
    edges = np.array(got[: 4 * len(CJK_RANGES)]).reshape(-1, 4)
    assert edges[:, 1:3].all() and got[-5:] == [False, False, False, True, True]  # inside each range; astral CJK
    assert not edges[0, 0] and not edges[-1, 3]  # outside the table (ranges that touch share an edge)


def test_chinese_sentences_are_packed_by_their_characters():
    """Sentences of 12, 7, 8 and 5 characters (sentencex splits at 。！？) within 20 words:
    12 + 7 = 19 fit, 19 + 8 does not; then 8 + 5."""
    text = "借书证可以在服务台办理。请带上身份证！开放时间是几点？每天九点。"
    chunks = cut(OmegaConf.create({"kind": "sentences", "max_words": 20, "headings": False}), [han_section(text)])
    assert [c.text for c in chunks] == ["借书证可以在服务台办理。请带上身份证！", "开放时间是几点？每天九点。"]
    assert [count_words(c.text) for c in chunks] == [19, 13]  # 。 and ！ between CJK characters: a word each
