"""``report --show`` and the HTML per-question panels on evidence labels (quotes and
spans, ``fixtures/essays``): the first relevant rank as ``results.parquet`` stores it,
``*`` on the chunks that hold part of the evidence, snippets, and the rank each missed
item was found at (issue 22: they once said "first relevant at -" and "not retrieved")."""

from __future__ import annotations

import json
import shutil

import pyarrow.parquet as pq
import pytest

from conftest import FIXTURES, exit_code, run_of
from receval.cli import report
from receval.chunking.words import chunk_sections
from receval.datasets import Evidence, folder
from receval.cli.report import report_for

ESSAYS = FIXTURES / "essays"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return [run_of(tmp_path_factory, "dataset=folder", f"dataset.path={ESSAYS}", f"chunking.max_words={w}")
            for w in (20, 40)]


def rows(run_dir) -> dict[str, dict]:
    return {r["question_id"]: r for r in pq.read_table(run_dir / "results.parquet").to_pylist()}


def letters(text: str) -> int:
    return sum(not c.isspace() for c in text)


def test_evidence_labels_round_trip():
    assert Evidence.parse("bees:684-731") == Evidence("bees", 684, 731)
    assert Evidence.parse("my:page:3-9") == Evidence("my:page", 3, 9)
    assert Evidence.parse("loans#loan-periods") is None and Evidence.parse("x:9-3") is None


@pytest.mark.slow
def test_show_agrees_with_results_parquet_and_marks_the_chunks_holding_evidence(runs):
    dataset = folder.load(folder_cfg())
    ids = [q.id for q in dataset.questions]
    built = report_for([*map(str, runs), "--show", ",".join(ids), "--top", "10"])
    assert [v.question_id for v in built.shown] == ids
    for words, run_dir, index in zip((20, 40), runs, range(2)):
        stored = rows(run_dir)
        chunks = {c.id: c for c in chunk_sections(dataset.sections, words, 0, True)}
        page_of = {s.id: s.page for s in dataset.sections}
        for view in built.shown:
            row, seen = stored[view.question_id], view.runs[index]
            assert seen.first_relevant_rank == row["first_relevant_rank"]
            assert [h.section_id for h in seen.top] == row["retrieved"][:10]
            question = next(q for q in dataset.questions if q.id == view.question_id)
            if not question.evidence:
                assert not seen.by_evidence  # scored by section: marks by section
                assert [h.relevant for h in seen.top] == [h.section_id in question.relevant for h in seen.top]
                continue
            assert seen.by_evidence and seen.note == ""
            assert all(h.snippet and h.heading for h in seen.top)
            for hit in seen.top:  # marked exactly when the chunk holds characters of an item
                chunk = chunks[hit.section_id]
                text = dataset.pages[page_of[chunk.section_id]]
                held = [
                    (e.label, letters(text[max(chunk.start, e.start):min(chunk.end, e.end)])
                     / letters(text[e.start:e.end]))
                    for e in question.evidence if e.page == page_of[chunk.section_id]
                ]
                held = [(label, share) for label, share in held if share > 0]
                assert hit.relevant == bool(held)
                assert [label for label, _ in hit.covers] == [label for label, _ in held]
                assert [share for _, share in hit.covers] == pytest.approx([share for _, share in held])
            first = row["first_relevant_rank"]
            if first:  # the chunk that completes an item is one that holds part of it
                assert seen.top[first - 1].relevant
            assert all(view.passages[e.label] for e in question.evidence)


def folder_cfg():
    from omegaconf import OmegaConf

    return OmegaConf.create({"name": "essays", "path": str(ESSAYS), "questions": None})


@pytest.mark.slow
def test_fresnel_and_honey_left_as_hand_computed(runs, capsys):
    """fresnel at 20 words (tests/test_evidence.py): @3 ranked first holds 6 of the
    quote's 29 words, @1 eighth 3, @2 tenth 20: found at rank 10. honey-left: bees@10,
    second, holds all of it."""
    built = report_for([str(runs[0]), "--show", "fresnel,honey-left", "--top", "10"])
    fresnel, honey = (view.runs[0] for view in built.shown)
    assert fresnel.first_relevant_rank == 10
    assert [h.rank for h in fresnel.top if h.relevant] == [1, 8, 10]
    assert [h.section_id for h in fresnel.top if h.relevant] == [
        "lighthouses#lighthouses@3", "lighthouses#lighthouses@1", "lighthouses#lighthouses@2"]
    assert sum(share for h in fresnel.top for _, share in h.covers) == pytest.approx(1.0)
    assert [h.rank for h in honey.top if h.relevant] == [2] and honey.first_relevant_rank == 2
    assert [share for _, share in honey.top[1].covers] == [1.0]

    assert exit_code(report.main, [runs[0], "--show", "fresnel", "--top", "5"]) == 0
    text = capsys.readouterr().out
    assert "first relevant at 10 (chunk ranks: evidence items as units)" in text
    assert "   * 1 " in text and "  [holds 2" in text  # about a fifth of the quote's letters
    assert "missed lighthouses:210-375 (found at rank 10)" in text
    assert "not retrieved" not in text and "first relevant at -" not in text
    assert 'relevant: lighthouses:210-375 "so a navigator who counted the flashes' in text


@pytest.mark.slow
def test_the_html_panels_say_the_same(runs, tmp_path):
    out = tmp_path / "r.html"
    assert exit_code(report.main, [*runs, "--format", "html", "--out", out]) == 0
    html = out.read_text()
    panel = html[html.index("<b>fresnel</b>"):]
    panel = panel[: panel.index("</details>")]
    assert "[max_words=20: 10 max_words=40: 1]" in panel
    assert "first relevant at 10 (chunk ranks: evidence items as units)" in panel
    assert "<span class='rel'>* lighthouses#lighthouses@3</span>" in panel
    assert "missed lighthouses:210-375 (found at rank 10)" in panel
    assert "not retrieved" not in panel


def test_show_reads_what_the_run_wrote_not_its_dataset(tmp_path, tmp_path_factory):
    """--show reads headings, snippets and evidence marks from the run folder (chunks.json,
    receval.run.shown): its dataset changed or gone, the view is the same, marks included."""
    data = tmp_path / "essays"
    shutil.copytree(ESSAYS, data)
    run_dir = run_of(tmp_path_factory, "dataset=folder", f"dataset.path={data}", "chunking.max_words=20")
    before = [v.to_dict() for v in report_for([str(run_dir), "--show", "fresnel,honey-left", "--top", "10"]).shown]
    page = data / "pages" / "lighthouses.md"
    page.write_text("Moved on. " + page.read_text())
    changed = [v.to_dict() for v in report_for([str(run_dir), "--show", "fresnel,honey-left", "--top", "10"]).shown]
    shutil.rmtree(data)
    gone = [v.to_dict() for v in report_for([str(run_dir), "--show", "fresnel,honey-left", "--top", "10"]).shown]
    assert before == changed == gone
    (fresnel,) = gone[0]["runs"]
    assert fresnel["first_relevant_rank"] == 10 and fresnel["note"] == ""
    assert [h["rank"] for h in fresnel["top"] if h["relevant"]] == [1, 8, 10]
    assert all(h["heading"] and h["snippet"] for h in fresnel["top"])
    assert fresnel["top"][0]["heading"] == "lighthouses"
    assert gone[0]["passages"]["lighthouses:210-375"].startswith("so a navigator who counted the flashes")


def test_a_run_written_before_show_facts_shows_ids_and_snippets_and_says_so(tmp_path, tmp_path_factory):
    """chunks.json with its chunks alone (as runs wrote it before headings and marks were
    stored): snippets from the stored chunks, no headings or marks, a note saying why."""
    from forge import forged

    run_dir = run_of(tmp_path_factory, "dataset=folder", f"dataset.path={ESSAYS}", "chunking.max_words=20")
    old = tmp_path / "old"
    shutil.copytree(run_dir, old)
    chunks = json.loads((old / "chunks.json").read_text())
    (old / "chunks.json").write_text(json.dumps({"chunks": chunks["chunks"]}))
    forged(old)
    (seen,) = report_for([str(old), "--show", "fresnel", "--top", "3"]).shown[0].runs
    assert seen.first_relevant_rank == 10  # what results.parquet says
    assert "written before --show's headings and evidence marks were stored" in seen.note
    assert not seen.by_evidence and not any(h.heading for h in seen.top)
    assert all(h.snippet for h in seen.top)  # the top 3 chunks are stored


def test_chunks_json_keeps_fewer_ranks_rather_than_pass_the_doors_limit(monkeypatch):
    """A run whose chunks.json would pass the door's bound keeps fewer ranks (then none), so
    the run stays readable: the door refuses a larger file outright."""
    import numpy as np

    import receval.results.door as door
    from receval.scoring.questions import Question
    from receval.run.shown import bounded_show_facts

    class Piece:  # a section and its one chunk: 1,000 characters each
        def __init__(self, i):
            self.id, self.section_id, self.start, self.end = f"s{i}", f"s{i}", 0, 1000
            self.heading, self.text = f"h{i}", "x" * 1000

    pieces = [Piece(i) for i in range(20)]
    questions = [Question(id=f"q{i}", text="why?", kind="direct", split="dev", relevant={}) for i in range(2)]
    ranked = np.array([list(range(10)), list(range(10, 20))])
    full = bounded_show_facts(questions, pieces, {}, pieces, ranked, ranked, 0.5, 10)
    assert full["top"] == 10 and len(full["chunks"]) == 20
    monkeypatch.setattr(door, "MAX_CHUNKS_BYTES", 25_000)  # room for about 5 ranks of 2 questions
    fewer = bounded_show_facts(questions, pieces, {}, pieces, ranked, ranked, 0.5, 10)
    assert fewer["top"] == 5 and sorted(fewer["chunks"]) == sorted(f"s{i}" for i in [*range(5), *range(10, 15)])
    monkeypatch.setattr(door, "MAX_CHUNKS_BYTES", 100)
    assert bounded_show_facts(questions, pieces, {}, pieces, ranked, ranked, 0.5, 10) == {
        "chunks": {}, "sections": {}, "evidence": {}, "top": 0}
