"""What ``report --show`` reads, written when the run is made (``chunks.json``), so showing
a run never reloads its dataset nor cuts its chunks again (:mod:`receval.analysis.show`):

- ``chunks``: each chunk among any question's top ``top`` -> [section id, start, end, text];
- ``sections``: each section among any question's top ``top`` sections, or holding a
  stored chunk -> [heading, text];
- ``evidence``: per question labelled with evidence (quotes or spans), each item's
  ``found`` rank (:func:`receval.measures.spans.judge_spans`, the run's own rule, one item at a
  time), ``holds`` (stored chunk -> [[item, share of the item it holds]]) and ``passages``
  (item -> its text, one line, cut).
"""

from __future__ import annotations

import numpy as np

from receval.datasets import Question
from receval.measures.spans import judge_spans
from receval.results.run_writer import SHOW_TOP, fitting_chunks

PASSAGE_CHARS = 100  # of an evidence item shown beside its label


def show_facts(
    questions: list, sections: list, pages: dict, chunks: list, chunk_idx: np.ndarray, section_idx: np.ndarray,
    coverage: float, top: int,
) -> dict:
    """``chunks.json`` for a run (see the module docstring)."""
    ranked = chunk_idx[:, :top]
    wanted = np.unique(ranked[ranked >= 0]) if chunk_idx.size else np.array([], int)
    stored = {chunks[i].id: [chunks[i].section_id, int(chunks[i].start), int(chunks[i].end), chunks[i].text]
              for i in wanted.tolist()}
    top_sections = section_idx[:, :top]
    keep = set(np.unique(top_sections[top_sections >= 0]).tolist()) if section_idx.size else set()
    index = {s.id: i for i, s in enumerate(sections)}
    keep |= {index[c[0]] for c in stored.values() if c[0] in index}
    shown_sections = {sections[i].id: [sections[i].heading, sections[i].text] for i in sorted(keep)}
    evidence = _evidence(questions, sections, pages, chunks, chunk_idx, coverage, top, index)
    return {"chunks": stored, "sections": shown_sections, "evidence": evidence}


def bounded_show_facts(
    questions: list, sections: list, pages: dict, chunks: list, chunk_idx: np.ndarray, section_idx: np.ndarray,
    coverage: float, top: int = SHOW_TOP,
) -> dict:
    """:func:`show_facts` at the largest of ``top``, 5, 3, 1 ranks whose ``chunks.json``
    stays within the door's bound (:func:`receval.results.run_writer.fitting_chunks`, which
    writes it so); ``top`` says how many ranks it kept (0: none fit)."""
    return fitting_chunks(lambda kept: show_facts(
        questions, sections, pages, chunks, chunk_idx, section_idx, coverage, kept), top)


def unit_facts(sections: list, units: list[str], ranked: np.ndarray, top: int = SHOW_TOP) -> dict:
    """``chunks.json`` for a run ranking sections itself (an imported traces run: ``units``
    are the dataset's sections, then ids it lacks, whose texts the run's ``documents``
    column holds): each section among any question's top ``top`` -> [heading, text]."""
    index = {s.id: i for i, s in enumerate(sections)}
    wanted = np.unique(ranked[:, :top][ranked[:, :top] >= 0]).tolist() if ranked.size else []
    known = [index[units[i]] for i in wanted if units[i] in index]
    return {"chunks": {}, "sections": {sections[i].id: [sections[i].heading, sections[i].text] for i in known},
            "evidence": {}}


def _evidence(questions, sections, pages, chunks, chunk_idx, coverage, top, index) -> dict:
    rows = [(q, i) for i, q in enumerate(questions) if q.evidence]
    if not rows:
        return {}
    chunk_section = np.fromiter((index[c.section_id] for c in chunks), np.int64, len(chunks))
    chunk_start = np.fromiter((c.start for c in chunks), np.int64, len(chunks))
    chunk_end = np.fromiter((c.end for c in chunks), np.int64, len(chunks))
    single, row_of = [], []
    for question, i in rows:  # one item at a time: the rank each item was found at
        for item in question.evidence:
            single.append(Question(question.id, "", "", "", evidence=(item,)))
            row_of.append(i)
    ranked = chunk_idx[row_of] if len(row_of) else np.zeros((0, 1), np.int64)
    judged = judge_spans(single, sections, pages, chunk_section, chunk_start, chunk_end, ranked, [], coverage).judged
    gains = judged.gains > 0
    out: dict[str, dict] = {}
    for q, (question, i) in enumerate(zip(single, row_of)):
        item = question.evidence[0]
        facts = out.setdefault(question.id, {"found": {}, "holds": {}, "passages": {}})
        facts["found"][item.label] = int(np.argmax(gains[q]) + 1) if gains[q].any() else None
        text = pages.get(item.page, "")
        if item.page in pages:
            passage = " ".join(text[item.start:item.end].split())
            cut = passage if len(passage) <= PASSAGE_CHARS else passage[: PASSAGE_CHARS - 1] + "…"
            facts["passages"][item.label] = cut
        size = _letters(text[item.start:item.end])
        for c in chunk_idx[i, :top].tolist():
            if c < 0:
                continue
            chunk = chunks[c]
            if sections[index[chunk.section_id]].page != item.page or chunk.start < 0:
                continue
            inside = _letters(text[max(chunk.start, item.start):min(chunk.end, item.end)])
            if inside and size:
                facts["holds"].setdefault(chunk.id, []).append([item.label, inside / size])
    return out


def _letters(text: str) -> int:
    """Characters that are not whitespace: the coverage rule's unit (receval.measures.spans)."""
    return len(text) - sum(c.isspace() for c in text)
