"""Chunkers: every one keeps page offsets, stays within its budget and never drops words."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from receval.chunking import cut
from receval.chunking.packing import pack
from receval.chunking.paragraphs import paragraph_spans
from receval.chunking.sentences import sentence_spans
from receval.datasets import Section, load_dataset
from receval.run.pipeline import run

FIXTURES = Path(__file__).resolve().parent / "fixtures"
KINDS = ["words", "paragraphs", "sentences", "recursive", "tokens"]


def node(kind: str, **fields):
    size = {"max_tokens": 64} if kind == "tokens" else {"max_words": 40}
    return OmegaConf.create({"kind": kind, **size, **fields})


def essays():
    cfg = OmegaConf.create({"name": "essays", "format": "folder", "path": str(FIXTURES / "essays"),
                            "questions": None, "split": None, "title": True})
    return load_dataset(cfg)


def library():
    return load_dataset(OmegaConf.create({"name": "library", "format": "folder", "path": None,
                                          "questions": None, "split": None, "title": True}))


def words(text: str) -> list[str]:
    return text.split()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("data", [essays, library], ids=["essays", "library"])
def test_offsets_point_at_the_page_and_no_word_is_lost(kind, data):
    dataset = data()
    chunks = cut(node(kind, headings=False), dataset.sections)
    by_section = {s.id: s for s in dataset.sections}
    for chunk in chunks:
        page = dataset.pages[by_section[chunk.section_id].page]
        assert words(page[chunk.start : chunk.end]) == words(chunk.text)  # words joins by spaces
    for section in dataset.sections:  # every word of every section is in some chunk
        covered = np.zeros(section.end - section.start + 1, dtype=bool)
        for chunk in (c for c in chunks if c.section_id == section.id):
            covered[chunk.start - section.start : chunk.end - section.start] = True
        for match in re.finditer(r"\S+", section.text):
            assert covered[match.start() : match.end()].all(), (kind, section.id, match.group())


@pytest.mark.parametrize("kind", ["words", "paragraphs", "sentences", "recursive"])
def test_no_chunk_exceeds_max_words(kind):
    for max_words in (5, 20, 40):
        chunks = cut(node(kind, max_words=max_words, headings=False), essays().sections)
        assert max(len(c.text.split()) for c in chunks) <= max_words


def test_tokens_never_exceed_the_model_limit_with_the_heading():
    from receval.run import components
    from receval.chunking.tokens import Tokens

    for limit in (24, 64, None):
        spec = node("tokens", max_tokens=limit, headings=True)
        chunker = Tokens(components.typed("chunking", spec, "chunking"))
        chunks = cut(spec, library().sections)
        assert chunker.count([c.text for c in chunks]).max() <= (limit or 256)
    whole = cut(node("words", max_words=240), library().sections)
    assert chunker.count([c.text for c in whole]).max() > 256  # the words chunker can exceed it


def test_paragraphs_merge_up_to_the_budget_and_split_long_ones():
    text = "one two three\n\nfour five\n\nsix seven eight nine ten eleven"
    spans = pack(text, paragraph_spans(text), 5)
    assert [text[s:e].split() for s, e in spans] == [
        ["one", "two", "three", "four", "five"],
        ["six", "seven", "eight", "nine", "ten"],
        ["eleven"],
    ]


def test_sentences_know_abbreviations_and_overlap_by_sentences():
    text = "Dr. Smith came at 5 p.m. on Monday. He stayed. Then he left."
    pieces = [text[s:e].strip() for s, e in sentence_spans(text)]
    assert pieces == ["Dr. Smith came at 5 p.m. on Monday.", "He stayed.", "Then he left."]
    spans = pack(text, sentence_spans(text), 10, overlap_units=1)
    assert [text[s:e].strip() for s, e in spans] == [
        "Dr. Smith came at 5 p.m. on Monday. He stayed.",
        "He stayed. Then he left.",
    ]


def test_recursive_splits_at_the_largest_separator_first():
    section = Section("p#s", "p", (), "Alpha beta gamma.\n\nDelta epsilon. Zeta eta theta iota.")
    chunks = cut(node("recursive", max_words=4, headings=False), [section])
    assert [c.text for c in chunks] == ["Alpha beta gamma.", "Delta epsilon.", "Zeta eta theta iota."]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.slow
def test_every_chunker_scores_the_essays_evidence(kind, make_config, tmp_path):
    """Evidence labels work with every chunker: the run's token recall is a share in [0, 1]
    and hit@k never falls as k grows."""
    size = "chunking.max_tokens=64" if kind == "tokens" else "chunking.max_words=40"
    cfg = make_config(f"chunking={kind}", size, "dataset=folder", f"dataset.path={FIXTURES / 'essays'}")
    result = run(cfg, tmp_path)
    assert 0 < result.means["hit@3"] <= result.means["hit@10"] <= 1
