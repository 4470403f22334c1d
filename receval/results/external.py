"""TREC runs in and out: an external system's TREC run imported once into the stored
:class:`Run` type (:func:`import_trec_run`), and a stored run exported as TREC run and
qrels files (:func:`export`, ``receval export``).

``receval report RUN_DIR other_system.trec --qrels qrels.tsv`` reads the
run file (:func:`receval.results.trec.read_run`, trec_eval's order), keeps each question's
first ``depth`` documents (the stored runs' depth, so MRR@depth means the same), and
builds its per-question rows with the code a receval run uses
(:func:`receval.scoring.rows.question_rows`), at the cutoffs the stored runs hold. The
qrels may be a TREC qrels file (``qid 0 docid rel``) or a BEIR ``qrels/<split>.tsv``
(header ``query-id corpus-id score``); as in receval, a grade >= 1 is relevant, and a
grade of 0 is judged not relevant (read by ``bpref`` only).
Questions with a relevant document are scored (one the run never answers scores
0); those the run answers without any are kept unscored, like receval's
unanswerable questions, so the external run pairs with a stored one question for
question. A question whose id a stored run has takes that run's ``kind``, ``split``
and text, so ``--by kind`` and ``--split test`` work on it; other ids are of kind
``external`` (``unanswerable`` without a relevant document) in split ``all``.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pyarrow as pa

from receval.core.errors import RecevalError, RunError
from receval.core.secrets import cut
from receval.results import trec
from receval.results.format import OVERLAP, SCHEMA_VERSION, results_schema
from receval.results.door import open_run
from receval.results.stored import Run
from receval.scoring.declared import measures_for, parse_measure
from receval.scoring.qrels import read_judgements
from receval.scoring.questions import UNANSWERABLE, Question
from receval.scoring.rows import question_rows

DEFAULT_CUTOFFS = [1, 3, 5, 10]  # without stored runs: depth 10 and these cutoffs


def read_labels(path: str | Path, option: str = "qrels") -> dict[str, dict[str, int]]:
    """Qrels as question -> document -> grade, from TREC or BEIR tsv layout, read by the
    format's one reader (:func:`receval.results.trec.read_qrels`,
    :func:`receval.scoring.qrels.read_judgements`): a pair judged twice with different
    grades is an error naming the file, both lines and the pair; a missing file is an
    error naming ``option``."""
    path = Path(path)
    if not path.is_file():
        raise RecevalError(f"{option} {path}: file not found; give TREC qrels or a BEIR qrels/<split>.tsv")
    with path.open(encoding="utf-8", errors="replace") as handle:
        first = handle.readline()
    if first.split()[:1] != ["query-id"]:
        return trec.read_qrels(path)
    judged = read_judgements(path)  # the BEIR reader: every bad line and conflicting judgement named
    return {qid: {doc: score for doc, (score, _) in docs.items()} for qid, docs in judged.items()}


def trec_run_table(
    run_file: str | Path,
    qrels_file: str | Path,
    depth: int,
    measures: list[str],
    known: dict[str, tuple[str | None, str | None, str | None]] | None = None,
    option: str = "qrels",
) -> pa.Table:
    """The per-question table of a TREC run, in receval's results schema.

    ``known``: question id -> (kind, split, text) of the stored runs' questions, in
    their order."""
    ranking = trec.read_run(run_file)
    labels = read_labels(qrels_file, option)
    relevant = {q: {d: g for d, g in judged.items() if g >= 1} for q, judged in labels.items()}
    if not any(relevant.values()):
        raise RecevalError(f"{qrels_file}: no question has a relevant document (grade >= 1)")
    known = known or {}
    ids = [q for q in relevant if relevant[q]] + [q for q in ranking if not relevant.get(q)]
    # the stored runs' order first: the same questions in the same order pair and
    # resample exactly as a stored run does
    present = set(ids)
    ids = [q for q in known if q in present] + [q for q in ids if q not in known]
    questions = []
    for qid in ids:
        judged = relevant.get(qid, {})
        kind, split, text = known.get(qid, (None, None, None))
        kind = kind or ("external" if judged else UNANSWERABLE)
        nonrelevant = tuple(d for d, g in labels.get(qid, {}).items() if g == 0) if judged else ()
        questions.append(Question(qid, text or "", kind, split or "all", judged, nonrelevant=nonrelevant))
    retrieved = [ranking.get(q.id, [])[:depth] for q in questions]
    labelled = {d for q in questions for d in (*q.relevant, *q.nonrelevant)}  # bpref counts every judged one
    docs = sorted(labelled | {d for r in retrieved for d, _ in r})
    index = {d: i for i, d in enumerate(docs)}
    idx = np.full((len(questions), depth), -1, dtype=np.int64)
    scores = np.full((len(questions), depth), np.nan)
    for row, ranked in enumerate(retrieved):
        idx[row, : len(ranked)] = [index[d] for d, _ in ranked]
        scores[row, : len(ranked)] = [s for _, s in ranked]
    no_latency = np.full(len(questions), np.nan)
    columns = question_rows(questions, docs, idx, scores, no_latency, [parse_measure(m) for m in measures])
    columns["question"] = [q.text or None for q in questions]
    columns["latency_ms"] = [None] * len(questions)  # not measured
    columns.update({name: [None] * len(questions) for name in OVERLAP})
    metadata = {"schema_version": SCHEMA_VERSION, "external_run": str(run_file)}
    schema = results_schema(measures, metadata)
    return pa.table({f.name: columns[f.name] for f in schema}, schema=schema)


def kept_depth(run: Run) -> int:
    """The ranks a stored run kept per question: its saved ``depth``, capped as the run
    capped it (at its chunks, never below its largest cutoff); a RunError naming the run
    when the saved depth is no whole number >= 1 (it is data from anywhere)."""
    value = run.flat.get("depth", 10)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise RunError(
            f"{run.run_dir}: its saved depth is {cut(repr(value))}, not a number of ranks (a whole number >= 1); "
            "not a config receval wrote: re-run this job"
        )
    ks = run.flat.get("metrics.ks")
    largest = max((k for k in ks if isinstance(k, int) and not isinstance(k, bool)), default=1) \
        if isinstance(ks, tuple) else 1
    chunks = run.n_chunks
    return value if chunks is None else min(value, max(chunks, largest, 1))


def import_trec_run(path: str | Path, qrels: str | Path, stored: list[Run], option: str = "qrels") -> Run:
    """A TREC run as a :class:`Run` at the stored runs' depth and measures, its
    questions' kind and split borrowed from theirs (see the module docstring)."""
    depths = {kept_depth(r) for r in stored} or {10}
    measures = list(dict.fromkeys(m for r in stored for m in r.measure_names))
    if not measures:
        measures = [m.name for m in measures_for(DEFAULT_CUTOFFS)]
    known: dict[str, tuple] = {}
    for run in stored:
        for qid, kind, split, text in zip(run.ids, run.strings("kind"), run.strings("split"), run.strings("question")):
            known.setdefault(qid, (kind, split, text))
    table = trec_run_table(path, qrels, max(depths), measures, known, option)
    tag = (trec.run_tags(path) or [Path(path).name])[0]
    # shown as the first stored run's config under another retriever name: the same
    # questions and depth; receval knows nothing else about the system
    config = copy.deepcopy(stored[0].config) if stored else {}
    retriever = config.setdefault("retriever", {})
    retriever["kind" if "kind" in retriever else "name"] = f"{tag} (TREC run)"
    return Run(run_dir=Path(path), table=table, metadata={"external_run": str(path)}, config=config)


# ----------------------------------------------------------------- a stored run exported


def ranking(stored: Run) -> dict[str, list[tuple[str, float]]]:
    """Question id -> [(section id, stored score), ...] best first, as stored."""
    columns = stored.table.select(["question_id", "retrieved", "scores"]).to_pydict()
    return {
        qid: list(zip(retrieved or [], scores or []))
        for qid, retrieved, scores in zip(columns["question_id"], columns["retrieved"], columns["scores"])
    }


def qrels(stored: Run) -> dict[str, dict[str, int]]:
    """Question id -> section id -> grade, from the stored ``relevant`` and ``grades``."""
    columns = stored.table.select(["question_id", "relevant", "grades"]).to_pydict()
    return {
        qid: dict(zip(relevant, grades))
        for qid, relevant, grades in zip(columns["question_id"], columns["relevant"], columns["grades"])
        if relevant
    }


def default_tag(stored: Run) -> str:
    digest = str(stored.metadata.get("config_hash") or "")[:8]
    return f"receval-{digest}" if digest else "receval"


def export(
    run_dir: str | Path | Run,
    trec_path: str | Path,
    qrels_path: str | Path | None = None,
    tag: str | None = None,
) -> tuple[Path, Path | None]:
    """Write a stored run (and its labels) as TREC files; returns the paths written. Both
    are formatted before either is written, so a problem (named with the run and the
    question) leaves no file behind."""
    stored = run_dir if isinstance(run_dir, Run) else open_run(run_dir, skip=frozenset())
    try:
        run_text = trec.format_run(ranking(stored), tag or default_tag(stored))
        qrels_text = trec.format_qrels(qrels(stored)) if qrels_path else None
    except RecevalError as error:
        raise RecevalError([f"{stored.run_dir}: {problem}" for problem in error.problems]) from None
    run_file = trec.write_text(trec_path, run_text)
    return run_file, trec.write_text(qrels_path, qrels_text) if qrels_path else None
