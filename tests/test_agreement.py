"""Exact agreement with trec_eval (through pytrec_eval) and ranx on exported runs.

receval's stored per-question ``rr``, ``ndcg@10``, ``recall@100``, ``ap``, ``ap@10``,
``rprec`` and ``bpref`` must equal pytrec_eval's ``recip_rank``, ``ndcg_cut_10``,
``recall_100``, ``map``, ``map_cut_10``, ``Rprec`` and ``bpref`` (and ranx's ``mrr``,
``ndcg@10``, ``recall@100``, ``map``, ``r-precision``) to 1e-9, question by question, when both read the run
exported by :mod:`receval.cli.export`. The judgements given to the external tools are
the collection's own qrels, score-0 lines included; receval counts a score-0
judgement as not relevant, as they do. Ties: trec_eval breaks equal scores by docid
descending and ranx by an unstable argsort; the exported scores are strictly
decreasing, so both see receval's order (score desc, then id asc).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import SHARED, lazy_import
from receval.results import trec
from receval.datasets import Question
from receval.run.evaluate import judge
from receval.results.external import export
from receval.run.metrics import parse_measure
from receval.scoring.declared import trec_eval_name
from receval.run.pipeline import run
from receval.run.ranking import select_top, tie_ranks
from receval.results import open_run

pytrec_eval = pytest.importorskip("pytrec_eval")
ranx = lazy_import("ranx")

CRANFIELD = SHARED / "datasets" / "cranfield"
SCIFACT = SHARED / "datasets" / "scifact"
#: trec_eval's name for each checked measure, as its family declares it (receval.scoring.declared)
PYTREC = {
    name: trec_eval_name(parse_measure(name)) for name in ("rr", "ndcg@10", "recall@100", "ap", "ap@10", "rprec", "bpref")
}
assert PYTREC["ndcg@10"] == "ndcg_cut_10" and PYTREC["ap"] == "map" and PYTREC["ap@10"] == "map_cut_10"
RANX = {"rr": "mrr", "ndcg@10": "ndcg@10", "recall@100": "recall@100", "ap": "map", "rprec": "r-precision"}


def beir_qrels(path) -> dict[str, dict[str, int]]:
    """A BEIR qrels TSV read as it is, score-0 judgements included."""
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text().splitlines()[1:]:
        if line.strip():
            qid, doc_id, score = line.split("\t")
            qrels.setdefault(qid, {})[doc_id] = int(score)
    return qrels


def run_and_export(make_config, tmp_path, path, *overrides):
    cfg = make_config(
        "dataset=beir", f"dataset.path={path}", "dataset.split=test", "retriever=bm25",
        "chunking.max_words=null", "depth=100", "metrics.ks=[1,3,5,10,100]", *overrides,
    )
    result = run(cfg, tmp_path / "run")
    export(tmp_path / "run", tmp_path / "run.txt", tmp_path / "qrels.txt")
    return result, open_run(tmp_path / "run", skip=frozenset()).table.to_pydict()


def exported_run(path) -> dict[str, dict[str, float]]:
    """The exported run file parsed independently of receval.results.trec."""
    out: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        qid, _, doc_id, _, score, _ = line.split()
        out.setdefault(qid, {})[doc_id] = float(score)
    return out


def assert_agrees(table, run_dict, qrels):
    """Stored measures (PYTREC, RANX) == pytrec_eval's and ranx's, every question."""
    qids = table["question_id"]
    judged = {q: qrels[q] for q in qids}
    scored = {q: run_dict.get(q, {}) for q in qids}
    theirs = pytrec_eval.RelevanceEvaluator(judged, set(PYTREC.values())).evaluate(scored)
    for ours, name in PYTREC.items():
        mine = np.asarray(table[ours], dtype=float)
        other = np.asarray([theirs[q][name] if q in theirs else 0.0 for q in qids])
        np.testing.assert_allclose(mine, other, rtol=0, atol=1e-9, err_msg=f"{ours} vs pytrec_eval {name}")
    qrels_x = ranx.Qrels({q: dict(judged[q]) for q in qids})
    run_x = ranx.Run({q: dict(scored[q]) or {"__none__": 0.0} for q in qids})
    values = ranx.evaluate(qrels_x, run_x, list(RANX.values()), return_mean=False, make_comparable=True)
    order = {q: i for i, q in enumerate(qrels_x.keys())}
    for ours, name in RANX.items():
        mine = np.asarray(table[ours], dtype=float)
        other = np.asarray(values[name])[[order[q] for q in qids]]
        np.testing.assert_allclose(mine, other, rtol=0, atol=1e-9, err_msg=f"{ours} vs ranx {name}")


@pytest.mark.slow  # a whole collection through ranx's numba compile: about 25 s of CPU
@pytest.mark.skipif(not CRANFIELD.is_dir(), reason=f"shared test collection absent: {CRANFIELD}")
def test_cranfield_bm25_agrees_with_trec_eval_and_ranx(make_config, tmp_path):
    result, table = run_and_export(make_config, tmp_path, CRANFIELD, "retriever.k1=0.9", "retriever.b=0.4")
    assert result.n_questions == 225
    original = beir_qrels(CRANFIELD / "qrels" / "test.tsv")
    # the exported labels are the collection's judgements with score >= 1
    exported = trec.read_qrels(tmp_path / "qrels.txt")
    assert exported == {q: {d: g for d, g in j.items() if g >= 1} for q, j in original.items()}
    run_dict = exported_run(tmp_path / "run.txt")
    # the exported file, sorted as trec_eval sorts, is exactly the stored order
    for qid, retrieved in zip(table["question_id"], table["retrieved"]):
        assert [d for d, _ in trec.trec_order(run_dict.get(qid, {}).items())] == retrieved
    assert_agrees(table, run_dict, original)
    # BM25 (k1 0.9, b 0.4, title + text) on Cranfield: about 0.32 nDCG@10
    assert result.means["ndcg@10"] == pytest.approx(0.3276, abs=5e-4)


@pytest.mark.slow  # a whole collection
@pytest.mark.skipif(not SCIFACT.is_dir(), reason=f"shared test collection absent: {SCIFACT}")
def test_scifact_bm25_agrees_with_trec_eval(make_config, tmp_path):
    """The shared SciFact copy holds only its train split (809 judged queries)."""
    cfg = make_config(
        "dataset=beir", f"dataset.path={SCIFACT}", "dataset.split=train", "retriever=bm25",
        "chunking.max_words=null", "depth=100", "metrics.ks=[10,100]",
    )
    result = run(cfg, tmp_path / "run")
    export(tmp_path / "run", tmp_path / "run.txt", tmp_path / "qrels.txt")
    table = open_run(tmp_path / "run", skip=frozenset()).table.to_pydict()
    assert result.n_questions == 809
    qrels = beir_qrels(SCIFACT / "qrels" / "train.tsv")
    run_dict = exported_run(tmp_path / "run.txt")
    qids = table["question_id"]
    theirs = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in qids}, set(PYTREC.values())).evaluate(
        {q: run_dict.get(q, {}) for q in qids}
    )
    for ours, name in PYTREC.items():
        other = [theirs[q][name] if q in theirs else 0.0 for q in qids]
        np.testing.assert_allclose(np.asarray(table[ours], dtype=float), other, rtol=0, atol=1e-9, err_msg=ours)
    assert 0.5 < result.means["ap"] < 0.8  # BM25 on SciFact: MAP about 0.6


@pytest.mark.slow
def test_ties_and_score_zero_judgements_end_to_end(make_config, tmp_path):
    """Identical documents score alike; score-0 and unjudged queries; all agree."""
    root = tmp_path / "collection"
    (root / "qrels").mkdir(parents=True)
    docs = [
        ("a1", "red green blue"), ("a2", "red green blue"), ("a3", "red green blue"),
        ("b", "red yellow"), ("c", "green purple"), ("d", "blue purple"),
        ("e", "nothing shared"), ("f", "red green blue"),
    ]
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": "", "text": t}) + "\n" for i, t in docs)
    )
    queries = {"q1": "red green blue", "q2": "red", "q3": "purple", "q4": "blue", "q5": "unjudged"}
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items())
    )
    qrels = "query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{s}\n"
        for q, d, s in [
            ("q1", "f", 2), ("q1", "a1", 0), ("q1", "a3", 1), ("q1", "c", 0),
            ("q2", "a2", 1), ("q2", "b", 0), ("q3", "c", 3), ("q4", "e", 1), ("q4", "a1", 0),
            ("q5x", "a1", 0),
        ]
    ).replace("q5x", "q4")
    (root / "qrels" / "test.tsv").write_text(qrels)
    result, table = run_and_export(make_config, tmp_path, root, "metrics.ks=[1,3,10]", "depth=10")
    assert table["question_id"] == ["q1", "q2", "q3", "q4"]
    retrieved = dict(zip(table["question_id"], table["retrieved"]))
    assert retrieved["q1"][:4] == ["a1", "a2", "a3", "f"]  # four-way tie, id ascending
    run_dict = exported_run(tmp_path / "run.txt")
    original = beir_qrels(root / "qrels" / "test.tsv")
    qids = table["question_id"]
    theirs = pytrec_eval.RelevanceEvaluator({q: original[q] for q in qids}, set(PYTREC.values())).evaluate(
        {q: run_dict.get(q, {}) for q in qids}
    )
    stored = {ours: name for ours, name in PYTREC.items() if ours != "recall@100"}  # depth 10 here
    for ours, name in stored.items():  # bpref reads the score-0 lines of q1, q2 and q4
        np.testing.assert_allclose(table[ours], [theirs[q][name] for q in qids], atol=1e-12, err_msg=ours)
    assert table["bpref"][0] != table["recall@10"][0]
    assert table["rr"][0] == pytest.approx(1 / 3)  # a3 is third by id; trec_eval's own order would put it first
    # without the nudge, trec_eval would see the tie the other way round
    raw = {q: dict(zip(r, s)) for q, r, s in zip(qids, table["retrieved"], table["scores"])}
    naive = pytrec_eval.RelevanceEvaluator({"q1": original["q1"]}, {"recip_rank"}).evaluate({"q1": raw["q1"]})
    assert naive["q1"]["recip_rank"] == 1.0


@pytest.mark.parametrize("seed", range(4))
def test_synthetic_tied_runs_reevaluate_identically(seed, tmp_path):
    """Heavily tied random scores ranked by receval's tie rule, exported and re-read."""
    rng = np.random.default_rng(seed)
    n_questions, n_docs, depth = 60, 40, 15
    ids = [f"doc{j:03d}" for j in rng.permutation(n_docs)]  # ids not in index order
    index = {d: j for j, d in enumerate(ids)}
    scores = rng.integers(0, 4, size=(n_questions, n_docs)).astype(np.float32)  # few levels: many ties
    idx, top = select_top(scores, depth, tie_ranks(ids), floor=0.0)
    questions = []
    for q in range(n_questions):
        labelled = rng.choice(n_docs, size=int(rng.integers(1, 8)), replace=False)
        questions.append(Question(f"q{q}", "?", "judged", "test", {ids[j]: int(rng.integers(1, 4)) for j in labelled}))
    judged = judge(idx, questions, index)
    ranking = {
        q.id: [(ids[j], float(s)) for j, s in zip(idx[row], top[row]) if j >= 0]
        for row, q in enumerate(questions)
    }
    for ranked in ranking.values():  # the tie rule: score desc, then id asc
        assert ranked == sorted(ranked, key=lambda pair: (-pair[1], pair[0]))
    path = trec.write_run(tmp_path / "run.txt", ranking, tag="synthetic")
    reread = trec.read_run(path)
    assert {q: [d for d, _ in r] for q, r in reread.items()} == {
        q: [d for d, _ in r] for q, r in ranking.items() if r
    }
    qrels = {q.id: q.relevant for q in questions}
    names = {"rr": "recip_rank", "ndcg@10": "ndcg_cut_10", "recall@10": "recall_10", "precision@5": "P_5"}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, set(names.values())).evaluate(exported_run(path))
    raw = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(
        {q: dict(r) for q, r in ranking.items()}
    )
    for ours, name in names.items():
        mine = parse_measure(ours)(judged)
        other = [theirs.get(q.id, {}).get(name, 0.0) for q in questions]
        np.testing.assert_allclose(mine, other, rtol=0, atol=1e-12, err_msg=ours)
    rr = parse_measure("rr")(judged)
    assert any(abs(rr[i] - raw.get(q.id, {}).get("recip_rank", 0.0)) > 1e-9 for i, q in enumerate(questions)), (
        "the raw tied scores should rank differently under trec_eval's tie rule"
    )
