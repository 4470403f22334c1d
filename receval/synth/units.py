"""What one question is written from: sections or their chunks, a seeded sample of
them, and (for ``multi``) each unit's partner from another section."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from receval.datasets import Section
from receval.core.errors import DatasetError


@dataclass(frozen=True)
class Unit:
    """What one question is written from: a section or one of its chunks."""

    id: str
    section_id: str
    page: str
    heading: str
    text: str
    start: int = -1  # characters of the page the text comes from (-1: not known)
    end: int = -1


def make_units(sections: list[Section], unit: str = "section", chunking=None) -> list[Unit]:
    """Sections, or their chunks (cut by the ``chunking`` node's chunker, without heading
    prefixes: the heading is sent apart), as units."""
    if unit == "section":
        return [Unit(s.id, s.id, s.page, s.heading, s.text, s.start, s.end) for s in sections if s.text.split()]
    from omegaconf import OmegaConf

    from receval.chunking import cut

    by_id = {s.id: s for s in sections}
    chunks = cut(OmegaConf.merge(chunking, {"headings": False}), sections)
    return [
        Unit(c.id, c.section_id, by_id[c.section_id].page, by_id[c.section_id].heading, c.text, c.start, c.end)
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


