"""The ``beir`` format: a test collection laid out as BEIR distributes them.

::

    <path>/corpus.jsonl        {"_id": "d1", "title": "...", "text": "..."} per line
    <path>/queries.jsonl       {"_id": "q1", "text": "..."} per line
    <path>/qrels/<split>.tsv   header "query-id<TAB>corpus-id<TAB>score", then one
                               judgement per line (integer score, graded); one file
                               per split (train.tsv, dev.tsv, test.tsv, ...)

Documents. Each document is one :class:`~receval.datasets.Section` -- the labelled
unit -- with ``id`` = ``page`` = ``_id``. With ``dataset.title`` true (the default)
its text is ``title + "\\n" + text`` (either part left out when empty), as BEIR's
own lexical baselines index it; false indexes ``text`` alone. ``heading_path`` is
``()``: the title is already in the text, so ``chunking.headings`` adds nothing
(and never a second copy of the title). With ``chunking.max_words`` set, a long
document is cut into windows like any section and the title is in its first
window only; ``chunking.max_words=null`` indexes whole documents (the BEIR
setting).

Splits. ``dataset.split`` null (the default) loads every ``qrels/<split>.tsv`` of
the folder into one run, each question in the split its file names (the ``split``
column of ``results.parquet``), so ``select --split train --report-on test`` tunes
on one split and reports on another from the same runs. A name (``test``) or a list
(``[dev,test]``) loads those files only: name them on a collection with a huge
training split (MS MARCO's train.tsv judges 500k queries). With every split loaded,
a file that holds no relevant judgement (score >= 1) is left out and named in the
notes (``splits_without_relevant``): it adds no question (cranfield's
``test_source_docs.tsv`` lists, with score 0, the paper each question came from); a
file named in ``dataset.split`` must have one. A query judged in two loaded files is
an error naming the query and both files and lines: a question belongs to one split,
or tuning on one split would see the other.

Judgements. A qrels score >= 1 marks the document relevant with grade = score; a
score <= 0 is "judged not relevant" and is not a label (every receval measure but
``bpref`` counts it exactly like an unjudged document, as trec_eval's ``recip_rank``,
``ndcg_cut_k``, ``recall_k``, ``P_k``, ``success_k``, ``map`` and ``Rprec`` do). The
documents scored exactly 0 are kept as the question's ``nonrelevant`` for ``bpref``
(trec_eval reads a negative score as "not in the pool", like an unjudged one). Questions, in
``queries.jsonl`` order, are the queries with at least one relevant document in a
loaded split; kind ``judged``, split = the file's name. Left out, and counted in
``Dataset.notes`` (with ``splits``: questions per loaded split):

- ``unjudged_questions``: queries no qrels file of the folder judges (BEIR query
  files hold every split's queries; a query judged in a split not loaded is not
  "unjudged" but ``other_split_questions``);
- ``no_relevant_questions``: queries judged in a loaded split whose every score is <= 0.
  trec_eval would score them 0 on every measure above, which says nothing about
  the retriever and pulls the mean towards 0; they are neither answerable (no
  relevant document) nor "unanswerable" in receval's sense (a question that has
  no answer in the pages), so they are kept out and only counted.

``dataset.questions``, when set, replaces ``<path>/queries.jsonl``. The
fingerprint is sha256 over the corpus, the queries and the loaded qrels files (in
split-name order; one split: the same three files as before splits were merged),
read in 1 MiB blocks. Files are read one line at a time (``json.loads`` per
line), so a corpus of millions of passages needs memory for its sections only.

Every problem is reported with its file and line, gathered per file (at most
:data:`receval.scoring.qrels.MAX_PROBLEMS`), so a broken file is mended in one pass.
"""

from __future__ import annotations

import json
from pathlib import Path

from receval.datasets.types import Dataset, Question, Section, fingerprint
from receval.datasets.beir_splits import judged_ids, one_split_each, split_names
from receval.scoring.qrels import raise_problems, read_judgements
from receval.core.errors import DatasetError

KIND = "judged"
SHOW_IDS = 5  # unknown ids named in a message; the rest are counted
LAYOUT = (
    "a BEIR folder holds corpus.jsonl, queries.jsonl and qrels/<split>.tsv "
    "(header 'query-id<TAB>corpus-id<TAB>score')"
)


def _string_id(value) -> str | None:
    """``_id`` as a string (JSON integers accepted, as some exports write them)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value and value == value.strip():
        return value
    return None


_raw_decode = json.JSONDecoder().raw_decode


def _jsonl(path: Path, problems: list[str]):
    """(line number, decoded object) of each non-blank line; bad lines go to ``problems``."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                problems.append(f"{path}:{number}: not UTF-8 text ({error.reason}); save the file as UTF-8")
                continue
            try:  # fast path: the line starts with its value; a bad line is re-read by json.loads for its message
                record, end = _raw_decode(text)
                if text[end:].strip():
                    raise ValueError
            except (ValueError, RecursionError):
                if not text.strip():
                    continue
                try:
                    record = json.loads(text)
                except json.JSONDecodeError as error:
                    problems.append(
                        f"{path}:{number}: not valid JSON ({error.msg} at column {error.colno}); fix the line"
                    )
                    continue
                except (ValueError, RecursionError) as error:  # a number too long, nesting too deep
                    problems.append(f"{path}:{number}: JSON that cannot be read ({type(error).__name__}); fix the line")
                    continue
            if not isinstance(record, dict):
                problems.append(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
                continue
            yield number, record


def read_corpus(path: Path, title: bool) -> list[Section]:
    """One section per document, in file order."""
    problems: list[str] = []
    sections: list[Section] = []
    first_line: dict[str, int] = {}
    for number, record in _jsonl(path, problems):
        doc_id = _string_id(record.get("_id"))
        head = record.get("title") or ""
        body = record.get("text") or ""
        if doc_id is None or doc_id in first_line or type(head) is not str or type(body) is not str:
            at = f"{path}:{number}"
            if doc_id is None:
                problems.append(f"{at}: missing or empty '_id' (or with spaces at its ends); give every document an id")
            if not isinstance(head, str) or not isinstance(body, str):
                problems.append(f"{at}: 'title' and 'text' must be strings")
            elif doc_id in first_line:
                problems.append(f"{at}: duplicate document id {doc_id!r} (first at line {first_line[doc_id]})")
            continue
        first_line[doc_id] = number
        if title and head:
            text = f"{head}\n{body}" if body else head
        else:
            text = body
        sections.append(Section(doc_id, doc_id, (), text))
    if not sections and not problems:
        problems.append(f"{path}: holds no documents; write one JSON object per line")
    raise_problems(problems)
    return sections


def read_queries(path: Path) -> dict[str, str]:
    """Query id -> text, in file order."""
    problems: list[str] = []
    queries: dict[str, str] = {}
    lines: dict[str, int] = {}
    for number, record in _jsonl(path, problems):
        at = f"{path}:{number}"
        qid = _string_id(record.get("_id"))
        text = record.get("text")
        if qid is None:
            problems.append(f"{at}: missing or empty '_id'; give every query an id")
            continue
        if not isinstance(text, str):
            problems.append(f"{at}: query {qid!r} has no 'text' string")
            continue
        if qid in lines:
            problems.append(f"{at}: duplicate query id {qid!r} (first at line {lines[qid]})")
            continue
        queries[qid] = text
        lines[qid] = number
    raise_problems(problems)
    return queries


def _unknown(path: Path, what: str, found: dict[str, int], fix: str) -> str:
    """One message for every id (-> first qrels line) that names nothing known."""
    first = list(found.items())[:SHOW_IDS]
    named = ", ".join(f"{ident!r} (line {line})" for ident, line in first)
    more = f" and {len(found) - SHOW_IDS} more" if len(found) > SHOW_IDS else ""
    noun = what if len(found) == 1 else f"{what}s"
    return f"{path}: {len(found)} unknown {noun}: {named}{more}; {fix}"


def _files(cfg) -> tuple[Path, Path, Path, dict[str, Path], bool]:
    """(root, corpus, queries, split name -> qrels file, whether the splits were named)."""
    if not cfg.path:
        raise DatasetError(f"dataset.path is required for dataset.format=beir; {LAYOUT}")
    root = Path(cfg.path).expanduser()
    if not root.is_dir():
        raise DatasetError(f"dataset.path={str(root)!r} is not a folder; {LAYOUT}")
    names = split_names(cfg.split)
    corpus = root / "corpus.jsonl"
    queries = Path(cfg.questions).expanduser() if cfg.questions else root / "queries.jsonl"
    here = sorted(p.stem for p in (root / "qrels").glob("*.tsv") if p.is_file())
    missing = [f"{file}: not found" for file in (corpus, queries) if not file.is_file()]
    if names is None:
        if not here:
            missing.append(f"{root / 'qrels'}: holds no <split>.tsv file")
        names = here
    for name in names:
        if name not in here:
            have = f"; splits here: {', '.join(here)}" if here else ""
            missing.append(f"{root / 'qrels' / (name + '.tsv')}: not found (dataset.split={cfg.split!r}){have}")
    if missing:
        raise DatasetError([*missing, LAYOUT])
    return root, corpus, queries, {name: root / "qrels" / f"{name}.tsv" for name in sorted(names)}, cfg.split is not None


def load_sections(cfg) -> list[Section]:
    """The corpus alone (no queries, qrels or split needed)."""
    if not cfg.path:
        raise DatasetError(f"dataset.path is required for dataset.format=beir; {LAYOUT}")
    corpus = Path(cfg.path).expanduser() / "corpus.jsonl"
    if not corpus.is_file():
        raise DatasetError([f"{corpus}: not found", LAYOUT])
    return read_corpus(corpus, bool(cfg.title))


def question_of(qid: str, text: str, split: str, scores: dict[str, int]) -> Question | None:
    """A judged query as a question: the documents scored >= 1 are relevant (grade =
    score), those scored exactly 0 its ``nonrelevant`` (for ``bpref``); None when no
    document is relevant. The rule of every judged format (beir, ir_datasets)."""
    relevant = {doc_id: score for doc_id, score in scores.items() if score >= 1}
    if not relevant:
        return None
    nonrelevant = tuple(doc_id for doc_id, score in scores.items() if score == 0)
    return Question(qid, text, KIND, split, relevant, nonrelevant=nonrelevant)


def load(cfg) -> Dataset:
    """Load a BEIR folder (``dataset.path``) and the judgements of its splits
    (``dataset.split``: null for every split, a name, or a list of names)."""
    root, corpus_file, queries_file, split_files, named = _files(cfg)
    sections = read_corpus(corpus_file, bool(cfg.title))
    queries = read_queries(queries_file)
    qrels = {name: read_judgements(path) for name, path in split_files.items()}
    without_relevant = _drop_splits_without_relevant(qrels, split_files, named, root)
    one_split_each(qrels, split_files)
    raise_problems(_unknown_ids(qrels, split_files, {section.id for section in sections}, queries,
                                corpus_file, queries_file))

    split_of = {qid: name for name, judged in qrels.items() for qid in judged}
    questions: list[Question] = []
    no_relevant = 0
    for qid, text in queries.items():
        name = split_of.get(qid)
        if name is None:
            continue
        question = question_of(qid, text, name, {doc_id: score for doc_id, (score, _) in qrels[name][qid].items()})
        if question is None:
            no_relevant += 1
            continue
        questions.append(question)
    notes = _notes(root, qrels, queries, split_of, questions, no_relevant)
    if without_relevant:
        notes["splits_without_relevant"] = without_relevant
    return Dataset(
        name=cfg.name,
        sections=sections,
        questions=questions,
        fingerprint=fingerprint([corpus_file, queries_file, *(split_files[name] for name in qrels)], root),
        notes=notes,
    )


def _drop_splits_without_relevant(qrels: dict, split_files: dict[str, Path], named: bool, root: Path) -> list[str]:
    """The splits with no relevant document (score >= 1), dropped from ``qrels`` (named in
    the notes); an error when the split was asked for by name or none is left."""
    without_relevant = [
        name for name, judged in qrels.items()
        if not any(score >= 1 for docs in judged.values() for score, _ in docs.values())
    ]
    for name in without_relevant:
        if named:
            raise DatasetError(
                f"{split_files[name]}: no query has a relevant document (score >= 1) in split "
                f"{name!r}; choose another dataset.split"
            )
        del qrels[name]  # adds no question: named in the notes
    if not qrels:
        raise DatasetError(
            f"{root / 'qrels'}: no split has a relevant document (score >= 1); "
            "a BEIR run needs judgements with score >= 1"
        )
    return without_relevant


def _unknown_ids(qrels: dict, split_files: dict[str, Path], known: set[str], queries: dict[str, str],
                 corpus_file: Path, queries_file: Path) -> list[str]:
    """A problem per split judging a document or query id the corpus or queries lack."""
    problems = []
    for name, judged in qrels.items():
        unknown_docs: dict[str, int] = {}
        unknown_queries: dict[str, int] = {}
        for qid, docs in judged.items():
            if qid not in queries:
                unknown_queries.setdefault(qid, min(line for _, line in docs.values()))
            for doc_id, (_, line) in docs.items():
                if doc_id not in known:
                    unknown_docs.setdefault(doc_id, line)
        if unknown_docs:
            problems.append(
                _unknown(split_files[name], "document id", unknown_docs, f"every corpus-id must be an _id in {corpus_file}")
            )
        if unknown_queries:
            problems.append(
                _unknown(split_files[name], "query id", unknown_queries, f"every query-id must be an _id in {queries_file}")
            )
    return problems


def _notes(root: Path, qrels: dict, queries: dict[str, str], split_of: dict[str, str], questions: list[Question],
           no_relevant: int) -> dict:
    """What the load kept and left out, counted for the run's notes."""
    others = set()
    for path in (root / "qrels").glob("*.tsv"):
        if path.stem not in qrels and path.is_file():
            others |= judged_ids(path)
    others = (others & queries.keys()) - split_of.keys()
    return {
        "splits": {name: sum(q.split == name for q in questions) for name in qrels},
        "unjudged_questions": len(queries) - len(split_of) - len(others),
        "other_split_questions": len(others),
        "no_relevant_questions": no_relevant,
        "judged_not_relevant": sum(
            score <= 0 for judged in qrels.values() for docs in judged.values() for score, _ in docs.values()
        ),
    }
