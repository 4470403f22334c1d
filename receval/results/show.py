"""What came back for a question: ``report RUNS --show q18,q19|misses|changed [--top 5]``.

For each chosen question and each run: the top sections (rank, id, heading, a
one-line snippet, score), relevant ones marked ``*``, then the relevant sections
missed from the top with their rank when retrieved further down (``-`` when not
retrieved at all). ``misses``: the questions every run misses; ``changed``: the
questions whose first-relevant rank differs between the runs.

Section ids, ranks and scores are read from each run's ``results.parquet``;
headings and snippets from the run's dataset files when they can be read (the
built-in library always can); otherwise ids alone. The snippet is the 24-word
window of the section sharing most words with the question (the best chunk is
not stored, only its section). Rendered as text by :mod:`receval.tables.show`,
in the HTML page by :mod:`receval.tables.html`.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow.parquet as pq

from receval.errors import RecevalError
from receval.store import RESULTS

SNIPPET_WORDS = 24
MAX_ALL = 500  # questions the HTML page expands (a BEIR set has thousands)
_WORD = re.compile(r"\w+")


@dataclass
class Hit:
    rank: int
    section_id: str
    heading: str
    snippet: str
    score: float | None
    relevant: bool


@dataclass
class RunView:
    label: str
    run_dir: str
    first_relevant_rank: int | None
    top: list[Hit]
    missed: list[tuple[str, int | None]]  # relevant section id, its rank below the top (or None)


@dataclass
class QuestionView:
    question_id: str
    question: str
    kind: str | None
    relevant: list[str]
    runs: list[RunView] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def parse_show(text: str) -> list[str] | str:
    """``q18,q19`` -> ids; ``misses`` / ``changed`` as is."""
    text = text.strip()
    if text in ("misses", "changed"):
        return text
    ids = [part.strip() for part in text.split(",") if part.strip()]
    if not ids:
        raise RecevalError("--show: give question ids (q18,q19), misses or changed")
    return ids


def _stored(run) -> dict[str, dict]:
    """question id -> its retrieved, scores and relevant lists, from results.parquet."""
    if run.table.num_rows and "retrieved" in run.table.column_names:
        table = run.table
    else:
        path = run.run_dir / RESULTS
        if not path.is_file():
            raise RecevalError(f"--show: {run.run_dir} has no {RESULTS} with retrieved sections")
        table = pq.read_table(path, columns=["question_id", "relevant", "retrieved", "scores"])
    return {row["question_id"]: row for row in table.select(
        ["question_id", "relevant", "retrieved", "scores"]).to_pylist()}


def _sections(run) -> dict:
    """Section id -> Section from the run's saved dataset config ({} when unreadable)."""
    from omegaconf import OmegaConf

    from receval.config import DatasetConfig
    from receval.datasets import load_sections

    saved = run.config.get("dataset") if isinstance(run.config, dict) else None
    try:
        cfg = OmegaConf.merge(OmegaConf.structured(DatasetConfig), saved or {})
        return {s.id: s for s in load_sections(cfg)}
    except Exception:  # noqa: BLE001 - moved or remote data: show ids alone
        return {}


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


def choose(runs: list, which: list[str] | str) -> list[str]:
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
                f"--show: no question {', '.join(unknown)} in these runs; ids look like {some}"
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


def show(runs: list, labels: list[str], which: list[str] | str, top: int = 5) -> list[QuestionView]:
    """Each chosen question's view in every run (see the module docstring)."""
    if top < 1:
        raise RecevalError(f"--top {top}: use an integer >= 1, e.g. --top 5")
    ids = choose(runs, which)
    sections: dict = {}
    stored = [_stored(run) for run in runs]
    views = []
    for qid in ids:
        run0 = next(i for i, s in enumerate(stored) if qid in s)
        row0 = runs[run0].table.filter(
            np.asarray(runs[run0].ids == qid)).to_pylist()[0]
        view = QuestionView(qid, row0.get("question") or "", row0.get("kind"),
                            list(stored[run0][qid]["relevant"] or []))
        for run, label, rows in zip(runs, labels, stored):
            if qid not in rows:
                continue
            if not sections:
                sections = _sections(run)
            row = rows[qid]
            retrieved, scores = row["retrieved"] or [], row["scores"] or []
            relevant = set(row["relevant"] or [])
            hits = []
            for rank, (sid, score) in enumerate(zip(retrieved[:top], scores[:top]), start=1):
                section = sections.get(sid)
                hits.append(Hit(
                    rank, sid, section.heading if section else "",
                    snippet(section.text, view.question) if section else "", score, sid in relevant,
                ))
            missed = [
                (sid, retrieved.index(sid) + 1 if sid in retrieved else None)
                for sid in sorted(relevant) if sid not in retrieved[:top]
            ]
            first = next((i + 1 for i, sid in enumerate(retrieved) if sid in relevant), None)
            view.runs.append(RunView(label, str(run.run_dir), first, hits, missed))
        views.append(view)
    return views
