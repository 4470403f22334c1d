"""Token budgets, redundancy and alpha-nDCG (receval.scoring.budget, receval.scoring.chunks,
receval.measures.novelty): hand-worked examples, the budget's invariants (never past B,
monotone in B), and derived measures equal to the stored ones."""

from __future__ import annotations

import math

import numpy as np
import pytest

from receval.measures import novelty
from receval.scoring import budget, chunks, declared
from receval.scoring.declared import (
    Measure, MeasureName, budget_of, is_measure, is_token_measure, lower_is_better, parse_measure,
)
from receval.scoring.measures import Judged

LOG = math.log2


# --------------------------------------------------------------------------- names


def test_budget_names_parse_and_print_canonically():
    assert parse_measure("hit@300tok") == MeasureName("hit", budget=300)
    assert parse_measure("MRR@500tok").name == "rr@500tok"
    assert parse_measure("map@100tok").name == "ap@100tok"
    assert is_measure("ndcg@1000tok") and not is_measure("bpref@300tok")
    assert is_token_measure("context_tokens@300tok") and is_token_measure("redundancy@5")
    assert budget_of("recall@1000tok") == 1000 and budget_of("recall@10") is None
    assert lower_is_better("redundancy@300tok") and lower_is_better("context_tokens@3") and not lower_is_better("hit@3tok")
    with pytest.raises(ValueError, match="judged takes no token budget"):
        parse_measure("judged@300tok")
    with pytest.raises(ValueError, match="a token budget is from 1"):
        parse_measure("hit@0tok")


# --------------------------------------------------------------------------- the cut


def test_the_chunk_that_crosses_the_budget_is_not_sent_nor_any_after_it():
    tokens = np.array([[100, 150, 80, 0], [300, 10, 10, 10], [40, 40, 0, 0]])
    lengths = np.array([3, 4, 2])
    assert budget.chunks_within(tokens, lengths, 250).tolist() == [2, 0, 2]
    assert budget.chunks_within(tokens, lengths, 249).tolist() == [1, 0, 2]
    assert budget.chunks_within(tokens, lengths, 330).tolist() == [3, 4, 2]  # padding is no chunk
    # units within: a unit is sent when its first chunk is
    first_chunk = np.array([[1, 3, 0], [1, 2, 4], [2, 0, 0]])
    assert budget.units_within(first_chunk, np.array([2, 3, 1])).tolist() == [1, 2, 0]


def worked_case():
    """Chunks c1 (section s1, 100 tokens), c2 (s1, 100), c3 (s2 relevant, 100), c4 (s3
    relevant, 50): units s1 at chunk 1, s2 at chunk 3, s3 at chunk 4; two relevant."""
    judged = Judged(gains=np.array([[0.0, 1.0, 1.0]]), ideal=np.array([[1.0, 1.0]]), n_relevant=np.array([2]))
    tokens = np.array([[100, 100, 100, 50]])
    first = np.array([[1, 3, 4]])
    return judged, tokens, first


@pytest.mark.parametrize("b, expected", [
    (250, {"hit": 0.0, "recall": 0.0, "precision": 0.0, "rr": 0.0, "ndcg": 0.0, "ap": 0.0}),
    (300, {"hit": 1.0, "recall": 0.5, "precision": 0.5, "rr": 0.5, "ndcg": (1 / LOG(3)) / (1 + 1 / LOG(3)),
           "ap": (1 / 2) / 2}),
    (350, {"hit": 1.0, "recall": 1.0, "precision": 2 / 3, "rr": 0.5,
           "ndcg": (1 / LOG(3) + 1 / LOG(4)) / (1 + 1 / LOG(3)), "ap": (1 / 2 + 2 / 3) / 2}),
])
def test_unit_measures_at_a_budget_by_hand(b, expected):
    judged, tokens, first = worked_case()
    k = budget.units_within(first, budget.chunks_within(tokens, np.array([4]), b))
    for family, value in expected.items():
        assert Measure(family, budget=b).at(judged, k)[0] == pytest.approx(value), family


def test_a_measure_at_one_cutoff_per_question_equals_it_at_a_fixed_k():
    rng = np.random.default_rng(3)
    gains = rng.integers(0, 3, size=(40, 12)).astype(float)
    ideal = -np.sort(-rng.integers(0, 3, size=(40, 15)).astype(float), axis=1)
    judged = Judged(gains=gains, ideal=ideal, n_relevant=(ideal >= 1).sum(axis=1))
    for family in ("hit", "recall", "precision", "ndcg", "ap"):
        for k in (1, 3, 12, 20):
            fixed = Measure(family, k)(judged)
            assert np.allclose(Measure(family).at(judged, np.full(40, k)), fixed), (family, k)
    assert np.allclose(Measure("rr").at(judged, np.full(40, 12)), Measure("rr")(judged))


def random_ranking(seed: int, n: int = 60, depth: int = 15) -> tuple[chunks.ChunkRanking, Judged, np.ndarray]:
    """Random chunk rankings (some short) whose counts obey the stored relations
    (new <= words, evidence <= new), with units at increasing first chunks."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, depth + 1, n)
    inside = np.arange(depth)[None, :] < lengths[:, None]
    words = np.where(inside, rng.integers(1, 130, (n, depth)), 0)
    new = np.where(inside, rng.integers(0, words + 1), 0)
    evidence = np.where(inside, rng.integers(0, new + 1), 0)
    total = evidence.sum(axis=1) + rng.integers(0, 50, n)
    nugget_at = rng.integers(0, depth + 1, (n, 4))
    ranking = chunks.ChunkRanking(
        lengths=lengths, words=words, new=new, evidence=evidence, evidence_total=total,
        novelty=np.where(inside, rng.random((n, depth)), 0), novelty_ideal=np.ones((n, depth)),
        nugget_at=nugget_at, nugget_vital=rng.random((n, 4)) < 0.5, nugget_valid=np.ones((n, 4), bool),
    )
    first = np.zeros((n, depth), dtype=np.int64)  # each unit's first chunk rank, rising, 0 past the units
    for row, length in enumerate(lengths):
        picks = np.sort(rng.choice(np.arange(1, length + 1), size=int(rng.integers(0, length + 1)), replace=False))
        first[row, : picks.size] = picks
    gains = rng.integers(0, 3, size=first.shape).astype(float) * (first > 0)
    judged = Judged(gains=gains, ideal=np.full((n, 3), 2.0), n_relevant=np.full(n, 3))
    return ranking, judged, first


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_budget_is_never_passed_and_cumulative_measures_never_fall_as_it_grows(seed):
    ranking, judged, first = random_ranking(seed)
    before_units = before_chunks = None
    before: dict = {}
    for b in (0, 1, 50, 99, 100, 250, 400, 1000, 3000):
        sent = budget.chunks_within(ranking.words, ranking.lengths, b)
        units = budget.units_within(first, sent)
        context = chunks.context_tokens(ranking, sent)
        assert (context <= b).all()
        assert (sent <= ranking.lengths).all()
        values = {
            "context_tokens": context, "token_recall": chunks.token_recall(ranking, sent),
            "nugget_recall": chunks.nugget_recall(ranking, sent),
            **{f: Measure(f).at(judged, units) for f in ("hit", "recall", "rr", "ap")},
        }
        if before_units is not None:
            assert (sent >= before_chunks).all() and (units >= before_units).all()
            for name, value in values.items():
                assert (value >= before[name] - 1e-12).all(), (name, b)
        before_chunks, before_units, before = sent, units, values
        for name in ("token_recall", "token_precision", "token_iou", "redundancy", "nugget_recall"):
            value = declared.family(name).formula(ranking, sent)
            assert ((value >= 0) & (value <= 1) | np.isnan(value)).all(), name


# --------------------------------------------------------------------------- redundancy


def test_redundancy_counts_the_words_an_earlier_chunk_already_supplied():
    """Windows [0, 40) and [30, 70) of one section, then [100, 140): the second repeats 10
    of its 40 words."""
    ranking = chunks.ChunkRanking(
        lengths=np.array([3]), words=np.array([[40, 40, 40]]), new=np.array([[40, 30, 40]]),
        evidence=np.zeros((1, 3)), evidence_total=np.array([0]),
    )
    assert chunks.redundancy(ranking, 1)[0] == 0.0
    assert chunks.redundancy(ranking, 2)[0] == pytest.approx(10 / 80)
    assert chunks.redundancy(ranking, 3)[0] == pytest.approx(10 / 120)
    empty = chunks.ChunkRanking(lengths=np.array([0]), words=np.zeros((1, 3)), new=np.zeros((1, 3)))
    assert chunks.redundancy(empty, 3)[0] == 0.0  # nothing sent, nothing repeated


# --------------------------------------------------------------------------- alpha-nDCG


def test_alpha_ndcg_over_section_units_by_hand():
    """Chunks of sections A, A, B, C; A and B relevant, A cut into 3 chunks, B into 1.
    G = 1, 1/2, 1, 0; the ideal: A, B, A, A = 1, 1, 1/2, 1/4."""
    ranked = np.array([[0, 0, 1, 2]])
    relevant = np.array([[True, True, True, False]])
    gains = novelty.section_gains(ranked, relevant, 3)
    assert gains.tolist() == [[1.0, 0.5, 1.0, 0.0]]
    ideal = novelty.section_ideal(np.array([0, 0]), np.array([3, 1]), 1, 4)
    assert ideal.tolist() == [[1.0, 1.0, 0.5, 0.25]]
    ranking = chunks.ChunkRanking(lengths=np.array([4]), words=np.ones((1, 4)), novelty=gains, novelty_ideal=ideal)
    dcg = 1 + 0.5 / LOG(3) + 1 / LOG(4)
    idcg = 1 + 1 / LOG(3) + 0.5 / LOG(4) + 0.25 / LOG(5)
    assert chunks.alpha_ndcg(ranking, 4)[0] == pytest.approx(dcg / idcg)
    assert chunks.alpha_ndcg(ranking, 1)[0] == 1.0
    assert chunks.alpha_ndcg(ranking, 2)[0] == pytest.approx((1 + 0.5 / LOG(3)) / (1 + 1 / LOG(3)))


def test_alpha_ndcg_over_evidence_items_by_hand():
    """Item 0 is found at rank 2 (split over chunks 1 and 2) and covered again by chunk 3
    alone; item 1 is covered alone by chunks 1, 3 and 4, and the collection has 2 chunks
    that cover each item alone."""
    found = np.array([2, 1])
    alone = np.array([[False, False, True, False], [True, False, True, True]])
    copies = np.array([2, 2])
    gains = novelty.evidence_gains(np.array([0, 0]), found, alone, copies, 1)
    # rank 1: item 1 (first) = 1; rank 2: item 0 (first) = 1; rank 3: both again = 1/2 + 1/2;
    # rank 4: item 1 a third time, past its 2 copies: nothing
    assert gains.tolist() == [[1.0, 1.0, 1.0, 0.0]]
    ideal = novelty.evidence_ideal(np.array([0, 0]), copies, 1, 4)
    assert ideal.tolist() == [[2.0, 1.0, 0.0, 0.0]]  # both first copies at rank 1, both second at rank 2
    ranking = chunks.ChunkRanking(lengths=np.array([4]), words=np.ones((1, 4)), novelty=gains, novelty_ideal=ideal)
    assert chunks.alpha_ndcg(ranking, 4)[0] == pytest.approx((1 + 1 / LOG(3) + 1 / LOG(4)) / (2 + 1 / LOG(3)))


def test_covering_chunks_counts_the_collections_chunks_that_alone_cover_an_item():
    # an item of letters [10, 20); chunks [0, 15) (half), [8, 30) (all), [12, 22) (8 of 10), [40, 50)
    items = (np.array([10]), np.array([20]), np.array([10]), np.array([20]))
    starts, ends = np.array([0, 8, 12, 40]), np.array([15, 30, 22, 50])
    chunks_ = (starts, ends, starts, ends)
    assert novelty.covering_chunks(items, chunks_, 0.5).tolist() == [3]
    assert novelty.covering_chunks(items, chunks_, 0.9).tolist() == [1]
    assert novelty.covering_chunks(items, (starts[3:], ends[3:], starts[3:], ends[3:]), 0.5).tolist() == [1]


@pytest.mark.parametrize("seed", [0, 1])
def test_alpha_ndcg_is_at_most_one_for_any_ranking_of_section_chunks(seed):
    rng = np.random.default_rng(seed)
    n_sections, depth, n = 8, 12, 50
    chunk_counts = rng.integers(1, 5, n_sections)
    for _ in range(n):
        relevant_sections = rng.choice(n_sections, size=int(rng.integers(1, 4)), replace=False)
        pool = np.repeat(np.arange(n_sections), chunk_counts)
        ranked = rng.permutation(pool)[:depth][None, :]
        relevant = np.isin(ranked, relevant_sections)
        gains = novelty.section_gains(ranked, relevant, n_sections)
        ideal = novelty.section_ideal(np.zeros(relevant_sections.size, int), chunk_counts[relevant_sections], 1, depth)
        ranking = chunks.ChunkRanking(lengths=np.array([depth]), words=np.ones((1, depth)), novelty=gains,
                                      novelty_ideal=ideal)
        for k in (1, 3, depth):
            assert chunks.alpha_ndcg(ranking, k)[0] <= 1 + 1e-12
