"""Folder datasets: parsing someone else's site, and every bad input with its message."""

from __future__ import annotations

import json

import pytest

from receval.datasets import load_dataset
from receval.core.errors import DatasetError
from receval.run.pipeline import run


def load(make_config, path, *overrides):
    cfg = make_config("dataset=folder", f"dataset.path={path}", *overrides)
    return load_dataset(cfg.dataset)


def write_questions(site, *records):
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    (site / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def problems(excinfo) -> list[str]:
    return excinfo.value.problems


def test_a_site_written_by_someone_else_loads(make_config, site):
    dataset = load(make_config, site)
    assert [s.id for s in dataset.sections] == [
        "bikes#bike-hire",
        "bikes#prices",
        "bikes#prices-2",
        "bikes#returning-a-bike",
        "bikes#damaged-bikes",
        "safety#safety",
        "safety#helmets",
        "safety#night-riding",
    ]
    damaged = dataset.sections[4]
    assert damaged.heading == "Bike hire > Returning a bike > Damaged bikes"
    assert "inside a fence" in damaged.text  # a '#' line in a code fence is text
    b2 = next(q for q in dataset.questions if q.id == "b2")
    assert b2.relevant == {"bikes#prices-2": 2, "bikes#prices": 1}
    assert [q.kind for q in dataset.questions].count("unanswerable") == 1
    assert len(dataset.fingerprint) == 64


def test_fingerprint_changes_with_any_page_or_question(make_config, site):
    before = load(make_config, site).fingerprint
    page = site / "pages" / "safety.md"
    page.write_text(page.read_text() + "\nAlso: bells.\n")
    after_page = load(make_config, site).fingerprint
    write_questions(site, {"id": "x", "question": "Bells?", "relevant": ["safety#night-riding"]})
    after_questions = load(make_config, site).fingerprint
    assert len({before, after_page, after_questions}) == 3


def test_all_problems_are_reported_together_with_file_and_line(make_config, site):
    write_questions(
        site,
        {"id": "a", "question": "Day pass price?", "relevant": ["bikes#price"]},
        '{"id": "b", "question": "broken" "relevant": []}',
        {"id": "a", "question": "Again?", "relevant": ["bikes#prices"]},
        {"id": "c", "question": "   ", "relevant": ["bikes#prices"]},
        {"id": "d", "question": "No labels?"},
        {"id": "e", "question": "Graded badly", "relevant": {"bikes#prices": 0}},
        {"id": "f", "question": "Nothing to find", "kind": "unanswerable"},
    )
    with pytest.raises(DatasetError) as excinfo:
        load(make_config, site)
    found = problems(excinfo)
    path = site / "questions.jsonl"
    assert len(found) == 6  # every problem, in file order; f (unanswerable) is fine
    assert f"{path}:1: question 'a' labels 'bikes#price', which names no section; closest: bikes#prices" in found[0]
    assert f"{path}:2: not valid JSON" in found[1]
    assert f"{path}:3: duplicate question id 'a' (first at {path}:1)" in found[2]
    assert f"{path}:4: empty question" in found[3]
    assert f"{path}:5: question 'd' has no relevant sections" in found[4]
    assert 'set "kind": "unanswerable"' in found[4]
    assert f"{path}:6: grade of 'bikes#prices' must be an integer >= 1, got 0" in found[5]


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ("[1, 2]", "expected a JSON object, got list"),
        ({"question": "Who?", "relevant": ["bikes#prices"]}, "missing 'id'"),
        ({"id": "x", "question": "Who?", "relevant": "bikes#prices"}, "'relevant' must be a list"),
        ({"id": "x", "question": "Who?", "relevant": [3]}, "must list section ids as strings"),
        ({"id": "x", "question": "Who?", "relevant": {"bikes#prices": 1.5}}, "integer >= 1, got 1.5"),
        ({"id": "x", "question": "Who?", "kind": "", "relevant": ["bikes#prices"]}, "'kind' must be a non-empty string"),
        ({"id": "x", "question": "Who?", "relevant": ["bikes#nope"]}, "closest: bikes#"),
    ],
)
@pytest.mark.slow
def test_each_bad_question_names_line_and_fix(make_config, site, record, message):
    write_questions(site, record)
    with pytest.raises(DatasetError, match="questions.jsonl:1: ") as excinfo:
        load(make_config, site)
    assert message in problems(excinfo)[0]


def test_missing_folder_pages_and_questions(make_config, tmp_path):
    with pytest.raises(DatasetError, match="is not a folder"):
        load(make_config, tmp_path / "nowhere")
    with pytest.raises(DatasetError, match="no pages/ folder"):
        load(make_config, tmp_path)
    (tmp_path / "pages").mkdir()
    with pytest.raises(DatasetError, match=r"no pages found; put one Markdown file per page in pages/\*\.md"):
        load(make_config, tmp_path)
    (tmp_path / "pages" / "a.md").write_text("# A\n\nSome text.\n")
    with pytest.raises(DatasetError, match="questions file not found"):
        load(make_config, tmp_path)
    (tmp_path / "questions.jsonl").write_text("\n\n")
    with pytest.raises(DatasetError, match="holds no questions"):
        load(make_config, tmp_path)


def test_non_utf8_files_are_named(make_config, site):
    (site / "pages" / "latin.md").write_bytes("# Caf\xe9\n\ntext\n".encode("latin-1"))
    with pytest.raises(DatasetError, match=r"latin\.md: not UTF-8 text"):
        load(make_config, site)


def test_questions_file_can_be_overridden(make_config, site, tmp_path):
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "z", "question": "Helmets?", "relevant": ["safety#helmets"]}) + "\n")
    dataset = load(make_config, site, f"dataset.questions={other}")
    assert [q.id for q in dataset.questions] == ["z"]
    assert dataset.questions[0].kind == "unspecified" and dataset.questions[0].split == "all"


def test_bad_dataset_writes_no_results(make_config, site, tmp_path):
    write_questions(site, {"id": "x", "question": "Who?", "relevant": ["bikes#nope"]})
    cfg = make_config("dataset=folder", f"dataset.path={site}")
    out = tmp_path / "run"
    with pytest.raises(DatasetError):
        run(cfg, out)
    assert not out.exists() or not any(out.iterdir())
