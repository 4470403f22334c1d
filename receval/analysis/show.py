"""What came back for a question: ``report RUNS --show q18,q19|misses|changed [--top 5]``.

For each chosen question and each run: the first relevant rank as ``results.parquet``
stores it, the top results (rank, id, heading, a one-line snippet, score), relevant ones
marked ``*``, then the relevant units missed from the top with the rank where they were
found further down (``-`` when never). ``misses``: the questions every run misses;
``changed``: the questions whose first relevant rank differs between the runs.

A question labelled with sections was scored by section: its results are sections and
a relevant one is a labelled section. A question labelled with evidence (quotes or
spans) was scored at chunk ranks with its evidence items as the units: its results are
chunks, a chunk is marked ``*`` when it holds part of an item (with the share of the
item it holds), and an item is found at the first rank where the chunks so far cover
``relevance.coverage`` of it.

Ids, ranks and scores are read from each run's ``results.parquet``; headings, snippets,
evidence marks and passages from what the run wrote for ``--show`` when it was made
(``chunks.json``, :mod:`receval.run.shown`: any question's top 10), never from its dataset:
showing a run reads no dataset and cuts no chunks. A unit the dataset does not hold is
shown by the text a traces run stored for it (its ``documents`` column). A run written
before headings and marks were stored shows ids and snippets, with a note saying so.
The snippet is the 24-word window of the section (or chunk) sharing most words with the
question.

A run whose retriever answered with its search calls (a Python or HTTP retriever's
trajectory, or a traces run's spans) also shows the question's calls as it stored them
(the ``calls`` column: each call's query, latency and the sections it returned, the
relevant ones with their rank in the call) with ``n_calls``, ``first_relevant_call`` and
``recall_union``; and any run what the question spent where it stored it: requests,
tokens and money per stage (``requests.<stage>``, ``input_tokens.<stage>``, ...,
``cost_usd``) and pairs re-ranked. All read from ``results.parquet``: no dataset, no request. Rendered as text by :mod:`receval.render.show`, in the HTML page by
:mod:`receval.render.html`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

import numpy as np

from receval.core.errors import RecevalError, named
from receval.core import marks
from receval.results.door import open_run
from receval.results.format import RESULTS
from receval.results.integrity import AMOUNT_PREFIXES, AMOUNTS

SNIPPET_WORDS = 24
MAX_ALL = 500  # questions the HTML page expands (a BEIR set has thousands)
_COLUMNS = ["question_id", "relevant", "retrieved", "scores", "first_relevant_rank"]
TRAJECTORY = ["n_calls", "first_relevant_call", "recall_union", "calls"]  # a trajectory run's columns
CALL_IDS = 5  # sections listed per call
DOCUMENTS = "documents"  # a traces run's texts of the units its dataset does not hold
OLD = "written before --show's headings and evidence marks were stored: ids and snippets only"


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
class CallView:
    """One search call of a question, as the run stored it (``calls``)."""

    number: int  # 1-based, in call order
    query: str
    latency_ms: float | None
    n_retrieved: int  # sections it returned
    top: list[str]  # the first CALL_IDS of them
    relevant: list[tuple[str, int]]  # relevant sections it returned, with their rank in the call


@dataclass
class RunView:
    label: str
    run_dir: str
    first_relevant_rank: int | None  # as results.parquet stores it
    top: list[Hit]
    missed: list[tuple[str, int | None]]  # relevant unit, the rank it was found at below the top (or None)
    by_evidence: bool = False  # scored at chunk ranks with evidence items as units
    note: str = ""  # why marks or headings are missing
    calls: list[CallView] | None = None  # a trajectory run's calls for this question; None: not one
    trajectory: dict = field(default_factory=dict)  # n_calls, first_relevant_call, recall_union
    spent: dict[str, float] = field(default_factory=dict)  # requests, tokens, money, pairs: as stored


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
    names = table.column_names
    columns = _COLUMNS + [c for c in [DOCUMENTS, *TRAJECTORY] if c in names] + [c for c in names if is_spent(c)]
    return {row["question_id"]: row for row in table.select(columns).to_pylist()}


def is_spent(column: str) -> bool:
    """A count or money column (``requests.<stage>``, ``cost_usd``, ``pairs_scored``, ...)."""
    return column in AMOUNTS or column.startswith(AMOUNT_PREFIXES)


def calls_of(row: dict) -> list[CallView] | None:
    """The question's stored calls (None for a run without the ``calls`` column)."""
    if "calls" not in row:
        return None
    wanted = set(row["relevant"] or [])
    out = []
    for number, call in enumerate(row["calls"] or [], start=1):
        retrieved = list(call.get("retrieved") or [])
        out.append(CallView(
            number, call.get("query") or "", call.get("latency_ms"), len(retrieved), retrieved[:CALL_IDS],
            [(sid, rank) for rank, sid in enumerate(retrieved, start=1) if sid in wanted],
        ))
    return out


def _extras(row: dict) -> dict:
    """What a run view carries beside its ranking: calls, trajectory measures, spending."""
    return {
        "calls": calls_of(row),
        "trajectory": {c: row[c] for c in TRAJECTORY[:3] if c in row},
        "spent": {c: v for c, v in row.items() if is_spent(c) and v is not None},
    }


class Written:
    """What a run wrote for ``--show`` (``chunks.json``, :mod:`receval.run.shown`): chunk id ->
    (section id, start, end, text), section id -> (heading, text), and per evidence
    question its ``found``, ``holds`` and ``passages``; ``problem`` says what is missing."""

    def __init__(self, run):
        chunks, shown, self.problem = run.chunks, run.shown, ""
        if chunks is None:
            try:
                opened = open_run(run.run_dir, only=frozenset(), chunks=True)
                chunks, shown = opened.chunks, opened.shown
            except RecevalError as error:
                chunks, shown, self.problem = None, None, f"its chunks cannot be read ({_reason(error)})"
        self.chunks: dict[str, tuple] = chunks or {}
        shown = shown or {}
        self.sections: dict[str, tuple] = shown.get("sections") or {}
        self.evidence: dict[str, dict] = shown.get("evidence") or {}
        if chunks is None and not self.problem:
            self.problem = "it wrote no chunks.json: ids only"
        elif "sections" not in shown and not self.problem:
            self.problem = OLD
        self.texts: dict[str, str] = {}
        if "sections" not in shown:  # a run written before: each chunk, each section by its chunks joined
            by_section: dict[str, list[str]] = {}
            for cid, (section_id, _start, _end, text) in self.chunks.items():
                self.texts[cid] = text
                by_section.setdefault(section_id, []).append(text)
            for sid, parts in by_section.items():
                self.texts.setdefault(sid, " ".join(parts))


def _reason(error: Exception) -> str:
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text[:160]


def snippet(text: str, question: str, words: int = SNIPPET_WORDS) -> str:
    """The ``words``-word window of ``text`` sharing most words with ``question``."""
    tokens = text.split()
    if len(tokens) <= words:
        return " ".join(tokens)
    wanted = {w.lower() for w in marks.words(question)}
    hits = np.array([1 if {w.lower() for w in marks.words(t)} & wanted else 0 for t in tokens])
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
    views = []
    for qid in ids:
        run0 = next(i for i, s in enumerate(stored) if qid in s)
        row0 = runs[run0].table.filter(np.asarray(runs[run0].ids == qid)).to_pylist()[0]
        view = QuestionView(qid, row0.get("question") or "", row0.get("kind"),
                            list(stored[run0][qid]["relevant"] or []))
        views.append(view)
    for run, label, rows in zip(runs, labels, stored):
        written = Written(run)
        for view in views:
            if view.question_id in rows:
                view.runs.append(_run_view(view, rows[view.question_id], run, label, written, top))
    return views


def _run_view(view: QuestionView, row: dict, run, label: str, written: Written, top: int) -> RunView:
    retrieved, scores = row["retrieved"] or [], row["scores"] or []
    relevant = list(row["relevant"] or [])
    first = row.get("first_relevant_rank")
    documents = {d["id"]: d["text"] for d in row.get(DOCUMENTS) or [] if d.get("text") is not None}
    facts = written.evidence.get(view.question_id)
    if facts is None:  # scored by section
        wanted = set(relevant)
        hits = []
        for rank, (sid, score) in enumerate(zip(retrieved[:top], scores[:top]), start=1):
            heading, text = written.sections.get(sid, ("", written.texts.get(sid) or documents.get(sid, "")))
            hits.append(Hit(rank, sid, heading, snippet(text, view.question) if text else "", score, sid in wanted))
        missed = [
            (sid, retrieved.index(sid) + 1 if sid in retrieved else None)
            for sid in sorted(wanted) if sid not in retrieved[:top]
        ]
        return RunView(label, str(run.run_dir), first, hits, missed, note=written.problem, **_extras(row))
    found, holds = facts["found"], facts["holds"]
    items = [item for item in relevant if item in found]
    for item in items:
        if item in facts["passages"] and item not in view.passages:
            view.passages[item] = facts["passages"][item]
    hits = []
    for rank, (cid, score) in enumerate(zip(retrieved[:top], scores[:top]), start=1):
        chunk = written.chunks.get(cid)
        section_id = chunk[0] if chunk else cid.rpartition("@")[0]
        heading, text = written.sections.get(section_id, ("", ""))
        text = chunk[3] if chunk else (text or documents.get(cid, ""))
        covers = [(item, share) for item, share in holds.get(cid, [])]
        hits.append(Hit(
            rank, cid, heading, snippet(text, view.question) if text else "", score, bool(covers), covers,
        ))
    missed = [(item, found.get(item)) for item in items if not found.get(item) or found[item] > top]
    return RunView(label, str(run.run_dir), first, hits, missed, by_evidence=True, note=written.problem,
                   **_extras(row))
