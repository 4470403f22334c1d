"""BEIR datasets: documents as sections, judged questions, notes, and every bad input."""

from __future__ import annotations

import hashlib
import json

import pytest

from conftest import FIXTURES, SHARED
from receval.chunking.words import chunk_sections
from receval.run.config import check
from receval.datasets import load_dataset
from receval.datasets.beir import fingerprint
from receval.core.errors import ConfigError, DatasetError
from receval.run.pipeline import run
from receval.results import open_run

CRANFIELD = SHARED / "datasets" / "cranfield"
SPLITS = FIXTURES / "beir-splits"  # 12 library documents; qrels/train.tsv (q1-q6, q12 score 0 only), qrels/test.tsv (q7-q10)
SCIFACT = SHARED / "datasets" / "scifact"

DOCS = [
    {"_id": "d1", "title": "Library fines", "text": "Late books cost ten pence a day."},
    {"_id": "d2", "title": "", "text": "Renew loans online or at the desk."},
    {"_id": "d3", "title": "Opening hours", "text": ""},
    {"_id": "d4", "title": "Rooms", "text": "Book a study room for two hours."},
]
QUERIES = [
    {"_id": "q1", "text": "how much is a late fine"},
    {"_id": "q2", "text": "when is the library open"},
    {"_id": "q3", "text": "can I renew a loan"},  # judged, but only with score 0
    {"_id": "q4", "text": "where do I park"},  # not judged in this split
]
QRELS = [("q1", "d1", 2), ("q1", "d2", 1), ("q2", "d3", 1), ("q2", "d4", 0), ("q3", "d2", 0)]


def write_beir(root, docs=DOCS, queries=QUERIES, qrels=QRELS, split="test"):
    """A BEIR folder; ``docs``/``queries`` items may be raw lines, ``qrels`` raw text."""
    (root / "qrels").mkdir(parents=True, exist_ok=True)

    def lines(items):
        return "".join((i if isinstance(i, str) else json.dumps(i)) + "\n" for i in items)

    (root / "corpus.jsonl").write_text(lines(docs), encoding="utf-8")
    (root / "queries.jsonl").write_text(lines(queries), encoding="utf-8")
    if not isinstance(qrels, str):
        qrels = "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in qrels)
    (root / "qrels" / f"{split}.tsv").write_text(qrels, encoding="utf-8")
    return root


@pytest.fixture
def beir(tmp_path):
    return write_beir(tmp_path / "beir")


def load(make_config, path, *overrides):
    cfg = make_config("dataset=beir", f"dataset.path={path}", *overrides)
    return load_dataset(cfg.dataset)


def problems(excinfo) -> list[str]:
    return excinfo.value.problems


# --------------------------------------------------------------------------- loading


def test_documents_are_sections_and_judged_queries_are_questions(make_config, beir):
    dataset = load(make_config, beir)
    assert [(s.id, s.page, s.heading_path) for s in dataset.sections] == [
        ("d1", "d1", ()), ("d2", "d2", ()), ("d3", "d3", ()), ("d4", "d4", ()),
    ]
    assert [s.text for s in dataset.sections] == [
        "Library fines\nLate books cost ten pence a day.",
        "Renew loans online or at the desk.",  # no title: no empty line
        "Opening hours",  # empty text: the title alone
        "Rooms\nBook a study room for two hours.",
    ]
    assert [(q.id, q.kind, q.split, q.relevant) for q in dataset.questions] == [
        ("q1", "judged", "test", {"d1": 2, "d2": 1}),
        ("q2", "judged", "test", {"d3": 1}),  # the score-0 judgement is not a label
    ]
    assert all(q.answerable for q in dataset.questions)
    assert dataset.notes == {
        "splits": {"test": 2}, "unjudged_questions": 1, "other_split_questions": 0,
        "no_relevant_questions": 1, "judged_not_relevant": 2,
    }
    assert dataset.name == "beir" and len(dataset.fingerprint) == 64


def test_title_false_indexes_text_alone(make_config, beir):
    dataset = load(make_config, beir, "dataset.title=false")
    assert [s.text for s in dataset.sections] == [d["text"] for d in DOCS]


def test_the_title_is_never_doubled_by_chunking_headings(make_config, beir):
    sections = load(make_config, beir).sections
    for max_words in (None, 3):
        chunks = chunk_sections(sections, max_words, 0, headings=True)
        first = [c for c in chunks if c.section_id == "d1"]
        assert sum(c.text.count("Library fines") for c in first) == 1
        assert "Library fines" in first[0].text


def test_split_and_questions_file_are_configurable(make_config, tmp_path):
    root = write_beir(tmp_path / "b", qrels=[("q4", "d4", 3)], split="dev")
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"_id": "q4", "text": "park where"}) + "\n")
    dataset = load(make_config, root, "dataset.split=dev", f"dataset.questions={other}")
    assert [(q.id, q.text, q.split, q.relevant) for q in dataset.questions] == [
        ("q4", "park where", "dev", {"d4": 3})
    ]
    assert dataset.notes["unjudged_questions"] == 0


def test_integer_ids_blank_lines_and_crlf_are_accepted(make_config, tmp_path):
    root = write_beir(
        tmp_path / "b",
        docs=[{"_id": 7, "title": "T", "text": "x y"}, "", {"_id": "8", "text": "z"}],
        queries=[{"_id": 1, "text": "x"}],
        qrels="query-id\tcorpus-id\tscore\r\n1\t7\t1\r\n\r\n1\t8\t1\r\n1\t8\t1\r\n",
    )
    dataset = load(make_config, root)
    assert [s.id for s in dataset.sections] == ["7", "8"]
    assert dataset.questions[0].relevant == {"7": 1, "8": 1}  # a repeated judgement is kept once


def test_fingerprint_covers_the_three_files_in_blocks(make_config, beir):
    before = load(make_config, beir).fingerprint
    seen = {before}
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        path = beir / name
        path.write_text(path.read_text() + "\n")
        seen.add(load(make_config, beir).fingerprint)
    assert len(seen) == 4
    files = [beir / "corpus.jsonl", beir / "queries.jsonl", beir / "qrels" / "test.tsv"]
    whole = hashlib.sha256()
    for f in files:
        whole.update(f.relative_to(beir).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    assert fingerprint(files, beir) == whole.hexdigest()


def test_a_beir_run_end_to_end(make_config, beir, tmp_path):
    cfg = make_config(
        "dataset=beir", f"dataset.path={beir}", "chunking.max_words=null", "metrics.ks=[1,3]", "depth=4"
    )
    result = run(cfg, tmp_path / "run")
    table = open_run(tmp_path / "run", skip=frozenset()).table.to_pydict()
    assert result.n_questions == 2 and result.n_unanswerable == 0
    assert table["question_id"] == ["q1", "q2"]
    assert table["relevant"] == [["d1", "d2"], ["d3"]] and table["grades"] == [[2, 1], [1]]
    assert table["retrieved"][0][0] == "d1" and table["rr"][0] == 1.0


# --------------------------------------------------------------------------- splits


def test_every_split_loads_into_one_run_with_its_name(make_config):
    dataset = load(make_config, SPLITS)
    assert [(q.id, q.split) for q in dataset.questions] == [
        ("q1", "train"), ("q2", "train"), ("q3", "train"), ("q4", "train"), ("q5", "train"), ("q6", "train"),
        ("q7", "test"), ("q8", "test"), ("q9", "test"), ("q10", "test"),
    ]
    assert dataset.notes == {
        "splits": {"test": 4, "train": 6},
        "unjudged_questions": 1,  # q11: no file judges it
        "other_split_questions": 0,
        "no_relevant_questions": 1,  # q12: judged in train, score 0 only
        "judged_not_relevant": 2,
    }


@pytest.mark.slow
def test_one_split_counts_the_others_judged_queries_apart_from_unjudged(make_config):
    """Why run.json called SciFact's 809 train-judged queries "unjudged": only the chosen
    split's file was read, and every other query counted as unjudged."""
    test = load(make_config, SPLITS, "dataset.split=test")
    assert [q.id for q in test.questions] == ["q7", "q8", "q9", "q10"]
    assert test.notes["unjudged_questions"] == 1 and test.notes["other_split_questions"] == 7  # q1-q6, q12
    both = load(make_config, SPLITS, "dataset.split=[train,test]")
    assert both.questions == load(make_config, SPLITS).questions
    single = fingerprint([SPLITS / "corpus.jsonl", SPLITS / "queries.jsonl", SPLITS / "qrels" / "test.tsv"], SPLITS)
    assert test.fingerprint == single  # one split: the same files, the same fingerprint as before


def test_a_query_judged_in_two_splits_is_an_error_naming_both_files(make_config, tmp_path):
    root = write_beir(tmp_path / "b", qrels=[("q1", "d1", 1), ("q2", "d3", 1)], split="train")
    write_beir(root, qrels=[("q4", "d4", 1), ("q1", "d2", 1)], split="test")
    with pytest.raises(DatasetError) as excinfo:
        load(make_config, root)
    assert problems(excinfo) == [
        f"query 'q1' is judged in {root / 'qrels' / 'test.tsv'}:3 and in {root / 'qrels' / 'train.tsv'}:2; "
        "a question belongs to one split (tuning on one must not see the other): keep its judgements "
        "in one file, or load one of them with dataset.split=NAME"
    ]
    assert [q.id for q in load(make_config, root, "dataset.split=train").questions] == ["q1", "q2"]


@pytest.mark.slow
def test_a_split_without_relevant_judgements_is_left_out_unless_named(make_config, tmp_path):
    root = write_beir(tmp_path / "b")
    write_beir(root, qrels=[("q4", "d1", 0)], split="sources")
    dataset = load(make_config, root)
    assert [q.split for q in dataset.questions] == ["test", "test"]
    assert dataset.notes["splits_without_relevant"] == ["sources"]
    assert dataset.notes["other_split_questions"] == 1 and dataset.notes["unjudged_questions"] == 0
    for named in ("sources", "[test,sources]"):
        with pytest.raises(DatasetError, match=r"sources\.tsv: no query has a relevant document .* split 'sources'"):
            load(make_config, root, f"dataset.split={named}")


@pytest.mark.parametrize("value, says", [
    ("''", "name a qrels file of the folder"),
    ("[test,test]", "names a split twice"),
    ("[]", "name a qrels file of the folder"),
    ("[dev,test]", r"dev\.tsv: not found"),
])
@pytest.mark.slow
def test_bad_split_values(make_config, beir, value, says):
    with pytest.raises(DatasetError, match=says):
        load(make_config, beir, f"dataset.split={value}")


@pytest.mark.slow
def test_select_tunes_on_train_and_reports_on_test_of_one_beir_folder(tmp_path_factory):
    from conftest import run_of

    from receval.cli.select import select

    runs = [
        run_of(tmp_path_factory, "dataset=beir", f"dataset.path={SPLITS}", "chunking.max_words=null",
               f"retriever={name}", "depth=5", "metrics.ks=[1,3,5]")
        for name in ("bm25", "tfidf")
    ]
    selection, best = select([str(r) for r in runs], metric="rr", split="train", prefer="chunks", report_on="test")
    table = open_run(best.run_dir, skip=frozenset()).table.to_pydict()
    test = [rr for rr, split in zip(table["rr"], table["split"]) if split == "test"]
    train = [rr for rr, split in zip(table["rr"], table["split"]) if split == "train"]
    assert len(test) == 4 and len(train) == 6
    held = selection.held_out
    assert held["split"] == "test" and held["n_questions"] == 4
    assert held["mean"] == pytest.approx(sum(test) / 4)
    assert held["overstated"] == pytest.approx(sum(train) / 6 - sum(test) / 4)


# --------------------------------------------------------------------------- real collections


@pytest.mark.skipif(not CRANFIELD.is_dir(), reason=f"shared test collection absent: {CRANFIELD}")
@pytest.mark.slow
def test_cranfield_loads(make_config):
    dataset = load(make_config, CRANFIELD)
    assert len(dataset.sections) == 1400 and len(dataset.questions) == 225
    grades = {g for q in dataset.questions for g in q.relevant.values()}
    assert grades == {1, 2, 3, 4}
    assert sum(len(q.relevant) for q in dataset.questions) == 1612
    assert dataset.notes == {  # every split loaded; the source-paper list (all score 0) adds no question
        "splits": {"test": 225}, "unjudged_questions": 0, "other_split_questions": 0,
        "no_relevant_questions": 0, "judged_not_relevant": 0, "splits_without_relevant": ["test_source_docs"],
    }
    assert dataset.fingerprint == load(make_config, CRANFIELD, "dataset.split=test").fingerprint


@pytest.mark.skipif(not CRANFIELD.is_dir(), reason=f"shared test collection absent: {CRANFIELD}")
def test_a_split_with_only_score_zero_judgements_is_an_error(make_config):
    with pytest.raises(DatasetError, match=r"test_source_docs\.tsv: no query has a relevant document"):
        load(make_config, CRANFIELD, "dataset.split=test_source_docs")


@pytest.mark.skipif(not SCIFACT.is_dir(), reason=f"shared test collection absent: {SCIFACT}")
def test_scifact_train_loads_every_document_and_judged_question(make_config):
    # counts, not seconds: a timed assertion fails on a loaded machine (speed lives in benchmarks/)
    dataset = load(make_config, SCIFACT, "dataset.split=train")
    assert len(dataset.sections) == 5183 and len(dataset.questions) == 809
    assert dataset.notes["unjudged_questions"] == 1109 - 809


# --------------------------------------------------------------------------- bad inputs


def test_path_is_required(make_config):
    cfg = make_config("dataset=beir")
    with pytest.raises(ConfigError, match=r"dataset\.path is required"):
        check(cfg)


def test_not_a_folder(make_config, tmp_path):
    with pytest.raises(DatasetError, match=r"is not a folder; a BEIR folder holds corpus\.jsonl"):
        load(make_config, tmp_path / "nowhere")


@pytest.mark.parametrize("name", ["corpus.jsonl", "queries.jsonl"])
def test_a_missing_file_is_named_with_the_layout(make_config, beir, name):
    (beir / name).unlink()
    with pytest.raises(DatasetError) as excinfo:
        load(make_config, beir)
    assert problems(excinfo) == [
        f"{beir / name}: not found",
        "a BEIR folder holds corpus.jsonl, queries.jsonl and qrels/<split>.tsv "
        "(header 'query-id<TAB>corpus-id<TAB>score')",
    ]


def test_a_missing_split_lists_the_splits_there(make_config, beir):
    with pytest.raises(DatasetError, match=r"dev\.tsv: not found \(dataset\.split='dev'\); splits here: test"):
        load(make_config, beir, "dataset.split=dev")


def test_bad_json_lines_are_named_by_file_and_line(make_config, tmp_path):
    root = write_beir(
        tmp_path / "b",
        docs=[DOCS[0], '{"_id": "d2", "text": }', "[1, 2]", {"title": "no id"}, {"_id": "d9", "text": 5}, DOCS[0]],
    )
    with pytest.raises(DatasetError) as excinfo:
        load(make_config, root)
    corpus = root / "corpus.jsonl"
    assert problems(excinfo) == [
        f"{corpus}:2: not valid JSON (Expecting value at column 23); fix the line",
        f"{corpus}:3: expected a JSON object, got list",
        f"{corpus}:4: missing or empty '_id' (or with spaces at its ends); give every document an id",
        f"{corpus}:5: 'title' and 'text' must be strings",
        f"{corpus}:6: duplicate document id 'd1' (first at line 1)",
    ]


def test_bad_query_lines(make_config, tmp_path):
    root = write_beir(tmp_path / "b", queries=[QUERIES[0], {"_id": "q2"}, QUERIES[0]])
    queries = root / "queries.jsonl"
    queries.write_bytes(queries.read_bytes() + b'{"_id": "q5", "text": "caf\xe9"}\n')
    with pytest.raises(DatasetError) as excinfo:
        load(make_config, root)
    assert problems(excinfo)[:2] == [
        f"{queries}:2: query 'q2' has no 'text' string",
        f"{queries}:3: duplicate query id 'q1' (first at line 1)",
    ]
    assert problems(excinfo)[2].startswith(f"{queries}:4: not UTF-8 text (invalid continuation byte)")


def test_bad_qrels_lines_are_named_by_file_and_line(make_config, tmp_path):
    root = write_beir(
        tmp_path / "b",
        qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\nq1 d2 1\nq1\td2\thigh\nq1\td3\t1.5\n\td3\t1\nq1\td1\t2\n",
    )
    with pytest.raises(DatasetError) as excinfo:
        load(make_config, root)
    qrels = root / "qrels" / "test.tsv"
    expected = "expected 3 tab-separated columns 'query-id corpus-id score' with an integer score"
    assert problems(excinfo) == [
        f"{qrels}:3: {expected}, got 'q1 d2 1'",
        f"{qrels}:4: {expected}, got 'q1\\td2\\thigh'",
        f"{qrels}:5: {expected}, got 'q1\\td3\\t1.5'",
        f"{qrels}:6: {expected}, got '\\td3\\t1'",
        f"{qrels}:7: query 'q1' judges document 'd1' 2, but line 2 judges it 1; keep one judgement",
    ]


def test_unknown_documents_are_counted_with_the_first_few_named(make_config, tmp_path):
    qrels = [("q1", "d1", 1)] + [("q1", f"x{i}", 1) for i in range(7)] + [("q1", "x0", 1)]
    root = write_beir(tmp_path / "b", qrels=qrels)
    with pytest.raises(DatasetError) as excinfo:
        load(make_config, root)
    assert problems(excinfo) == [
        f"{root / 'qrels' / 'test.tsv'}: 7 unknown document ids: 'x0' (line 3), 'x1' (line 4), "
        f"'x2' (line 5), 'x3' (line 6), 'x4' (line 7) and 2 more; every corpus-id must be an "
        f"_id in {root / 'corpus.jsonl'}"
    ]


def test_a_query_missing_from_the_queries_file(make_config, tmp_path):
    root = write_beir(tmp_path / "b", qrels=[("q1", "d1", 1), ("q9", "d1", 1)])
    with pytest.raises(DatasetError, match=r"1 unknown query id: 'q9' \(line 3\); every query-id must be an _id in"):
        load(make_config, root)


def test_an_empty_corpus(make_config, tmp_path):
    root = write_beir(tmp_path / "b", docs=[])
    with pytest.raises(DatasetError, match=r"corpus\.jsonl: holds no documents"):
        load(make_config, root)
