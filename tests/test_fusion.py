"""Fusion and re-ranking: the worked RRF numbers, normalisations, stages, and runs."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from receval.run.pipeline import run
from receval.retrievers.fusion import Fused, fuse, normalised
from receval.rerankers import Rescored, Scorer
from receval.retrievers.base import Stage
from receval.run.stages import Reranked
from receval.results import open_run
from receval.results.format import RESULTS, RUN_JSON


def ranked(order: list[int], n: int) -> np.ndarray:
    """Scores for one question that rank chunk ``order[0]`` first, ``order[1]`` second..."""
    scores = np.zeros((1, n))
    for position, chunk in enumerate(order):
        scores[0, chunk] = len(order) - position
    return scores


TIES = np.arange(4)


def test_rrf_worked_example():
    """Chunk 0: 1st by vectors, 3rd by keywords; chunk 1: 2nd and 1st."""
    vectors = ranked([0, 1, 2], 4)
    keywords = ranked([1, 3, 0], 4)
    fused = fuse([vectors, keywords], [0.0, 0.0], TIES, method="rrf", k=60)
    assert fused[0, 0] == pytest.approx(1 / 61 + 1 / 63) == pytest.approx(0.03227, abs=5e-6)
    assert fused[0, 1] == pytest.approx(1 / 62 + 1 / 61) == pytest.approx(0.03252, abs=5e-6)
    assert fused[0, 1] > fused[0, 0]
    assert fused[0, 2] == pytest.approx(1 / 63) and fused[0, 3] == pytest.approx(1 / 62)


def test_only_each_members_candidates_count():
    a, b = ranked([0, 1, 2], 4), ranked([3, 2, 1], 4)
    fused = fuse([a, b], [0.0, 0.0], TIES, method="rrf", k=60, size=1)
    assert fused[0, 0] == pytest.approx(1 / 61) and fused[0, 3] == pytest.approx(1 / 61)
    assert np.isneginf(fused[0, 1]) and np.isneginf(fused[0, 2])  # in no member's top 1


def test_weighted_minmax_and_zscore_worked():
    a = np.array([[4.0, 2.0, 0.0, 1.0]])  # floor 0: chunk 2 is not a candidate
    b = np.array([[0.1, 0.3, 0.2, -1.0]])
    fused = fuse([a, b], [0.0, None], TIES, method="weighted", normalize="minmax", weights=[2.0, 1.0])
    # a's candidates 4, 2, 1 -> 1, 1/3, 0; b's candidates 0.1, 0.3, 0.2, -1 -> 1.1/1.3, 1, 1.2/1.3, 0
    expected = [2 * 1 + 1.1 / 1.3, 2 / 3 + 1, 1.2 / 1.3, 0.0]
    np.testing.assert_allclose(fused[0], expected)
    z = normalised(np.array([[1.0, 2.0, 3.0, np.nan]]), "zscore")
    np.testing.assert_allclose(z[0, :3], [-np.sqrt(1.5), 0.0, np.sqrt(1.5)])
    assert np.isnan(z[0, 3])
    assert normalised(np.array([[5.0, 5.0]]), "minmax").tolist() == [[1.0, 1.0]]
    assert normalised(np.array([[5.0, 5.0]]), "zscore").tolist() == [[0.0, 0.0]]


class Fixed(Stage):
    """A stand-in member with fixed scores, counting fits."""

    floor = 0.0

    def __init__(self, name, scores):
        self.name, self.scores, self.fits = name, np.asarray(scores, float), 0

    def fit(self, texts, tie_rank):
        self.tie_rank = tie_rank
        self.fits += 1

    def score(self, questions):
        return np.repeat(self.scores[None, :], len(questions), axis=0)


class FixedReranker(Scorer):
    """A stand-in re-ranker scoring chunk i with ``scores[i]``."""

    name = "rerank"

    def __init__(self, scores, retriever=None):
        self.scores, self.retriever, self.fits = np.asarray(scores, float), retriever, 0

    def fit(self, texts, tie_rank):
        self.tie_rank = tie_rank
        self.fits += 1

    def rescore(self, questions, idx):
        return Rescored(np.where(idx >= 0, self.scores[np.maximum(idx, 0)], np.nan))


def test_rerank_reorders_the_shortlist_and_keeps_the_rest_after_it():
    first = Fixed("bm25", [5, 4, 3, 2, 1])
    stage = Reranked(first, FixedReranker([0.1, 0.2, 0.9, 0.8, 0.7]), first_size=3)
    stage.fit(["t"] * 5, np.arange(5))
    out = stage.rank(["q"], 5)
    idx, scores = out.idx, out.scores
    assert idx[0].tolist() == [2, 1, 0, 3, 4]  # re-ranked top 3, then bm25's order below it
    assert scores[0].tolist() == [0.9, 0.2, 0.1, 2.0, 1.0]
    assert set(out.seconds) == {"bm25", "rerank"}


def test_rerank_ties_follow_the_tie_rule():
    first = Fixed("bm25", [1, 2, 3, 4])
    stage = Reranked(first, FixedReranker([0.5, 0.5, 0.5, 0.5]), first_size=4)
    stage.fit(["t"] * 4, np.array([3, 2, 1, 0]))  # chunk 3 has the smallest id
    idx = stage.rank(["q"], 4).idx
    assert idx[0].tolist() == [3, 2, 1, 0]


def test_a_member_that_also_reranks_is_fitted_once():
    bm25, dense = Fixed("bm25", [1, 2]), Fixed("dense", [2, 1])
    reranker = FixedReranker([2, 1], retriever=dense)
    stage = Reranked(Fused("hybrid", [bm25, dense]), reranker, first_size=2)
    stage.fit(["a", "b"], np.arange(2))
    assert (bm25.fits, dense.fits, reranker.fits) == (1, 1, 0)
    out = stage.rank(["q"], 2)
    assert set(out.seconds) == {"bm25", "dense", "fusion", "rerank"}


def test_rrf_run_records_its_stages(make_config, tmp_path):
    run(make_config("retriever=fused"), tmp_path)
    stored = open_run(tmp_path, skip=frozenset())
    assert stored.stages == ["tfidf", "bm25", "fusion", "select"]
    rows = pq.read_table(tmp_path / RESULTS).to_pylist()
    for row in rows:
        parts = [row[f"latency_ms.{s}"] for s in stored.stages]
        assert all(p > 0 for p in parts)
        assert sum(parts) <= row["latency_ms"] * (1 + 1e-9)  # stages are timed inside the total
    info = json.loads((tmp_path / RUN_JSON).read_text())
    assert info["stages"]["bm25"] == {"index_api_calls": 0, "search_api_calls": 0}
    assert "latency_ms.bm25" not in stored.measure_names


def test_fused_ranking_equals_rrf_of_the_members_chunk_lists(make_config, tmp_path):
    """End to end: the fused run's first section matches RRF recomputed by hand."""
    from receval import retrievers
    from receval.chunking.words import chunk_sections
    from receval.datasets import load_dataset
    from receval.run.ranking import select_top, tie_ranks
    from receval.retrievers.text import Tokenizer

    cfg = make_config("retriever=fused", "retriever.fusion.candidates=10")
    data = load_dataset(cfg.dataset)
    chunks = chunk_sections(data.sections, 120, 0, True)
    ties = tie_ranks([(c.section_id, c.ordinal) for c in chunks])
    fused = retrievers.build(cfg.retriever, retrievers.Context(tokenizer=Tokenizer()))
    fused.fit([c.text for c in chunks], ties)
    questions = [q.text for q in data.questions[:5]]
    got, _ = select_top(fused.score(questions), 5, ties, floor=None)
    for row, question in enumerate(questions):
        totals: dict[int, float] = {}
        for member in fused.members:
            idx, _ = select_top(member.score([question]), 10, ties, floor=member.floor)
            for rank, chunk in enumerate(i for i in idx[0] if i >= 0):
                totals[chunk] = totals.get(chunk, 0.0) + 1 / (60 + rank + 1)
        expected = sorted(totals, key=lambda c: (-totals[c], ties[c]))[:5]
        assert got[row][got[row] >= 0].tolist() == expected


@pytest.mark.slow
def test_bad_fusion_settings_are_config_errors(make_config, tmp_path):
    from receval.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"fusion.weights has 1 values for 2 members"):
        run(make_config("retriever=fused", "retriever/fusion=weighted", "retriever.fusion.weights=[1.0]"), tmp_path)
    with pytest.raises(ConfigError, match=r"retriever.members\[1\].kind='bm26' is not a retriever kind"):
        run(make_config("retriever=fused", "retriever.members=[bm25,bm26]"), tmp_path)
    with pytest.raises(ConfigError, match=r"retriever.members=\[\]: fuse two or more retrievers"):
        run(make_config("retriever=fused", "retriever.members=[]"), tmp_path)
    with pytest.raises(ConfigError, match=r"names one retriever twice"):
        run(make_config("retriever=fused", "retriever.members=[bm25,bm25]"), tmp_path)
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_members_can_be_full_nodes(make_config, tmp_path):
    """A member given as a node carries its own settings (here BM25's k1)."""
    run(make_config("retriever=fused", "retriever.members=[tfidf,{kind: bm25, k1: 0.5}]"), tmp_path / "a")
    run(make_config("retriever=fused", "retriever.members=[tfidf,bm25]"), tmp_path / "b")
    a, b = (pq.read_table(tmp_path / d / RESULTS).column("rr").to_pylist() for d in "ab")
    assert a != b
