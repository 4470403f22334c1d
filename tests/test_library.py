"""The built-in library dataset: its shape, and the gap it was written to show."""

from __future__ import annotations

from collections import Counter

import pyarrow.parquet as pq
import pytest

from receval.datasets import LIBRARY, load_dataset
from receval.run.pipeline import run
from receval.results.format import RESULTS


@pytest.fixture(scope="module")
def library():
    from hydra import compose, initialize_config_dir

    from receval.run.config import config_dir

    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        return load_dataset(compose("config").dataset)


def test_pages_and_sections(library):
    pages = {s.page for s in library.sections}
    assert len(list((LIBRARY / "pages").glob("*.md"))) >= 10 and len(pages) >= 10
    assert len(library.sections) >= 50
    lengths = [len(s.text.split()) for s in library.sections]
    assert sum(n > 120 for n in lengths) >= 3 and sum(n < 30 for n in lengths) >= 3
    levels = {len(s.heading_path) for s in library.sections}
    assert {2, 3} <= levels  # '##' and '###' sections under each page's '#' title


def test_questions(library):
    questions = library.questions
    kinds = Counter(q.kind for q in questions)
    assert len(questions) >= 30
    assert abs(kinds["direct"] - kinds["paraphrase"]) <= 0.2 * len(questions)
    assert sum(len(q.relevant) == 2 for q in questions) >= 3
    assert {q.split for q in questions} == {"dev", "test"}
    assert all(q.relevant or q.kind == "unanswerable" for q in questions)


def hit3_by_kind(cfg, tmp_path) -> tuple[dict[str, float], list[dict]]:
    run(cfg, tmp_path)
    rows = pq.read_table(tmp_path / RESULTS).to_pylist()
    by_kind: dict[str, list[float]] = {}
    for row in rows:
        if row["hit@3"] is not None:
            by_kind.setdefault(row["kind"], []).append(row["hit@3"])
    return {kind: sum(v) / len(v) for kind, v in by_kind.items()}, rows


def test_bm25_solves_direct_questions_and_shows_the_paraphrase_gap(make_config, tmp_path):
    hit3, _ = hit3_by_kind(make_config("retriever=bm25", "chunking.max_words=120"), tmp_path)
    assert hit3["direct"] >= 0.7
    assert hit3["direct"] - hit3["paraphrase"] >= 0.2


def test_some_questions_defeat_every_word_counting_retriever(make_config, tmp_path):
    missed = None
    for name in ("bm25", "tfidf"):
        _, rows = hit3_by_kind(make_config(f"retriever={name}"), tmp_path / name)
        misses = {r["question_id"] for r in rows if r["hit@3"] == 0.0}
        missed = misses if missed is None else missed & misses
    assert len(missed) >= 3
