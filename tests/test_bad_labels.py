"""Issue 10, items 10, 12 and 13: label files and messages that misled, and the
overlap step that re-read every labelled section once per question."""

from __future__ import annotations

import json
import os

import pyarrow.parquet as pq
import pytest
from omegaconf import OmegaConf

from receval.measures import overlap
from receval.datasets import Question, Section, folder
from receval.datasets.questions import read_questions
from receval.core.errors import DatasetError, RecevalError, RunError
from receval.cli.report import parse_floors
from receval.results import open_run
from conftest import run_of
from forge import forged


def _dataset(root, pages: dict[str, str], questions: list[dict | str]):
    (root / "pages").mkdir(parents=True)
    for name, text in pages.items():
        (root / "pages" / f"{name}.md").write_text(text, encoding="utf-8")
    lines = [q if isinstance(q, str) else json.dumps(q, ensure_ascii=False) for q in questions]
    (root / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return OmegaConf.create({"name": "t", "path": str(root), "questions": None})


def test_raw_line_separators_inside_json_strings_stay_on_their_line(tmp_path):
    # valid JSON: U+2028, U+2029 and U+0085 unescaped inside a string (synth writes them so)
    weird = {"id": "q1", "question": "opening\u2028hours\u2029on\u0085sundays?", "relevant": ["a#a"]}
    cfg = _dataset(tmp_path, {"a": "# A\nopening hours on sundays\n"}, [weird, '{"id": "q2", "question": "x"'])
    with pytest.raises(DatasetError) as raised:
        folder.load(cfg)
    assert [str(p).split(": ", 1)[0] for p in raised.value.problems] == [f"{tmp_path}/questions.jsonl:2"]
    (tmp_path / "questions.jsonl").write_text(json.dumps(weird, ensure_ascii=False) + "\n", encoding="utf-8")
    assert folder.load(cfg).questions[0].text == weird["question"]


def test_nfd_page_file_name_matches_an_nfc_label(tmp_path):
    cfg = _dataset(tmp_path, {"cafe\u0301": "# Opening hours\nNine to five.\n"},
                   [{"id": "q", "question": "when?", "relevant": ["caf\u00e9#opening-hours"]}])
    dataset = folder.load(cfg)
    assert dataset.questions[0].relevant == {"caf\u00e9#opening-hours": 1}
    assert [s.id for s in dataset.sections] == ["caf\u00e9#opening-hours"]


def test_unlistable_pages_folder_is_reported_as_such(tmp_path, monkeypatch):
    cfg = _dataset(tmp_path, {"a": "# A\ntext\n"}, [{"id": "q", "question": "x?", "relevant": ["a#a"]}])
    real = os.scandir
    pages = str(tmp_path / "pages")

    def denied(path="."):
        if os.fspath(path) == pages:
            raise PermissionError(13, "Permission denied", path)
        return real(path)

    monkeypatch.setattr(os, "scandir", denied)
    with pytest.raises(DatasetError, match="cannot list the pages \\(Permission denied\\)"):
        folder.load(cfg)


def test_a_float_id_is_a_wrong_type_not_a_missing_id(tmp_path):
    cfg = _dataset(tmp_path, {"a": "# A\ntext\n"}, [{"id": 1.5, "question": "x?", "relevant": ["a#a"]}])
    with pytest.raises(DatasetError) as raised:
        folder.load(cfg)
    message = str(raised.value)
    assert "'id' must be a string or an integer, got float 1.5" in message
    assert "missing" not in message


def test_a_repeated_fail_under_floor_is_refused():
    with pytest.raises(RecevalError, match="hit@3 is given twice"):
        parse_floors(["hit@3=0.5", "hit@3=0.9"])
    with pytest.raises(RecevalError, match="hit@3 is given twice"):
        parse_floors(["hit@3=0.5,rr=0.2,hit@3=0.9"])
    assert parse_floors(["hit@3=0.5", "rr=0.2"]) == {"hit@3": "0.5", "rr": "0.2"}


def test_report_refuses_repeated_question_ids_like_compare(tmp_path_factory):
    run_dir = run_of(tmp_path_factory, "retriever=bm25")
    path = run_dir / "results.parquet"
    table = pq.read_table(path)
    ids = table.column("question_id").to_pylist()
    ids[1] = ids[0]
    table = table.set_column(0, table.schema.field(0), [ids])
    pq.write_table(table, path)
    forged(run_dir)
    with pytest.raises(RunError, match="question ids repeat"):
        open_run(run_dir)  # what report and compare both read runs with


def test_overlap_reads_each_labelled_section_once_per_run(monkeypatch):
    passage = " ".join(f"word{i}" for i in range(500))
    section = Section("p#s", "p", ("P",), passage)
    questions = [Question(f"q{i}", f"word{i} word{i + 1} and more", "k", "all", {"p#s": 1}) for i in range(5)]
    expected = overlap.overlap_columns(questions, {"p#s": section})
    sizes = []
    real = overlap._ngrams
    monkeypatch.setattr(overlap, "_ngrams", lambda tokens, n: sizes.append(len(tokens)) or real(tokens, n))
    assert overlap.overlap_columns(questions, {"p#s": section}) == expected
    assert sum(size >= 499 for size in sizes) == 2  # unigrams and bigrams of the passage, once
    assert expected["rouge1_p"][0] == pytest.approx(2 / 4)  # word0, word1 of (word0 word1 and more)
