"""Tests for receval.run.metrics (and evaluate.judge): worked numbers, agreement with
pytrec_eval (trec_eval) and ranx, invariants over every registered measure, and
measure-name parsing."""

from __future__ import annotations

import math

import numpy as np
import pytest

from receval.datasets import Question
from receval.run.evaluate import judge
from receval.run.metrics import (
    Judged,
    Measure,
    first_relevant_rank,
    measures_for,
    parse_measure,
)
from receval.run.ranking import select_top, tie_ranks
from receval.scoring import declared

KS = [1, 3, 5, 10]
MEASURES = measures_for(KS)


def by_name(name: str) -> Measure:
    return parse_measure(name)


def question(qid: str, relevant: dict[str, int]) -> Question:
    return Question(qid, f"question {qid}", "unspecified", "all", dict(relevant))


def random_case(seed: int, n_questions: int = 120, n_sections: int = 30, depth: int = 10):
    """Random labels (grades 1..3; some questions with none) and random retrieved
    sections (distinct per row, -1 padded); returns (section_idx, questions, index)."""
    rng = np.random.default_rng(seed)
    ids = [f"page{j // 6}#sec{j % 6}" for j in range(n_sections)]
    index = {sid: j for j, sid in enumerate(ids)}
    questions, rows = [], []
    for q in range(n_questions):
        n_labels = 0 if q % 9 == 0 else (1 if q % 4 == 0 else int(rng.integers(1, 12)))
        labelled = rng.choice(n_sections, size=n_labels, replace=False)
        questions.append(question(f"q{q:03d}", {ids[j]: int(rng.integers(1, 4)) for j in labelled}))
        n_retrieved = int(rng.integers(0, depth + 1))
        row = np.full(depth, -1, dtype=np.int32)
        row[:n_retrieved] = rng.choice(n_sections, size=n_retrieved, replace=False)
        rows.append(row)
    return np.stack(rows), questions, index


# --------------------------------------------------------------------------- worked numbers


def worked_judged() -> Judged:
    """Relevance 0 1 0 1 0 over five retrieved; three relevant sections in all."""
    return Judged(
        gains=np.array([[0.0, 1.0, 0.0, 1.0, 0.0]]),
        ideal=np.array([[1.0, 1.0, 1.0]]),
        n_relevant=np.array([3]),
    )


def worked_through_judge() -> Judged:
    ids = [f"p#s{j}" for j in range(8)]
    index = {sid: j for j, sid in enumerate(ids)}
    q = question("q1", {"p#s1": 1, "p#s3": 1, "p#s7": 1})  # s7 is never retrieved
    return judge(np.array([[0, 1, 2, 3, 4]], dtype=np.int32), [q], index)


@pytest.mark.parametrize("make", [worked_judged, worked_through_judge], ids=["direct", "judge"])
def test_worked_example_recall_rr_ndcg(make):
    judged = make()
    np.testing.assert_array_equal(judged.gains, [[0, 1, 0, 1, 0]])
    assert by_name("recall@5")(judged)[0] == pytest.approx(2 / 3)
    assert by_name("recall@5")(judged)[0] == pytest.approx(0.667, abs=5e-4)
    assert by_name("rr")(judged)[0] == pytest.approx(0.5)
    ndcg = by_name("ndcg@5")(judged)[0]
    assert ndcg == pytest.approx(0.498, abs=5e-4)
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg == pytest.approx(dcg / idcg, abs=1e-12)
    assert by_name("precision@5")(judged)[0] == pytest.approx(0.4)
    assert by_name("hit@1")(judged)[0] == 0.0
    assert by_name("hit@2")(judged)[0] == 1.0


def test_worked_mrr_direct():
    """First relevant at ranks 1, 3, none, 2 -> MRR = (1 + 1/3 + 0 + 1/2) / 4."""
    gains = np.array(
        [[1, 0, 0, 0], [0, 0, 1, 1], [0, 0, 0, 0], [0, 1, 0, 0]], dtype=np.float64
    )
    judged = Judged(gains=gains, ideal=np.array([[1.0, 1.0]] * 4), n_relevant=np.array([2] * 4))
    rr = by_name("rr")(judged)
    np.testing.assert_allclose(rr, [1.0, 1 / 3, 0.0, 0.5])
    assert rr.mean() == pytest.approx(0.458, abs=5e-4)
    np.testing.assert_array_equal(first_relevant_rank(judged), [1, 3, 0, 2])


def test_worked_mrr_through_judge():
    ids = [f"p#s{j}" for j in range(6)]
    index = {sid: j for j, sid in enumerate(ids)}
    questions = [
        question("a", {"p#s0": 1}),
        question("b", {"p#s5": 2, "p#s4": 1}),
        question("c", {"p#s3": 1}),
        question("d", {"p#s1": 3}),
    ]
    section_idx = np.array(
        [[0, 1, 2], [1, 2, 5], [0, 1, 2], [0, 1, -1]], dtype=np.int32
    )
    judged = judge(section_idx, questions, index)
    rr = by_name("mrr")(judged)
    np.testing.assert_allclose(rr, [1.0, 1 / 3, 0.0, 0.5])
    assert rr.mean() == pytest.approx(0.458, abs=5e-4)
    assert rr.mean() == pytest.approx((1 + 1 / 3 + 0.5) / 4)


def test_worked_graded_ndcg_uses_linear_gain():
    """Gains 2 0 3 against labels graded 3 and 2: DCG = 2 + 3/2, IDCG = 3 + 2/log2(3)."""
    judged = Judged(
        gains=np.array([[2.0, 0.0, 3.0]]), ideal=np.array([[3.0, 2.0]]), n_relevant=np.array([2])
    )
    expected = (2 + 3 / 2) / (3 + 2 / math.log2(3))
    assert by_name("ndcg@3")(judged)[0] == pytest.approx(expected, abs=1e-12)
    assert by_name("ndcg@3")(judged)[0] == pytest.approx(0.8212, abs=5e-5)
    # ndcg@1: 2 / 3 (the ideal first place holds the grade-3 label)
    assert by_name("ndcg@1")(judged)[0] == pytest.approx(2 / 3)


def test_precision_counts_k_even_when_fewer_retrieved():
    ids = ["p#a", "p#b", "p#c"]
    index = {sid: j for j, sid in enumerate(ids)}
    judged = judge(np.array([[0, -1, -1, -1, -1]], dtype=np.int32), [question("q", {"p#a": 1})], index)
    assert by_name("precision@5")(judged)[0] == pytest.approx(0.2)
    assert by_name("precision@10")(judged)[0] == pytest.approx(0.1)  # k beyond depth


def test_judge_grades_ideal_and_padding():
    ids = ["p#a", "p#b", "p#c", "p#d"]
    index = {sid: j for j, sid in enumerate(ids)}
    questions = [question("q1", {"p#b": 2, "p#d": 3, "p#a": 1}), question("q2", {})]
    section_idx = np.array([[3, -1, 1, 2], [0, 1, -1, -1]], dtype=np.int32)
    judged = judge(section_idx, questions, index)
    np.testing.assert_array_equal(judged.gains, [[3, 0, 2, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(judged.ideal, [[3, 2, 1], [0, 0, 0]])
    np.testing.assert_array_equal(judged.n_relevant, [3, 0])


# --------------------------------------------------------------------------- pytrec_eval / ranx


def agreement_case(seed: int = 2024, n_questions: int = 200, n_sections: int = 50, depth: int = 20):
    """Tied integer scores ranked by select_top; graded labels; some questions with one
    label, some with many, some with nothing retrieved."""
    rng = np.random.default_rng(seed)
    # ids in shuffled order so the id half of the tie rule differs from column order
    names = [f"page{j // 5:02d}#heading-{j % 5}" for j in range(n_sections)]
    ids = [names[j] for j in rng.permutation(n_sections)]
    index = {sid: j for j, sid in enumerate(ids)}
    scores = rng.integers(0, 5, size=(n_questions, n_sections)).astype(np.float64)
    sparse = rng.random((n_questions, n_sections)) < 0.9
    scores[::7] = np.where(sparse[::7], 0.0, scores[::7])  # few retrieved
    scores[::13] = 0.0  # nothing retrieved (floor 0)
    questions = []
    for q in range(n_questions):
        n_labels = 1 if q % 3 == 0 else int(rng.integers(2, 15))
        labelled = rng.choice(n_sections, size=n_labels, replace=False)
        questions.append(question(f"q{q:03d}", {ids[j]: int(rng.integers(1, 4)) for j in labelled}))
    idx, _ = select_top(scores, depth, tie_ranks(ids))
    return ids, index, questions, idx, scores


def ours_by_question(index, questions, idx):
    judged = judge(idx, questions, index)
    return {m.name: m(judged) for m in MEASURES}


def test_agreement_with_pytrec_eval():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    ids, index, questions, idx, scores = agreement_case()
    depth = idx.shape[1]
    # our tie rule, checked against a brute-force sort, so pytrec sees the same order
    for row in range(0, len(questions), 17):
        valid = [j for j in range(len(ids)) if scores[row, j] > 0]
        expected = sorted(valid, key=lambda j: (-scores[row, j], ids[j]))[:depth]
        assert [j for j in idx[row] if j >= 0] == expected

    qrels = {q.id: dict(q.relevant) for q in questions}
    rng = np.random.default_rng(5)
    for i, q in enumerate(questions):  # judged non-relevant (grade 0): only bpref reads them
        if i % 4 == 0:
            for j in rng.choice(len(ids), size=int(rng.integers(1, 12)), replace=False):
                qrels[q.id].setdefault(ids[j], 0)
            nonrelevant = tuple(d for d, g in qrels[q.id].items() if g == 0)
            questions[i] = Question(q.id, q.text, q.kind, q.split, q.relevant, nonrelevant=nonrelevant)
    run = {}
    for q, row in zip(questions, idx):
        retrieved = [ids[j] for j in row if j >= 0]
        if retrieved:  # trec_eval scores by score desc: give strictly decreasing scores
            run[q.id] = {sid: float(depth - pos) for pos, sid in enumerate(retrieved)}
    empty = {q.id for q, row in zip(questions, idx) if (row < 0).all()}
    assert len(empty) >= 10 and len(run) >= 150

    # every stored measure whose family declares a trec_eval counterpart, by that name
    names = {m.name: declared.trec_eval_name(m) for m in MEASURES if declared.trec_eval_name(m)}
    assert set(names.values()) >= {"recip_rank", "map", "Rprec", "bpref", "success_1", "recall_3", "P_5",
                                   "ndcg_cut_10", "map_cut_10"}
    assert {m.family for m in MEASURES if m.name not in names} == {"judged"}  # checked below, by trec_eval -J
    ks = ",".join(map(str, KS))
    asked = {n.replace("_{k}", f".{ks}") for f in declared.families(declared.UNITS) for n in f.trec_eval}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, asked).evaluate(run)
    assert set(theirs) == set(run)  # questions with nothing retrieved are omitted

    ours = ours_by_question(index, questions, idx)
    assert {theirs[q.id]["bpref"] != theirs[q.id]["recall_10"] for q in questions[::4] if q.id in theirs} == {
        True, False
    }  # the judged non-relevant sections move bpref off recall for some questions
    n_labels = {len(q.relevant) for q in questions}
    assert 1 in n_labels and max(n_labels) > 10
    for row, q in enumerate(questions):
        for ours_name, trec_name in names.items():
            value = ours[ours_name][row]
            if q.id in empty:  # trec_eval leaves it out; its family declares what it scores
                assert value == declared.family(parse_measure(ours_name).family).empty, (q.id, ours_name)
            else:
                assert value == pytest.approx(theirs[q.id][trec_name], abs=1e-9), (q.id, ours_name)
    # judged@k: trec_eval's -J view (judged documents only) counts the judged ones among
    # the first k retrieved; score-0 judgements are judged too
    for k in KS:
        cut = {q: dict(list(docs.items())[:k]) for q, docs in run.items()}
        judged_only = pytrec_eval.RelevanceEvaluator(qrels, {"num_ret"}, judged_docs_only_flag=True).evaluate(cut)
        expected = [judged_only.get(q.id, {}).get("num_ret", 0) / k for q in questions]
        np.testing.assert_allclose(ours[f"judged@{k}"], expected, rtol=0, atol=1e-12, err_msg=f"judged@{k}")
    assert 0 < np.mean(ours["judged@10"]) < 1


@pytest.mark.slow  # ranx compiles its measures with numba first (about 6 s)
def test_agreement_with_ranx():
    ranx = pytest.importorskip("ranx")
    ids, index, questions, idx, _ = agreement_case()
    qrels = {q.id: dict(q.relevant) for q in questions}
    run = {}
    depth = idx.shape[1]
    for q, row in zip(questions, idx):
        run[q.id] = {ids[j]: float(depth - pos) for pos, j in enumerate(row) if j >= 0}
    # ranx "ndcg" is Jarvelin's linear gain, as trec_eval; "ndcg_burges" (2^rel - 1) is not
    names = {"rr": "mrr", "ap": "map", "rprec": "r-precision"}  # ranx's bpref reads no judged non-relevant
    for k in KS:
        names |= {f"hit@{k}": f"hit_rate@{k}", f"recall@{k}": f"recall@{k}",
                  f"precision@{k}": f"precision@{k}", f"ndcg@{k}": f"ndcg@{k}", f"ap@{k}": f"map@{k}"}
    theirs = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), list(names.values()), return_mean=False)
    order = sorted(q.id for q in questions)  # ranx returns per-question values by sorted id
    assert order == [q.id for q in questions]
    ours = ours_by_question(index, questions, idx)
    for ours_name, ranx_name in names.items():
        np.testing.assert_allclose(ours[ours_name], theirs[ranx_name], rtol=0, atol=1e-9,
                                   err_msg=ours_name)


# --------------------------------------------------------------------------- invariants


@pytest.mark.parametrize("measure", MEASURES, ids=lambda m: m.name)
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.slow
def test_values_lie_in_unit_interval(measure, seed):
    section_idx, questions, index = random_case(seed)
    values = measure(judge(section_idx, questions, index))
    assert values.shape == (len(questions),)
    assert np.isfinite(values).all()
    assert (values >= 0).all() and (values <= 1).all()
    assert values.max() > 0  # the random case is not degenerate


def perfect_case(seed: int = 3, depth: int = 12):
    """Every labelled section first, grades descending, then unlabelled ones."""
    section_idx, questions, index = random_case(seed, depth=depth)
    questions = [q for q in questions if q.relevant]
    rng = np.random.default_rng(seed)
    rows = []
    for q in questions:
        labelled = sorted(q.relevant, key=lambda s: -q.relevant[s])
        others = [s for s in index if s not in q.relevant]
        row = [index[s] for s in labelled] + [index[s] for s in rng.permutation(others)]
        rows.append(row[:depth])
    return np.asarray(rows, dtype=np.int32), questions, index


@pytest.mark.parametrize("measure", MEASURES, ids=lambda m: m.name)
def test_perfect_ranking(measure):
    section_idx, questions, index = perfect_case()
    values = measure(judge(section_idx, questions, index))
    n_rel = np.array([len(q.relevant) for q in questions], dtype=np.float64)
    if measure.family in ("rr", "hit", "ndcg", "rprec", "bpref") or (measure.family == "ap" and measure.k is None):
        expected = np.ones(len(questions))
    elif measure.family == "ap":
        expected = np.minimum(measure.k, n_rel) / n_rel
    elif measure.family == "recall":
        expected = np.minimum(measure.k, n_rel) / n_rel
    else:
        expected = np.minimum(measure.k, n_rel) / measure.k
    np.testing.assert_allclose(values, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("measure", MEASURES, ids=lambda m: m.name)
def test_ranking_without_relevant_sections_scores_zero(measure):
    section_idx, questions, index = random_case(4)
    rows = []
    for q, row in zip(questions, section_idx):
        unlabelled = [index[s] for s in index if s not in q.relevant]
        rows.append(unlabelled[: row.size])
    values = measure(judge(np.asarray(rows, dtype=np.int32), questions, index))
    np.testing.assert_array_equal(values, np.zeros(len(questions)))


@pytest.mark.parametrize("measure", MEASURES, ids=lambda m: m.name)
def test_question_without_labels_scores_zero_not_nan(measure):
    index = {"p#a": 0, "p#b": 1}
    judged = judge(np.array([[0, 1], [-1, -1]], dtype=np.int32), [question("x", {})] * 2, index)
    np.testing.assert_array_equal(measure(judged), [0.0, 0.0])


@pytest.mark.parametrize("measure", MEASURES, ids=lambda m: m.name)
def test_each_question_scored_alone_equals_the_batch(measure):
    """Vectorised over questions: padding of ``ideal`` to the longest label list or
    another question's row never changes a question's value."""
    section_idx, questions, index = random_case(5, n_questions=40)
    batch = measure(judge(section_idx, questions, index))
    alone = [measure(judge(section_idx[i : i + 1], [q], index))[0] for i, q in enumerate(questions)]
    np.testing.assert_allclose(batch, alone, rtol=0, atol=1e-12)


@pytest.mark.parametrize("family", ["hit", "recall"])
def test_monotone_in_k(family):
    section_idx, questions, index = random_case(6, depth=15)
    judged = judge(section_idx, questions, index)
    values = np.stack([Measure(family, k)(judged) for k in range(1, 17)])
    assert (np.diff(values, axis=0) >= 0).all()
    assert (np.diff(values, axis=0) > 0).any()


def test_hit_agrees_with_first_relevant_rank():
    section_idx, questions, index = random_case(7)
    judged = judge(section_idx, questions, index)
    rank = first_relevant_rank(judged)
    rr = Measure("rr")(judged)
    np.testing.assert_allclose(rr, np.where(rank > 0, 1 / np.maximum(rank, 1), 0))
    for k in KS:
        np.testing.assert_array_equal(Measure("hit", k)(judged), ((rank >= 1) & (rank <= k)).astype(float))


# --------------------------------------------------------------------------- names


def test_measures_for_registry():
    names = [m.name for m in measures_for([1, 3])]
    assert names == ["rr", "ap", "rprec", "bpref", "hit@1", "hit@3", "recall@1", "recall@3",
                     "precision@1", "precision@3", "ndcg@1", "ndcg@3", "ap@1", "ap@3", "judged@1", "judged@3"]
    assert [f.name for f in declared.families(declared.UNITS) if f.at_k] == [
        "hit", "recall", "precision", "ndcg", "ap", "judged"]


@pytest.mark.parametrize("measure", MEASURES, ids=lambda m: m.name)
def test_parse_measure_round_trips_canonical_names(measure):
    assert parse_measure(measure.name) == measure
    assert parse_measure(f" {measure.name.upper()} ") == measure


def test_parse_measure_aliases():
    assert parse_measure("mrr") == Measure("rr")
    assert parse_measure("MRR").name == "rr"
    assert parse_measure("map") == Measure("ap")
    assert parse_measure("map@10") == Measure("ap", 10)
    assert parse_measure("Rprec").name == "rprec"  # trec_eval's name


@pytest.mark.parametrize(
    "name, message",
    [
        ("ndcg", r"measure 'ndcg' needs a cutoff k >= 1, e\.g\. ndcg@3"),
        ("recall@0", r"measure 'recall@0' needs a cutoff k >= 1, e\.g\. recall@3"),
        ("foo@3", r"unknown measure 'foo@3': use rr \(mrr\), ap \(map\), rprec, bpref, or hit@k, recall@k, "
                  r"precision@k, ndcg@k, ap@k, judged@k, or at a token budget hit@300tok \(rr, hit, recall, "
                  r"precision, ndcg, ap\)$"),
        ("rprec@5", r"rprec takes no cutoff: it is measured at the run's depth"),
        ("bpref@10", r"bpref takes no cutoff"),
        ("ndcg@x", r"unknown measure 'ndcg@x'"),
        ("", r"unknown measure ''"),
        ("rr@5", r"rr takes no cutoff here: it is MRR@depth \(set depth instead\)"),
        ("mrr@10", r"rr takes no cutoff here"),
    ],
)
def test_parse_measure_rejects(name, message):
    with pytest.raises(ValueError, match=message):
        parse_measure(name)
