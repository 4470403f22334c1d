"""Added labels: the labels JSONL that ``receval judge`` writes, read back, and
a stored run re-scored from its stored ranking with them (``report --labels``).

A labels file holds one JSON object per line, ``{"question_id", "id", "grade", "judge",
...provenance}``: ``id`` a unit (section) id, ``grade`` an integer >= 0 (0 = judged not
relevant; UMBRELA's 0-3 scale, or the collection's own grades). A stored run keeps its
ranking (``retrieved``, the top ``depth`` unit ids per question) and its labels of grade
>= 1 (``relevant``, ``grades``), so it can be re-scored without re-running it:
:func:`rescore` merges the added labels onto the stored ones and recomputes every
ranking measure with the code a run uses (:func:`receval.scoring.rows.question_rows`).
The stored files are never modified. A stored label the added ones contradict (another
grade for the same pair) is kept, and the contradiction listed, never silently
applied. Stored runs do not keep the collection's grade-0 judgements, so after
re-scoring ``bpref`` and ``judged@k`` count as judged non-relevant only the grade-0
labels added.

A label of a sampled hole (``receval pool --budget`` or ``--for-humans``) also carries
its design: ``inclusion`` (its probability of being drawn, in (0, 1]), ``stratum`` and
``drawn`` (how many were drawn from that stratum), and ``design`` (``budget`` or
``humans``); :func:`read_label_file` sets those records apart, and ``report --labels``
estimates from them (:mod:`receval.analysis.estimate`) instead of re-scoring as if the
pool were complete. A depth pool's labels carry its ``depth``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from receval.core.errors import RecevalError
from receval.core.secrets import brief, cut
from receval.results.external import read_labels
from receval.results.format import RANKS
from receval.results.stored import Run
from receval.results.support import Support, apply_support, is_support_line, support_of
from receval.scoring.declared import is_measure, parse_measure
from receval.scoring.questions import MAX_GRADE, Question
from receval.scoring.rows import question_rows

#: A stored label naming an evidence item (``page:start-end``), not a unit.
_EVIDENCE = re.compile(r".+:\d+-\d+$")
Labels = dict[str, dict[str, int]]  # question id -> unit id -> grade


@dataclass(frozen=True)
class Conflict:
    """An added label that contradicts a stored one (the stored one is kept)."""

    question_id: str
    id: str
    stored: int
    added: int
    source: str

    def line(self) -> str:
        return f"{self.question_id} {self.id}: stored grade {self.stored}, {self.source} says {self.added} (kept {self.stored})"


def read_labels_jsonl(path: str | Path, option: str = "--labels") -> tuple[Labels, list[dict]]:
    """Question -> unit -> grade, and the records as read. A bad line, or one pair given two
    grades, is an error naming the file and the line(s)."""
    path = Path(path)
    if not path.is_file():
        raise RecevalError(f"{option} {path}: file not found; give a labels JSONL written by receval judge")
    labels: Labels = {}
    where: dict[tuple[str, str], int] = {}
    records = []
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, text in enumerate(handle, 1):
            if not text.strip():
                continue
            try:
                record = json.loads(text)
                if is_support_line(record):  # a nugget's support, not a grade (receval.results.support)
                    support_of(record, f"{path}:{number}")
                    records.append(record)
                    continue
                qid, uid, grade = record["question_id"], record["id"], record["grade"]
            except (ValueError, KeyError, TypeError, RecursionError):
                raise RecevalError(
                    f"{path}:{number}: not a label; each line is a JSON object with question_id, id and grade"
                ) from None
            if not isinstance(qid, str) or not isinstance(uid, str) or isinstance(grade, bool) \
                    or not isinstance(grade, int) or not 0 <= grade <= MAX_GRADE:
                raise RecevalError(
                    f"{path}:{number}: question_id and id must be strings and grade an integer from 0 to "
                    f"{MAX_GRADE} (got {cut(brief(qid))}, {cut(brief(uid))}, {cut(brief(grade))})"
                )
            before = labels.setdefault(qid, {}).get(uid)
            if before is not None and before != grade:
                raise RecevalError(
                    f"{path}:{number}: {qid} {uid} has grade {grade} here and {before} on line "
                    f"{where[qid, uid]}; keep one"
                )
            labels[qid][uid] = grade
            where.setdefault((qid, uid), number)
            records.append(record)
    return labels, records


#: A sampled hole's design fields (receval pool --budget or --for-humans), carried by its label.
SAMPLED = ("inclusion", "stratum", "drawn")


def design_problem(record: dict) -> str | None:
    """What is wrong with a line's design fields (``inclusion`` in (0, 1], ``stratum`` an
    integer >= 0, ``drawn`` an integer >= 1), if it has them."""
    if "inclusion" not in record:
        return None
    inclusion, stratum, drawn = record.get("inclusion"), record.get("stratum"), record.get("drawn")
    if isinstance(inclusion, bool) or not isinstance(inclusion, (int, float)) or not 0 < inclusion <= 1:
        return f"inclusion {cut(repr(inclusion))} is not a probability in (0, 1]"
    for name, value, low in (("stratum", stratum, 0), ("drawn", drawn, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            return f"{name} {cut(repr(value))} is not an integer >= {low}"
    return None


class LabelFile(NamedTuple):
    """A labels file split in two: the labels known for certain (question -> unit ->
    grade) and the records of sampled holes; and the depths of the depth pools its
    labels came from (their ``depth`` field)."""

    certain: Labels
    sampled: list[dict]
    depths: frozenset[int] = frozenset()


def read_label_file(path: str | Path, option: str = "--labels") -> LabelFile:
    """A labels file split in two (:class:`LabelFile`): the records of sampled holes are
    those with an ``inclusion`` (a budgeted or stratified pool), their design fields
    checked. TREC qrels and BEIR files hold no sample."""
    if Path(path).suffix != ".jsonl":
        return LabelFile(read_labels(path, option), [])
    _, records = read_labels_jsonl(path, option)
    certain: Labels = {}
    sampled = []
    depths = {r["depth"] for r in records if "inclusion" not in r and not is_support_line(r) and isinstance(r.get("depth"), int)
              and not isinstance(r.get("depth"), bool)}
    for number, record in enumerate(records, 1):
        if is_support_line(record):  # a nugget's support: read by receval.results.support, not a grade
            continue
        if "inclusion" in record:
            if problem := design_problem(record):
                raise RecevalError(f"{path}: label {number} ({cut(record['question_id'])} {cut(record['id'])}): "
                                   f"{problem}; its design comes from the pool receval pool wrote")
            sampled.append(record)
        else:
            certain.setdefault(record["question_id"], {})[record["id"]] = record["grade"]
    return LabelFile(certain, sampled, frozenset(depths))


def read_any_labels(path: str | Path, option: str = "--labels") -> Labels:
    """Question -> unit -> grade from labels JSONL (by its ``.jsonl`` suffix), else a TREC
    qrels file or a BEIR qrels TSV (:func:`receval.results.external.read_labels`)."""
    if Path(path).suffix == ".jsonl":
        return read_labels_jsonl(path, option)[0]
    return read_labels(path, option)


def merge_added(files: list[tuple[str, Labels]], option: str = "--labels") -> Labels:
    """Several labels files as one; two files grading one pair differently is an error."""
    merged: Labels = {}
    source: dict[tuple[str, str], str] = {}
    for name, labels in files:
        for qid, units in labels.items():
            for uid, grade in units.items():
                before = merged.setdefault(qid, {}).get(uid)
                if before is not None and before != grade:
                    raise RecevalError(
                        f"{option}: {qid} {uid} has grade {grade} in {name} and {before} in "
                        f"{source[qid, uid]}; give label files that agree"
                    )
                merged[qid][uid] = grade
                source.setdefault((qid, uid), name)
    return merged


def _at_budget(name: str) -> bool:
    """A measure at a token budget derived before re-scoring: stale under the new labels."""
    return is_measure(name) and parse_measure(name).budget is not None


def stored_labels(run: Run) -> Labels:
    """A run's stored labels: question -> unit -> grade (grade >= 1 only)."""
    columns = run.table.select(["question_id", "relevant", "grades"]).to_pydict()
    return {
        qid: dict(zip(relevant or [], grades or []))
        for qid, relevant, grades in zip(columns["question_id"], columns["relevant"], columns["grades"])
    }


#: Per-rank columns that follow the labels but cannot be recomputed from a ranking of ids
#: (tokens of the labelled units, alpha-nDCG's gains): left out of a re-scored run.
LABELLED_RANKS = ("chunk_evidence_tokens", "evidence_tokens", "chunk_novelty", "novelty_ideal")
UNIT_RANKS = ("retrieved_gain", "retrieved_found", "n_units", "ideal_gains")


def rescore(run: Run, added: Labels, source: str = "--labels", support: Support | None = None) -> tuple[Run, list[Conflict]]:
    """The run re-scored from its stored ranking with ``added`` labels merged onto the stored
    ones (see the module docstring); returns the re-scored run (in memory) and the
    contradictions found. Measures that cannot be recomputed from a ranking (token,
    alpha-nDCG and overlap measures, and the per-rank columns they come from) are left out
    of the re-scored table; the judged ranking a token budget is derived from is
    recomputed. ``support``: nugget support labels (:mod:`receval.results.support`)."""
    needed = {"question_id", "relevant", "grades", "retrieved", "scores"}
    if missing := needed - set(run.table.column_names):
        raise RecevalError(f"{run.run_dir}: its results lack {sorted(missing)}; re-scoring needs the stored ranking")
    stored = stored_labels(run)
    if any(_EVIDENCE.match(label) for units in stored.values() for label in units):
        raise RecevalError(
            f"{run.run_dir}: its questions are labelled with evidence spans (page:start-end); "
            "--labels re-scores runs labelled by unit id only"
        )
    conflicts, questions = [], []
    kinds, splits, texts = run.strings("kind"), run.strings("split"), run.strings("question")
    for row, qid in enumerate(run.ids):
        labels = dict(stored.get(qid, {}))
        for uid, grade in added.get(qid, {}).items():
            if uid in labels and labels[uid] != grade:
                conflicts.append(Conflict(qid, uid, labels[uid], grade, source))
            else:
                labels.setdefault(uid, grade)
        relevant = {u: g for u, g in labels.items() if g >= 1}
        nonrelevant = tuple(u for u, g in labels.items() if g == 0)
        questions.append(Question(qid, texts[row] or "", kinds[row] or "", splits[row] or "", relevant, nonrelevant=nonrelevant))
    retrieved = run.table.column("retrieved").to_pylist()
    scores = run.table.column("scores").to_pylist()
    depth = max(int(run.flat.get("depth") or 0), max((len(r or []) for r in retrieved), default=0), 1)
    units = sorted({u for r in retrieved for u in r or []} | {u for q in questions for u in (*q.relevant, *q.nonrelevant)})
    index = {u: i for i, u in enumerate(units)}
    idx = np.full((len(questions), depth), -1, dtype=np.int64)
    top = np.full((len(questions), depth), np.nan)
    for row, (ranked, scored) in enumerate(zip(retrieved, scores)):
        ranked = ranked or []
        idx[row, : len(ranked)] = [index[u] for u in ranked]
        top[row, : len(ranked)] = scored or [0.0] * len(ranked)
    names = [name for name in run.table.column_names if is_measure(name) and parse_measure(name).budget is None]
    columns = question_rows(questions, units, idx, top, np.zeros(len(questions)), [parse_measure(n) for n in names])
    table = run.table
    dropped = [n for n in table.column_names if n.startswith(("token_", "context_tokens@", "alpha_ndcg@"))
               or n in LABELLED_RANKS or _at_budget(n)]
    table = table.drop_columns(dropped) if dropped else table
    for name in ("relevant", "grades", "first_relevant_rank", *names, *UNIT_RANKS):
        if name not in table.column_names:
            continue
        field = table.schema.field(name) if name not in RANKS else pa.field(name, RANKS[name])
        position = table.column_names.index(name)
        table = table.set_column(position, field, pa.array(columns[name], field.type))
    table = apply_support(table, support or {})
    metadata = {**run.metadata, "added_labels": source}
    return Run(run.run_dir, table, metadata, run.info, run.config, run.overrides), conflicts
