"""Your own retriever: ``retriever=python`` (a module of yours) and ``retriever=http``
(a search service), checked against the code's own answers recomputed here."""

from __future__ import annotations

import importlib
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from receval.chunking import chunk_sections
from receval.datasets import load_dataset
from receval.errors import RecevalError
from receval.retrievers.ranked import Ids, passages, top_lists
from receval.ranking import tie_ranks
from receval.trust import check_reach, reaches

from conftest import run_cli, run_of

JACCARD = '''
import re


def words(text):
    return set(re.findall(r"\\w+", text.lower()))


class Jaccard:
    """Word-set overlap; ``min_score`` drops weaker matches."""

    def __init__(self, min_score=0.0):
        self.min_score = min_score

    def fit(self, chunks):
        self.ids = [chunk.id for chunk in chunks]
        self.sets = [words(chunk["text"]) for chunk in chunks]

    def search(self, questions, k):
        answers = []
        for question in questions:
            q = words(question)
            scored = [(i, len(q & s) / len(q | s)) for i, s in zip(self.ids, self.sets)]
            scored = [pair for pair in scored if pair[1] > self.min_score]
            answers.append(sorted(scored, key=lambda pair: -pair[1])[:k])
        return answers


class Broken(Jaccard):
    def search(self, questions, k):
        return self.helper(questions)

    def helper(self, questions):
        raise ValueError("my own bug in " + str(len(questions)) + " questions")


class Unknown(Jaccard):
    def search(self, questions, k):
        return [[("fines#late-returnz", 1.0)] for _ in questions]


class NotFinite(Jaccard):
    def search(self, questions, k):
        return [[("fines#late-returns", float("nan"))] for _ in questions]


def sections_only(**params):
    """A factory: an index over whole sections, no fit."""
    return SectionIndex(**params)


class SectionIndex:
    def __init__(self, ids=()):
        self.ids = list(ids)

    def search(self, questions, k):
        return [[(sid, 1.0 / (rank + 1)) for rank, sid in enumerate(self.ids[:k])] for _ in questions]
'''


@pytest.fixture
def user_code(tmp_path, monkeypatch):
    """``jac.py`` in a folder on the path, as ``PYTHONPATH=folder`` would put it."""
    folder = tmp_path / "code"
    folder.mkdir()
    (folder / "jac.py").write_text(JACCARD, encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    sys.modules.pop("jac", None)
    importlib.invalidate_caches()
    return folder


def stored(run_dir: Path) -> list[dict]:
    return pq.read_table(run_dir / "results.parquet", columns=["question", "retrieved", "scores"]).to_pylist()


def expected_sections(answers, chunks, depth):
    """The module's answers for one question ordered by the tie rule (score, then
    (section id, ordinal)) and collapsed to sections at their first rank, by hand."""
    by_id = {chunk.id: chunk for chunk in chunks}
    order = sorted(answers, key=lambda p: (-p[1], by_id[p[0]].section_id, by_id[p[0]].ordinal))[:depth]
    sections, scores = [], []
    for chunk_id, score in order:
        sid = by_id[chunk_id].section_id
        if sid not in sections:
            sections.append(sid)
            scores.append(score)
    return sections, scores


@pytest.mark.slow
def test_a_2x2_sweep_through_python_stores_the_modules_own_rankings(user_code, tmp_path, make_config):
    where = tmp_path / "sweep"
    done = run_cli(
        "retriever=python", "retriever.target=jac:Jaccard", "retriever.params={min_score: 0.02}",
        "chunking.max_words=40,120", "chunking.headings=true,false", f"hydra.sweep.dir={where}", "-m",
        cwd=tmp_path, env={"PYTHONPATH": f"{user_code}:{Path(__file__).resolve().parent.parent}"},
    )
    assert done.returncode == 0, done.stderr
    jac = importlib.import_module("jac")
    cfg = make_config()
    dataset = load_dataset(cfg.dataset)
    seen = set()
    for job in sorted(where.glob("[0-9]*")):
        config = json.loads((job / "run.json").read_text())["config"]
        assert config["retriever"]["target"] == "jac:Jaccard"
        words, headings = config["chunking"]["max_words"], config["chunking"]["headings"]
        seen.add((words, headings))
        chunks = chunk_sections(dataset.sections, words, 0, headings)
        mine = jac.Jaccard(min_score=0.02)
        mine.fit(passages(chunks, dataset.sections))
        rows = stored(job)
        assert len(rows) == len(dataset.questions)
        for row in rows:
            sections, scores = expected_sections(mine.search([row["question"]], cfg.depth)[0], chunks, cfg.depth)
            assert row["retrieved"] == sections
            np.testing.assert_allclose(row["scores"], scores, rtol=0, atol=0)
    assert seen == {(40, True), (40, False), (120, True), (120, False)}


def test_section_ids_stand_for_their_sections_and_ties_follow_the_tie_rule(user_code, tmp_path_factory):
    ids = ["loans#book-drop", "fines#late-returns", "computers#wifi"]
    run_dir = run_of(
        tmp_path_factory, "retriever=python", "retriever.target=jac:sections_only",
        f"retriever.params={{ids: [{', '.join(repr(i) for i in ids)}]}}", "chunking.max_words=20",
    )
    row = stored(run_dir)[0]
    assert row["retrieved"] == ids and row["scores"] == [1.0, 0.5, 1 / 3]


def test_top_lists_orders_equal_scores_by_chunk_id_and_keeps_an_ids_best_score():
    class C:
        def __init__(self, section_id, ordinal):
            self.section_id, self.ordinal, self.id = section_id, ordinal, f"{section_id}@{ordinal}"

    chunks = [C("b", 0), C("b", 1), C("a", 0)]
    tie_rank = tie_ranks([(c.section_id, c.ordinal) for c in chunks])
    answers = [[("b@1", 2.0), ("a", 2.0), ("b", 2.0), ("b@0", 1.0)], []]
    idx, scores = top_lists(answers, Ids(chunks), tie_rank, 3, "test")
    assert idx.tolist() == [[2, 0, 1], [-1, -1, -1]]  # a@0, b@0 (its best: 2.0), b@1
    assert scores[0].tolist() == [2.0, 2.0, 2.0] and np.isnan(scores[1]).all()


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("jac:Unknown", "answered id 'fines#late-returnz', which is neither a chunk id nor a section id of this run; "
         "closest known ids: 'fines#late-returns'"),
        ("jac:NotFinite", "gave id 'fines#late-returns' the score nan: scores must be finite numbers"),
        ("jac:Nope", "retriever.target='jac:Nope': jac has no attribute 'Nope'"),
        ("nowhere:Nope", "no module named 'nowhere'; put its folder on PYTHONPATH"),
    ],
)
def test_bad_answers_and_targets_are_one_clear_error(user_code, tmp_path_factory, target, expected):
    with pytest.raises(RecevalError) as caught:
        run_of(tmp_path_factory, "retriever=python", f"retriever.target={target}")
    assert expected in str(caught.value)


@pytest.mark.slow
def test_an_exception_in_user_code_shows_its_traceback_and_exits_2_writing_nothing(user_code, tmp_path):
    done = run_cli(
        "retriever=python", "retriever.target=jac:Broken", f"hydra.run.dir={tmp_path}/run",
        cwd=tmp_path, env={"PYTHONPATH": f"{user_code}:{Path(__file__).resolve().parent.parent}"},
    )
    assert done.returncode == 2
    assert 'jac.py", line' in done.stderr and "in helper" in done.stderr
    assert "ValueError: my own bug in 1 questions" in done.stderr
    assert "receval: error: jac:Broken search raised ValueError (traceback above)" in done.stderr
    assert "receval/pipeline.py" not in done.stderr  # the user's frames, not receval's
    assert not (tmp_path / "run" / "results.parquet").exists() and not (tmp_path / "run" / "run.json").exists()


def test_a_stored_run_naming_a_target_needs_allow_code(tmp_path):
    config = {"retriever": {"kind": "python", "target": "jac:Jaccard", "params": {}}}
    assert [(r.key, r.what) for r in reaches(config)] == [("retriever.target", "code")]
    with pytest.raises(RecevalError, match="retriever.target='jac:Jaccard' names code to import"):
        check_reach(config, tmp_path, allow_remote=False, allow_code=False)
    check_reach(config, tmp_path, allow_remote=False, allow_code=True)


def test_a_python_retriever_is_a_fusion_member_and_a_first_stage(user_code, tmp_path_factory):
    alone = stored(run_of(tmp_path_factory, "retriever=python", "retriever.target=jac:Jaccard"))
    fused = stored(run_of(
        tmp_path_factory, "retriever=fused",
        "retriever.members=[bm25,{kind: python, target: 'jac:Jaccard'}]",
    ))
    assert len(fused) == len(alone) and any(f["retrieved"] != a["retrieved"] for f, a in zip(fused, alone))
    # fusing a retriever with itself ranks exactly as it alone (same ranks, summed)
    same = stored(run_of(
        tmp_path_factory, "retriever=fused",
        "retriever.members=[{kind: python, target: 'jac:Jaccard'},bm25]",
        "retriever/fusion=weighted", "retriever.fusion.weights=[1,0]",
    ))
    assert [s["retrieved"][:3] for s in same] == [a["retrieved"][:3] for a in alone]
