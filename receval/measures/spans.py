"""Labels as spans of the pages, judged against the retrieved chunks.

Pages are laid end to end (one separator character between them), so a span of a
page and a chunk are intervals of one line of characters and chunks of different
pages never overlap. Each answerable question's *units* are its evidence items
when it has any, else its labelled sections (a section is the span of its text).

- Questions with evidence are judged at chunk ranks: item i is found at the first
  rank where chunks 1..r cover ``coverage`` of its characters, whitespace aside (a
  window of words ends at its last word, so the break between two windows is in
  neither)
  (:func:`receval.measures.coverage.found_rank`). The :class:`~receval.run.metrics.Judged` they
  get has, at each rank, the number of items found there, and as its ideal every
  item found at rank 1 (so ``ndcg@k`` <= 1 however many items one chunk holds).
- Every answerable question gets the per-chunk-rank counts the chunk measures read
  (:class:`~receval.scoring.chunks.ChunkRanking`, stored with the run, so any k or token
  budget can be derived later), tokens being the whitespace-separated words of the page
  (the unit ``chunking.max_words`` counts), except that each CJK character is a token of
  its own (:func:`~receval.chunking.wordspans.token_spans`: Chinese or Japanese text has
  no spaces, so a whole paragraph would be one token): each ranked chunk's tokens, the
  tokens of the page it adds to the union of the chunks above it, and the tokens of the
  question's units it adds to those covered; with alpha-nDCG's gains
  (:mod:`receval.measures.novelty`). ``token_recall@k``, ``token_precision@k``,
  ``token_iou@k``, ``context_tokens@k``, ``redundancy@k`` and ``alpha_ndcg@k`` follow by
  the formulas of :mod:`receval.scoring.chunks`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from receval.measures.coverage import covered_by_rank, found_rank, union_by_rank
from receval.measures.novelty import covering_chunks, evidence_gains, evidence_ideal, section_gains, section_ideal
from receval.measures.ranks import chunk_columns, token_columns  # noqa: F401  (token_columns re-exported)
from receval.datasets import Question, Section
from receval.run.metrics import Judged
from receval.scoring.chunks import ChunkRanking
from receval.scoring.rows import EvidenceJudgement, judge
from receval.chunking.wordspans import token_spans  # the one word rule (the chunkers count the same)


class PageLine:
    """Global character coordinates of every page and section."""

    def __init__(self, sections: list[Section], pages: dict[str, str]):
        length: dict[str, int] = {}
        for section in sections:
            length[section.page] = max(length.get(section.page, 0), section.end)
        for page, text in pages.items():
            length[page] = len(text)
        names = list(length)
        sizes = np.fromiter((length[p] for p in names), np.int64, len(names))
        bases = np.concatenate([[0], np.cumsum(sizes + 1)[:-1]]).astype(np.int64)
        self.base = dict(zip(names, bases.tolist()))
        self.sections = sections
        self.pages = pages

    def page_text(self, page: str, by_page: dict[str, list[Section]]) -> str:
        if page in self.pages:
            return self.pages[page]
        held = by_page[page]
        if len(held) == 1 and held[0].start == 0:  # one section from the page's start (BEIR): its text
            return held[0].text
        chars = [" "] * max(s.end for s in held)
        for s in by_page[page]:
            chars[s.start : s.end] = s.text
        return "".join(chars)

    BLOCK = 1 << 18  # characters of page text turned into word spans at a time

    def locate(self, needed: set[str], positions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For each global character position x, counting the words of the ``needed``
        pages only: the words ending at or before x, the words starting before x, and
        the letters (non-whitespace characters) before x.

        The pages are read in base order, about :attr:`BLOCK` characters at a time (a
        block's words end inside it: pages are joined by a space), so memory follows
        the block, not the corpus: a whole corpus's word offsets at 8 bytes each would
        be several times its text."""
        names = sorted(needed, key=self.base.__getitem__)
        by_page: dict[str, list[Section]] = {}
        for s in self.sections:
            if s.page in needed and s.page not in self.pages:
                by_page.setdefault(s.page, []).append(s)
        order = np.argsort(positions, kind="stable")
        x = positions[order]
        ends_le, starts_lt, letters = (np.zeros(x.size, np.int64) for _ in range(3))
        words = chars = done = 0  # words and letters of earlier blocks; positions answered
        sizes = np.fromiter((self.size(p, by_page) for p in names), np.int64, len(names))
        cuts = np.flatnonzero(np.diff(np.cumsum(sizes + 1) // self.BLOCK, prepend=0)) + 1
        for lo, hi in zip([0, *cuts.tolist()], [*cuts.tolist(), len(names)]):
            if lo >= hi:
                continue
            texts = [self.page_text(p, by_page) for p in names[lo:hi]]
            starts, ends = token_spans(" ".join(texts))
            joined_base = np.concatenate([[0], np.cumsum([len(t) + 1 for t in texts])[:-1]]).astype(np.int64)
            shift = np.asarray([self.base[p] for p in names[lo:hi]], np.int64) - joined_base
            page = np.searchsorted(joined_base, starts, side="right") - 1
            starts, ends = starts + shift[page], ends + shift[page]
            first = int(np.searchsorted(x, self.base[names[lo]], side="left"))
            last = int(np.searchsorted(x, self.base[names[hi - 1]] + len(texts[-1]), side="right"))
            ends_le[done:first], starts_lt[done:first], letters[done:first] = words, words, chars
            here = x[first:last]
            t = np.searchsorted(ends, here, side="right")
            within = np.clip(here - starts[np.minimum(t, len(starts) - 1)], 0, None) if len(starts) else 0
            cumulative = np.concatenate([[0], np.cumsum(ends - starts)])
            ends_le[first:last] = words + t
            starts_lt[first:last] = words + np.searchsorted(starts, here, side="left")
            letters[first:last] = chars + cumulative[t] + np.where(t < len(starts), within, 0)
            words, chars, done = words + len(starts), chars + int(cumulative[-1]), last
        ends_le[done:], starts_lt[done:], letters[done:] = words, words, chars
        located = [np.empty_like(a) for a in (ends_le, starts_lt, letters)]
        for out, a in zip(located, (ends_le, starts_lt, letters)):
            out[order] = a
        return tuple(located)

    def size(self, page: str, by_page: dict[str, list[Section]]) -> int:
        """Characters of ``page``'s text (as :meth:`page_text` gives it)."""
        if page in self.pages:
            return len(self.pages[page])
        return max(s.end for s in by_page[page])


def _merged(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(s, e) for s, e in out]


def _units(questions: list[Question], sections: list[Section], line: PageLine) -> tuple:
    """Each answerable question's units as merged intervals of the page line: (rows,
    starts, ends) int64 arrays, which rows are judged on evidence, and the pages they lie on."""
    section_by_id = {s.id: s for s in sections}
    rows, starts, ends, needed = [], [], [], set()
    by_evidence = np.zeros(len(questions), dtype=bool)
    for row, q in enumerate(questions):
        if q.evidence:
            by_evidence[row] = True
            units = [(line.base[e.page] + e.start, line.base[e.page] + e.end) for e in q.evidence]
            needed.update(e.page for e in q.evidence)
        else:
            labelled = [section_by_id[sid] for sid, grade in q.relevant.items() if grade >= 1]
            units = [(line.base[s.page] + s.start, line.base[s.page] + s.end) for s in labelled]
            needed.update(s.page for s in labelled)
        for start, end in _merged(units):
            rows.append(row)
            starts.append(start)
            ends.append(end)
    arrays = (np.asarray(rows, np.int64), np.asarray(starts, np.int64), np.asarray(ends, np.int64))
    return (*arrays, by_evidence, needed)


def judge_spans(
    questions: list[Question],
    sections: list[Section],
    pages: dict[str, str],
    chunk_section: np.ndarray,
    chunk_start: np.ndarray,
    chunk_end: np.ndarray,
    chunk_idx: np.ndarray,
    ks: list[int],
    coverage: float,
    novelty: bool = True,
) -> EvidenceJudgement:
    """Evidence judgement, the per-chunk-rank counts and the chunk measures at ``ks``
    for every question (see the module doc); ``novelty``: also alpha-nDCG's gains
    (:mod:`receval.measures.novelty`)."""
    line = PageLine(sections, pages)
    section_base = np.fromiter((line.base[s.page] for s in sections), np.int64, len(sections))
    base = section_base[chunk_section] if len(chunk_section) else np.zeros(0, np.int64)
    g_start, g_end = base + chunk_start, base + chunk_end
    n_rows, depth = chunk_idx.shape
    ok = chunk_idx >= 0
    at = np.maximum(chunk_idx, 0)
    ranked_start = np.where(ok, g_start[at] if len(g_start) else 0, 0)
    ranked_end = np.where(ok, g_end[at] if len(g_end) else 0, 0)
    rows_a, starts_a, ends_a, by_evidence, needed = _units(questions, sections, line)
    ev = by_evidence[rows_a] if rows_a.size else np.zeros(0, bool)
    # the words of every page a label or a retrieved chunk is on
    for section_idx in np.unique(chunk_section[at[ok]]) if len(chunk_section) else []:
        needed.add(sections[int(section_idx)].page)
    on_pages = _on_item_pages(questions, sections, chunk_section) if novelty and ev.any() else np.zeros(0, np.int64)
    # every position a measure needs, located among the words of those pages at once
    at_pages = [starts_a, ends_a, ranked_start.ravel(), ranked_end.ravel(), g_start[on_pages], g_end[on_pages]]
    ends_le, starts_lt, letters = line.locate(needed, np.concatenate(at_pages).astype(np.int64))
    bounds = np.cumsum([0, *(a.size for a in at_pages)])
    part = [slice(bounds[i], bounds[i + 1]) for i in range(len(at_pages))]
    shape = ranked_start.shape
    chunk_l0 = np.where(ok, letters[part[2]].reshape(shape), 0)
    chunk_l1 = np.where(ok, letters[part[3]].reshape(shape), 0)

    # evidence questions: items found at chunk ranks
    item_l0, item_l1 = letters[part[0]][ev], letters[part[1]][ev]
    covered = covered_by_rank(item_l0, item_l1, chunk_l0[rows_a[ev]], chunk_l1[rows_a[ev]])
    found = found_rank(covered, item_l1 - item_l0, coverage)
    gains = np.zeros((n_rows, depth), dtype=np.float64)
    hit = found > 0
    np.add.at(gains, (rows_a[ev][hit], found[hit] - 1), 1.0)
    n_items = np.bincount(rows_a[ev], minlength=n_rows).astype(np.int64)
    judged = Judged(gains=gains, ideal=n_items[:, None].astype(np.float64), n_relevant=n_items, units=gains)

    # tokens: what each chunk holds, adds to the union above it, and adds of the units
    chunk_t0 = ends_le[part[2]].reshape(shape)  # words wholly before a chunk's start
    chunk_t1 = np.where(ok, np.maximum(starts_lt[part[3]].reshape(shape), chunk_t0), chunk_t0)  # begun before its end
    inter = np.zeros((n_rows, depth), dtype=np.int64)
    np.add.at(inter, rows_a, covered_by_rank(ends_le[part[0]], starts_lt[part[1]], chunk_t0[rows_a], chunk_t1[rows_a]))
    union = union_by_rank(chunk_t0, chunk_t1)
    ranking = ChunkRanking(
        lengths=ok.sum(axis=1), words=chunk_t1 - chunk_t0, new=_increments(union), evidence=_increments(inter),
        evidence_total=np.bincount(rows_a, weights=starts_lt[part[1]] - ends_le[part[0]], minlength=n_rows).astype(np.int64),
    )
    if novelty:
        items = (starts_a[ev], ends_a[ev], item_l0, item_l1)
        others = (g_start[on_pages], g_end[on_pages], letters[part[4]], letters[part[5]])
        alone = _alone(item_l0, item_l1, chunk_l0[rows_a[ev]], chunk_l1[rows_a[ev]], coverage)
        copies = covering_chunks(items, others, coverage)
        ranking = _with_novelty(ranking, questions, sections, chunk_section, chunk_idx, by_evidence,
                                (rows_a[ev], found, alone, copies))
    answerable = np.asarray([q.answerable for q in questions], dtype=bool)
    return EvidenceJudgement(by_evidence=by_evidence, judged=judged, columns=chunk_columns(ranking, ks, answerable),
                             ranking=ranking)


def _on_item_pages(questions: list[Question], sections: list[Section], chunk_section: np.ndarray) -> np.ndarray:
    """The chunks on a page an evidence item is on: those that may alone cover it
    (alpha-nDCG's copies of an item, :func:`receval.measures.novelty.covering_chunks`)."""
    pages = {e.page for q in questions for e in q.evidence}
    if not pages or not len(chunk_section):
        return np.zeros(0, np.int64)
    on = np.fromiter((s.page in pages for s in sections), bool, len(sections))
    return np.flatnonzero(on[chunk_section])


def _increments(cumulative: np.ndarray) -> np.ndarray:
    """(Q, K) what each rank adds to a cumulative count."""
    return np.diff(cumulative, axis=1, prepend=0) if cumulative.shape[1] else cumulative


def _alone(item_l0, item_l1, chunk_l0, chunk_l1, coverage: float) -> np.ndarray:
    """(N, K) whether the chunk at each rank alone covers ``coverage`` of the item's letters."""
    overlap = np.clip(np.minimum(item_l1[:, None], chunk_l1) - np.maximum(item_l0[:, None], chunk_l0), 0, None)
    length = (item_l1 - item_l0)[:, None]
    return (overlap >= coverage * length) & (length > 0)


def _with_novelty(ranking: ChunkRanking, questions, sections, chunk_section, chunk_idx, by_evidence, items):
    """``ranking`` with alpha-nDCG's gains: section units for questions labelled by
    section, evidence items for the others (:mod:`receval.measures.novelty`)."""
    n_rows, depth = chunk_idx.shape
    index = {s.id: i for i, s in enumerate(sections)}
    ranked = np.where(chunk_idx >= 0, chunk_section[np.maximum(chunk_idx, 0)] if len(chunk_section) else -1, -1)
    relevant = judge(ranked.astype(np.int64), questions, index).gains >= 1
    gains = section_gains(ranked, relevant & ~by_evidence[:, None], len(sections))
    per_section = np.bincount(chunk_section, minlength=len(sections)) if len(chunk_section) else np.zeros(len(sections), int)
    labels = [(row, index[sid]) for row, q in enumerate(questions) if not q.evidence
              for sid, grade in q.relevant.items() if grade >= 1]
    label_rows = np.fromiter((r for r, _ in labels), np.int64, len(labels))
    label_copies = per_section[np.fromiter((s for _, s in labels), np.int64, len(labels))]
    ideal = section_ideal(label_rows, label_copies, n_rows, depth)
    rows, found, alone, copies = items
    if rows.size:
        gains += evidence_gains(rows, found, alone, copies, n_rows)
        ideal = np.where(by_evidence[:, None], evidence_ideal(rows, copies, n_rows, depth), ideal)
    return replace(ranking, novelty=gains, novelty_ideal=ideal)
