"""What came back for a question: ``report RUNS --show q18,q19|misses|changed [--top 5]``.

For each chosen question and each run: the first relevant rank as ``results.parquet``
stores it, the top results (rank, id, heading, a one-line snippet, score), relevant ones
marked ``*``, then the relevant units missed from the top with the rank where they were
found further down (``-`` when never). ``misses``: the questions every run misses;
``changed``: the questions whose first relevant rank differs between the runs.

A question labelled with sections was scored by section: its results are sections and
a relevant one is a labelled section. A question labelled with evidence (quotes or
spans) was scored at chunk ranks with its evidence items as the units
(:mod:`receval.measures.spans`): its results are chunks, a chunk is marked ``*`` when it holds
part of an item (with the share of the item it holds), and an item is found at the
first rank where the chunks so far cover ``relevance.coverage`` of it -- recomputed
here by the same rule (:func:`receval.measures.spans.judge_spans`) from the chunks the run's
saved chunking cuts from its dataset, and checked against the stored rank.

Ids, ranks and scores are read from each run's ``results.parquet``; headings,
snippets, chunk offsets and evidence passages from the run's dataset files when they
can be read and are the ones the run read (same fingerprint). A saved dataset holding
an interpolation is never evaluated; then (or when the files cannot be read) snippets
come from the chunks the run wrote (``chunks.json``) and headings and marks are left
out, with a note saying why. The snippet is the 24-word window of the section (or chunk)
sharing most words with the question. Rendered as text by :mod:`receval.render.show`,
in the HTML page by :mod:`receval.render.html`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

import numpy as np

from receval.datasets import Evidence, Question
from receval.core.errors import RecevalError, named
from receval.core.trust import holds_interpolation
from receval.results.door import open_run
from receval.results.format import RESULTS

SNIPPET_WORDS = 24
PASSAGE_CHARS = 100  # of an evidence item shown beside its label
MAX_ALL = 500  # questions the HTML page expands (a BEIR set has thousands)
_WORD = re.compile(r"\w+")
_COLUMNS = ["question_id", "relevant", "retrieved", "scores", "first_relevant_rank"]


@dataclass
class Hit:
    rank: int
    section_id: str  # the id as stored: a section's, or a chunk's (``page#slug@2``) for evidence
    heading: str
    snippet: str
    score: float | None
    relevant: bool
    covers: list[tuple[str, float]] = field(default_factory=list)  # evidence item, share of it held


@dataclass
class RunView:
    label: str
    run_dir: str
    first_relevant_rank: int | None  # as results.parquet stores it
    top: list[Hit]
    missed: list[tuple[str, int | None]]  # relevant unit, the rank it was found at below the top (or None)
    by_evidence: bool = False  # scored at chunk ranks with evidence items as units
    note: str = ""  # why marks or headings are missing


@dataclass
class QuestionView:
    question_id: str
    question: str
    kind: str | None
    relevant: list[str]
    runs: list[RunView] = field(default_factory=list)
    passages: dict[str, str] = field(default_factory=dict)  # evidence item -> its text (cut)

    def to_dict(self) -> dict:
        return asdict(self)


def _stored(run, option: str = "show") -> dict[str, dict]:
    """question id -> its relevant, retrieved, scores and first relevant rank, from results.parquet."""
    if run.table.num_rows and "retrieved" in run.table.column_names:
        table = run.table
    else:
        if not (run.run_dir / RESULTS).is_file():
            raise RecevalError(f"{option}: {run.run_dir} has no {RESULTS} with retrieved sections")
        table = open_run(run.run_dir, skip=frozenset()).table  # through the one door, checked
    return {row["question_id"]: row for row in table.select(_COLUMNS).to_pylist()}


class DatasetView:
    """A run's dataset as ``--show`` reads it: sections by id, page texts, and the
    chunks each saved chunking cuts (built when first needed, shared by runs on the
    same dataset)."""

    def __init__(self, saved: dict | None):
        from omegaconf import OmegaConf

        from receval.config import DatasetConfig

        self.problem = ""
        self._full = None
        self._chunks: dict[str, tuple] = {}
        if holds_interpolation(saved):  # a stored run is data: ``${oc.env:...}`` is never evaluated
            self.cfg, self.sections, self.by_id = None, [], {}
            self.problem = "its saved dataset names an interpolation (${...}), not evaluated: ids alone"
            return
        self.cfg = OmegaConf.merge(OmegaConf.structured(DatasetConfig), saved or {})
        try:
            from receval.datasets import load_sections

            self.sections = load_sections(self.cfg)
        except Exception as error:  # noqa: BLE001 - moved or remote data: show ids alone
            self.sections, self.problem = [], f"its dataset cannot be read ({_reason(error)})"
        self.by_id = {s.id: s for s in self.sections}

    def full(self):
        """(page texts, fingerprint) of the dataset as it is now; fingerprint None when
        it cannot be read whole (then pages are rebuilt from the sections)."""
        if self._full is None:
            from receval.datasets import load_dataset
            from receval.datasets.evidence import pages_from_sections

            try:
                dataset = load_dataset(self.cfg)
                pages = dict(pages_from_sections(self.sections)) | dict(dataset.pages)
                self._full = (pages, dataset.fingerprint)
            except Exception:  # noqa: BLE001 - e.g. its questions no longer load
                self._full = (pages_from_sections(self.sections), None)
        return self._full

    def chunks(self, chunking: dict | None) -> tuple[dict[str, int], list, str]:
        """(chunk id -> index, the chunks, problem) for a saved chunking config."""
        key = repr(chunking)
        if key not in self._chunks:
            from receval.chunking import cut

            try:
                chunks = cut(chunking, self.sections)
                self._chunks[key] = ({c.id: i for i, c in enumerate(chunks)}, chunks, "")
            except Exception as error:  # noqa: BLE001 - e.g. a tokens chunker whose model is gone
                self._chunks[key] = ({}, [], f"its chunks cannot be cut again ({_reason(error)})")
        return self._chunks[key]


def _reason(error: Exception) -> str:
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text[:160]


def snippet(text: str, question: str, words: int = SNIPPET_WORDS) -> str:
    """The ``words``-word window of ``text`` sharing most words with ``question``."""
    tokens = text.split()
    if len(tokens) <= words:
        return " ".join(tokens)
    wanted = {w.lower() for w in _WORD.findall(question)}
    hits = np.array([1 if {w.lower() for w in _WORD.findall(t)} & wanted else 0 for t in tokens])
    sums = np.convolve(hits, np.ones(words, dtype=int), mode="valid")
    start = int(np.argmax(sums))
    return ("... " if start else "") + " ".join(tokens[start:start + words]) + " ..."


def choose(runs: list, which: list[str] | str, option: str = "show") -> list[str]:
    """Question ids to show: the given ones (checked), or misses / changed."""
    first = runs[0]
    if which == "all":  # the HTML page's per-question view
        return [str(q) for q in first.ids[:MAX_ALL]]
    if isinstance(which, list):
        known = set().union(*(set(r.ids) for r in runs))
        unknown = [q for q in which if q not in known]
        if unknown:
            some = ", ".join(list(first.ids[:8]))
            raise RecevalError(
                f"{option}: no question {', '.join(unknown)} in these runs; ids look like {some}"
            )
        return which
    ranks = []
    for run in runs:
        rank = dict(zip(run.ids, run.values("first_relevant_rank")))
        scored = dict(zip(run.ids, ~np.isnan(run.values("rr"))))
        ranks.append((rank, scored))
    out = []
    for qid in first.ids:
        if not all(scored.get(qid, False) for _, scored in ranks):
            continue
        values = [rank[qid] for rank, _ in ranks]
        if which == "misses" and all(np.isnan(v) for v in values):
            out.append(str(qid))
        if which == "changed" and len({-1 if np.isnan(v) else int(v) for v in values}) > 1:
            out.append(str(qid))
    return out


def show(
    runs: list, labels: list[str], which: list[str] | str, top: int = 5, names: Mapping[str, str] | None = None
) -> list[QuestionView]:
    """Each chosen question's view in every run (see the module docstring): ``which`` is
    question ids, ``misses``, ``changed`` or ``all``; errors name ``which`` and ``top`` as
    ``names`` maps them (``show``, ``top``)."""
    if top < 1:
        raise RecevalError(f"{named(names, 'top')} {top}: use an integer >= 1, e.g. {named(names, 'top')} 5")
    ids = choose(runs, which, named(names, "show"))
    stored = [_stored(run, named(names, "show")) for run in runs]
    datasets: dict[str, DatasetView] = {}
    views = []
    for qid in ids:
        run0 = next(i for i, s in enumerate(stored) if qid in s)
        row0 = runs[run0].table.filter(np.asarray(runs[run0].ids == qid)).to_pylist()[0]
        view = QuestionView(qid, row0.get("question") or "", row0.get("kind"),
                            list(stored[run0][qid]["relevant"] or []))
        views.append(view)
    for run, label, rows in zip(runs, labels, stored):
        saved = run.config.get("dataset") if isinstance(run.config, dict) else None
        if repr(saved) not in datasets:
            datasets[repr(saved)] = DatasetView(saved)
        data = datasets[repr(saved)]
        shown = [view for view in views if view.question_id in rows]
        evidence = _EvidenceRun(run, data, [rows[v.question_id] for v in shown])
        texts = _written_texts(run) if data.problem else {}
        for view in shown:
            view.runs.append(_run_view(view, rows[view.question_id], run, label, data, evidence, top, texts))
    return views


def _items(relevant: list[str], data: DatasetView) -> list[Evidence]:
    """The evidence items among a row's relevant labels (the rest are section ids)."""
    items = [Evidence.parse(label) for label in relevant if label not in data.by_id]
    return [item for item in items if item is not None]


def _written_texts(run) -> dict[str, str]:
    """Unit id -> text from the chunks the run wrote (``chunks.json``: any question's top
    10), for a run whose dataset is not read: each chunk by its id, each section by its
    chunks joined. Empty when the run has none."""
    try:
        chunks = run.chunks if run.chunks is not None else open_run(run.run_dir, only=frozenset(), chunks=True).chunks
    except RecevalError:
        return {}
    texts: dict[str, str] = {}
    by_section: dict[str, list[str]] = {}
    for cid, (section_id, _start, _end, text) in (chunks or {}).items():
        texts[cid] = text
        by_section.setdefault(section_id, []).append(text)
    for section_id, parts in by_section.items():
        texts.setdefault(section_id, " ".join(parts))
    return texts


def _run_view(
    view: QuestionView, row: dict, run, label: str, data: DatasetView, evidence, top: int, texts: dict | None = None,
) -> RunView:
    retrieved, scores = row["retrieved"] or [], row["scores"] or []
    relevant = list(row["relevant"] or [])
    items = _items(relevant, data)
    first = row.get("first_relevant_rank")
    if not items:  # scored by section
        wanted = set(relevant)
        hits = []
        for rank, (sid, score) in enumerate(zip(retrieved[:top], scores[:top]), start=1):
            section = data.by_id.get(sid)
            text = section.text if section else (texts or {}).get(sid, "")
            hits.append(Hit(
                rank, sid, section.heading if section else "",
                snippet(text, view.question) if text else "", score, sid in wanted,
            ))
        missed = [
            (sid, retrieved.index(sid) + 1 if sid in retrieved else None)
            for sid in sorted(wanted) if sid not in retrieved[:top]
        ]
        return RunView(label, str(run.run_dir), first, hits, missed, note=data.problem)
    found, holds, note = evidence.judged(view.question_id)
    pages = evidence.pages
    for item in items:
        if pages and item.page in pages and item.label not in view.passages:
            view.passages[item.label] = _cut(" ".join(pages[item.page][item.start:item.end].split()))
    hits = []
    for rank, (cid, score) in enumerate(zip(retrieved[:top], scores[:top]), start=1):
        chunk = evidence.chunk(cid)
        section = data.by_id.get(chunk.section_id if chunk else cid.rpartition("@")[0])
        text = chunk.text if chunk else (section.text if section else (texts or {}).get(cid, ""))
        covers = holds.get(cid, [])
        hits.append(Hit(
            rank, cid, section.heading if section else "", snippet(text, view.question) if text else "",
            score, bool(covers), covers,
        ))
    missed = [] if note else [
        (item.label, found.get(item.label)) for item in items if not found.get(item.label) or found[item.label] > top
    ]
    return RunView(label, str(run.run_dir), first, hits, missed, by_evidence=True, note=note)


def _cut(text: str) -> str:
    return text if len(text) <= PASSAGE_CHARS else text[: PASSAGE_CHARS - 1] + "…"


class _EvidenceRun:
    """One run's evidence rows, judged again by the run's own rule: each item's found
    rank (:func:`receval.measures.spans.judge_spans` over the chunks its saved chunking cuts) and
    the share of each item each retrieved chunk holds."""

    def __init__(self, run, data: DatasetView, rows: list[dict]):
        self.run, self.data, self.rows = run, data, [r for r in rows if _items(r["relevant"] or [], data)]
        self.pages: dict[str, str] = {}
        self._index: dict[str, int] = {}
        self._chunks: list = []
        self._judged: dict[str, tuple] = {}
        self.problem = data.problem
        if self.rows and not self.problem:
            self._prepare()

    def _prepare(self) -> None:
        pages, fingerprint = self.data.full()
        stored = (self.run.metadata or {}).get("dataset_fingerprint") or (self.run.info or {}).get(
            "dataset_fingerprint")
        if fingerprint and stored and fingerprint != stored:
            self.problem = "the dataset changed since this run: chunk marks left out"
            return
        chunking = self.run.config.get("chunking") if isinstance(self.run.config, dict) else None
        self._index, self._chunks, self.problem = self.data.chunks(chunking)
        if self.problem:
            return
        self.pages = pages
        missing = {cid for r in self.rows for cid in r["retrieved"] or [] if cid not in self._index}
        if missing:
            self.problem = f"{len(missing)} retrieved chunks are not among the chunks cut again: marks left out"
            return
        self._judge_all()

    def chunk(self, cid: str):
        i = self._index.get(cid)
        return self._chunks[i] if i is not None and not self.problem else None

    def judged(self, qid: str) -> tuple[dict[str, int], dict[str, list[tuple[str, float]]], str]:
        """(item -> rank it was found at, chunk id -> items it holds part of, note)."""
        if self.problem:
            return {}, {}, self.problem
        return self._judged.get(qid, ({}, {}, ""))

    def _judge_all(self) -> None:
        from receval.measures.spans import judge_spans

        sections = self.data.sections
        section_index = {s.id: i for i, s in enumerate(sections)}
        chunks = self._chunks
        chunk_section = np.fromiter((section_index[c.section_id] for c in chunks), np.int64, len(chunks))
        chunk_start = np.fromiter((c.start for c in chunks), np.int64, len(chunks))
        chunk_end = np.fromiter((c.end for c in chunks), np.int64, len(chunks))
        questions, rows_of = [], []
        depth = max((len(r["retrieved"] or []) for r in self.rows), default=0)
        for r in self.rows:
            for item in _items(r["relevant"] or [], self.data):
                questions.append(Question(r["question_id"], "", "", "", evidence=(item,)))
                rows_of.append(r)
        ranked = np.full((len(questions), max(depth, 1)), -1, dtype=np.int64)
        for q, r in enumerate(rows_of):
            got = [self._index[cid] for cid in r["retrieved"] or []]
            ranked[q, : len(got)] = got
        relevance = (self.run.config.get("relevance") or {}) if isinstance(self.run.config, dict) else {}
        coverage = float(relevance.get("coverage", 0.5))
        judged = judge_spans(questions, sections, self.pages, chunk_section, chunk_start, chunk_end,
                             ranked, [], coverage).judged
        gains = judged.gains > 0
        for q, (question, row) in enumerate(zip(questions, rows_of)):
            item = question.evidence[0]
            found, holds, _ = self._judged.setdefault(row["question_id"], ({}, {}, ""))
            found[item.label] = int(np.argmax(gains[q]) + 1) if gains[q].any() else None
            text = self.pages.get(item.page, "")
            size = _letters(text[item.start:item.end])
            for cid in row["retrieved"] or []:
                chunk = chunks[self._index[cid]]
                if sections[section_index[chunk.section_id]].page != item.page or chunk.start < 0:
                    continue
                inside = _letters(text[max(chunk.start, item.start):min(chunk.end, item.end)])
                if inside and size:
                    holds.setdefault(cid, []).append((item.label, inside / size))
        for row in self.rows:  # the stored rank is the first rank any item was found at
            found = self._judged.get(row["question_id"], ({}, {}, ""))[0]
            ranks = [r for r in found.values() if r]
            if (min(ranks) if ranks else None) != row["first_relevant_rank"]:
                self.problem = (
                    "judged again, the chunks do not give the stored first relevant rank "
                    f"(question {row['question_id']}): marks left out"
                )
                return


def _letters(text: str) -> int:
    """Characters that are not whitespace: the coverage rule's unit (receval.measures.spans)."""
    return len(text) - sum(c.isspace() for c in text)
