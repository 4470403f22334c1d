"""The ``ir_datasets`` format: a collection named by an id of the ir_datasets package
(``dataset=ir_datasets dataset.id=beir/scifact/test``), read from its local store.

Optional: ``pip install 'receval[ir_datasets]'``; imported only when this format is used.

No network. ir_datasets downloads a missing file the first time it is read; here every
download is refused before it starts (:func:`_offline`): the files must already be in
ir_datasets' store, ``$IR_DATASETS_HOME`` (default ``~/.ir_datasets``). A missing file is
one message naming the path ir_datasets expects it at, with how to place it there (fetch
it where the network is allowed and copy the store over). Datasets registered in-process
with ``ir_datasets.registry.register`` read their own local files.

Read as ``dataset=beir`` reads a BEIR folder (:mod:`receval.datasets.beir`): each
document is one section (id = ``doc_id``); a document with a ``title`` field is
``title + "\\n" + text`` with ``dataset.title`` true (either part left out when empty),
else its ``text`` (or the package's ``default_text()``). Questions, in the order of
``queries_iter()``, are the queries with at least one relevant document (relevance >= 1;
grade = relevance), documents judged 0 kept for ``bpref``, by the same rule
(:func:`receval.datasets.beir.question_of`). The split is the id's last part when it is
a split name (``train``, ``dev``, ``test``, ``validation``), else ``test``. The fingerprint
is sha256 over the id and every document, query and judgement as read, so the same data
in another store is the same collection.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

from receval.core.errors import DatasetError
from receval.datasets.beir import question_of
from receval.datasets.types import Dataset, Question, Section, grade_problem

SPLITS = ("train", "dev", "test", "validation")
INSTALL = "pip install 'receval[ir_datasets]'"


class _Offline(Exception):
    """A download ir_datasets was about to start (its target path)."""


def _package():
    try:
        import ir_datasets
    except ImportError:
        raise DatasetError(f"dataset=ir_datasets needs the ir_datasets package: {INSTALL}") from None
    return ir_datasets


def store_path() -> Path:
    return Path(os.environ.get("IR_DATASETS_HOME", Path.home() / ".ir_datasets")).expanduser()


@contextlib.contextmanager
def _offline(ir_datasets):
    """Within: any ir_datasets download (a file not yet in the store) raises ``_Offline``
    with the path it would have been written to, before a request is made."""
    download = ir_datasets.util.download.Download
    original = download.path

    def path(self, force=True):
        target = self._cache_path
        if self._path is not None or (target is not None and (not force or os.path.exists(target))):
            return original(self, force)
        raise _Offline(target or "(a temporary file)")

    download.path = path
    try:
        yield
    finally:
        download.path = original


def split_of(dataset_id: str) -> str:
    last = dataset_id.rstrip("/").rsplit("/", 1)[-1]
    return last if last in SPLITS else "test"


def _text(record, title: bool) -> str:
    head = getattr(record, "title", None)
    body = getattr(record, "text", None)
    if isinstance(head, str) and isinstance(body, str):
        if title and head:
            return f"{head}\n{body}" if body else head
        return body
    if isinstance(body, str):
        return body
    return record.default_text()


def _found(ir_datasets, dataset_id: str):
    try:
        return ir_datasets.load(dataset_id)
    except KeyError:
        raise DatasetError(
            f"dataset.id={dataset_id!r} is not an ir_datasets id; see https://ir-datasets.com for the ids "
            "(e.g. beir/scifact/test), or register your own with ir_datasets.registry.register"
        ) from None


def _check(found, dataset_id: str) -> None:
    missing = [what for what in ("docs", "queries", "qrels") if not found.has(what)]
    if missing:
        raise DatasetError(
            f"dataset.id={dataset_id!r} has no {', '.join(missing)}; a run needs documents, queries and "
            "judgements (choose an id with all three, e.g. beir/scifact/test rather than beir/scifact)"
        )


def _read(cfg, what: str):
    ir_datasets = _package()
    dataset_id = str(cfg.id)
    found = _found(ir_datasets, dataset_id)
    _check(found, dataset_id)
    try:
        with _offline(ir_datasets):
            return dataset_id, what_of(found, what, bool(cfg.title))
    except _Offline as missing:
        raise DatasetError(
            f"dataset.id={dataset_id!r}: {missing.args[0]} is not in the ir_datasets store "
            f"(IR_DATASETS_HOME={store_path()}) and receval never downloads; fetch the dataset where the "
            f"network is allowed (python -c \"import ir_datasets; ir_datasets.load('{dataset_id}').qrels_iter()\") "
            "and copy that store here, or place the file at that path"
        ) from None
    except FileNotFoundError as error:  # a registered dataset whose local file is missing
        raise DatasetError(f"dataset.id={dataset_id!r}: {error.filename or error} not found; place the file there") from None


def what_of(found, what: str, title: bool):
    """``sections`` (documents alone) or ``all`` (documents, queries, judgements)."""
    sections = [Section(str(doc.doc_id), str(doc.doc_id), (), _text(doc, title)) for doc in found.docs_iter()]
    if what == "sections":
        return sections
    queries = {str(q.query_id): _text(q, False) for q in found.queries_iter()}
    judged: dict[str, dict[str, int]] = {}
    for qrel in found.qrels_iter():
        judged.setdefault(str(qrel.query_id), {})[str(qrel.doc_id)] = int(qrel.relevance)
    return sections, queries, judged


def load_sections(cfg) -> list[Section]:
    return _read(cfg, "sections")[1]


def load(cfg) -> Dataset:
    """The collection ``dataset.id`` names, from the local store (see the module docstring)."""
    dataset_id, (sections, queries, judged) = _read(cfg, "all")
    if not sections:
        raise DatasetError(f"dataset.id={dataset_id!r}: holds no documents")
    split = split_of(dataset_id)
    known = {s.id for s in sections}
    problems = []
    for qid, docs in judged.items():
        for doc_id, grade in docs.items():
            if too_big := grade_problem(grade, f"dataset.id={dataset_id!r} qrels of {qid!r}", doc_id):
                problems.append(too_big)
    unknown = sorted({d for docs in judged.values() for d in docs} - known)
    if unknown:
        problems.append(f"dataset.id={dataset_id!r}: {len(unknown)} judged documents not among its documents "
                        f"(e.g. {unknown[0]!r})")
    if problems:
        raise DatasetError(problems[:50])
    questions: list[Question] = []
    no_relevant = 0
    for qid, text in queries.items():
        if qid not in judged:
            continue
        question = question_of(qid, text, split, judged[qid])
        if question is None:
            no_relevant += 1
        else:
            questions.append(question)
    if not questions:
        raise DatasetError(f"dataset.id={dataset_id!r}: no query has a relevant document (relevance >= 1)")
    digest = hashlib.sha256(dataset_id.encode() + b"\0")
    for section in sections:
        digest.update(f"d\0{section.id}\0{section.text}\0".encode())
    for qid, text in queries.items():
        digest.update(f"q\0{qid}\0{text}\0".encode())
    for qid in sorted(judged):
        for doc_id, grade in sorted(judged[qid].items()):
            digest.update(f"j\0{qid}\0{doc_id}\0{grade}\0".encode())
    notes = {
        "splits": {split: len(questions)},
        "unjudged_questions": sum(qid not in judged for qid in queries),
        "no_relevant_questions": no_relevant,
        "judged_not_relevant": sum(g <= 0 for docs in judged.values() for g in docs.values()),
    }
    return Dataset(name=str(cfg.name), sections=sections, questions=questions, fingerprint=digest.hexdigest(), notes=notes)
