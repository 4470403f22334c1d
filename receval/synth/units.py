"""What one question is written from: sections or their chunks, a seeded sample of
them, and (for ``multi``) each unit's partner from another section."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from receval.datasets import Section
from receval.errors import DatasetError


@dataclass(frozen=True)
class Unit:
    """What one question is written from: a section or one of its chunks."""

    id: str
    section_id: str
    page: str
    heading: str
    text: str


def make_units(sections: list[Section], unit: str = "section", chunking=None) -> list[Unit]:
    """Sections, or their chunks (``chunking``: max_words, overlap), as units."""
    if unit == "section":
        return [Unit(s.id, s.id, s.page, s.heading, s.text) for s in sections if s.text.split()]
    from receval.chunking import chunk_sections

    by_id = {s.id: s for s in sections}
    chunks = chunk_sections(sections, chunking.max_words, chunking.overlap, headings=False)
    return [
        Unit(c.id, c.section_id, by_id[c.section_id].page, by_id[c.section_id].heading, c.text)
        for c in chunks
        if c.text.split()
    ]


def _stable_int(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def select_units(units: list[Unit], limit: int | None, seed: int) -> list[Unit]:
    """At most ``limit`` units: a prefix of a seeded permutation, kept in dataset order."""
    if limit is None or limit >= len(units):
        return list(units)
    chosen = np.sort(np.random.default_rng(seed).permutation(len(units))[:limit])
    return [units[i] for i in chosen]


def pick_partners(units: list[Unit], all_units: list[Unit], seed: int) -> dict[str, Unit]:
    """For ``multi``: each unit's partner, a unit of another section (same page if possible)."""
    if len({u.section_id for u in all_units}) < 2:
        raise DatasetError("synth.style=multi pairs two sections, but the dataset has fewer than two")
    by_page: dict[str, list[Unit]] = defaultdict(list)
    for u in all_units:
        by_page[u.page].append(u)
    partners = {}
    for u in units:
        rng = np.random.default_rng([seed, _stable_int(u.id)])
        same_page = [v for v in by_page[u.page] if v.section_id != u.section_id]
        if same_page:
            partners[u.id] = same_page[int(rng.integers(len(same_page)))]
            continue
        while True:  # terminates: another section exists
            v = all_units[int(rng.integers(len(all_units)))]
            if v.section_id != u.section_id:
                partners[u.id] = v
                break
    return partners


