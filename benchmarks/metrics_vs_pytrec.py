"""receval's per-question measures against pytrec_eval (trec_eval) on synthetic runs.

    python benchmarks/metrics_vs_pytrec.py [--questions 100000] [--depth 100] [--repeat 3]

100,000 questions x 100 retrieved documents from a pool of 10,007, 1 to 12 graded
labels per question (grades 1..3; about half of them retrieved somewhere in the
100). The five measure families this figure has timed from the start, at ks 1, 3, 5,
10, 100 -- rr, hit@k, recall@k, precision@k, ndcg@k: 21 values per question --
against the equivalent trec_eval set: ``recip_rank``, ``success.k``, ``recall.k``,
``P.k``, ``ndcg_cut.k`` (the families added since, ap, rprec, bpref and judged@k, are
held to pytrec_eval by tests/test_metrics.py).

- receval: :func:`receval.run.evaluate.judge` (grades of the retrieved sections and
  each question's ideal grades, from the (Q, K) section index array and the
  questions' labels) plus every :class:`~receval.run.metrics.Measure`; the measures
  alone (from the ``Judged``) are also timed.
- pytrec_eval: ``RelevanceEvaluator(qrels, measures)`` plus ``evaluate(run)``.

Inputs each side takes as given are built outside the timing: the index array and
``Question`` objects for receval, the qrels and run dicts for pytrec_eval (their
build time is printed too). Scores strictly decrease down each ranking, so the
two order alike, and every value is checked to agree to 1e-9. Best of
``--repeat``; prints both times and the ratio pytrec_eval / receval (goal >= 2).
``--small``: 200 questions, one round. Figures go to ``benchmarks/figures.json``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from receval.datasets import Question
from receval.run.evaluate import judge
from receval.run.metrics import measures_for

import _figures

KS = [1, 3, 5, 10, 100]
POOL = 10_007  # prime: any stride from 1 to POOL-1 visits distinct documents
TREC = {"rr": "recip_rank", "hit": "success", "recall": "recall", "precision": "P", "ndcg": "ndcg_cut"}


def synthetic(n_questions: int, depth: int, seed: int = 0):
    """(section_idx (Q, depth) int32, questions, section index, doc ids)."""
    rng = np.random.default_rng(seed)
    ids = [f"d{j}" for j in range(POOL)]
    start = rng.integers(0, POOL, n_questions)[:, None]
    stride = rng.integers(1, POOL, n_questions)[:, None]
    walk = (start + np.arange(depth + 12)[None, :] * stride) % POOL  # distinct per row
    section_idx = walk[:, :depth].astype(np.int32)
    n_labels = rng.integers(1, 13, n_questions)
    inside = rng.random((n_questions, 12)) < 0.5  # a label among the retrieved, or beyond
    position = np.where(inside, rng.integers(0, depth, (n_questions, 12)), depth + np.arange(12))
    labelled = np.take_along_axis(walk, position, axis=1)
    grades = rng.integers(1, 4, (n_questions, 12))
    questions = []
    for q in range(n_questions):
        relevant = {}
        for doc, grade in zip(labelled[q, : n_labels[q]].tolist(), grades[q, : n_labels[q]].tolist()):
            relevant.setdefault(ids[doc], grade)
        questions.append(Question(f"q{q}", "?", "judged", "test", relevant))
    return section_idx, questions, {d: j for j, d in enumerate(ids)}, ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=100_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = _figures.parse(parser, small={"questions": 200, "repeat": 1}, keys=("questions", "depth"))

    import pytrec_eval  # the test extra's oracle

    section_idx, questions, index, ids = synthetic(args.questions, args.depth)
    # the five families the figure has always timed (rr; hit, recall, precision, ndcg at KS):
    # measures added since (ap, rprec, bpref, judged) are left out so the figure keeps its meaning
    measures = [m for m in measures_for(KS) if m.family in TREC]

    began = time.perf_counter()
    qrels = {q.id: dict(q.relevant) for q in questions}
    scores = (args.depth - np.arange(args.depth)).astype(float).tolist()  # strictly decreasing
    run = {q.id: dict(zip([ids[j] for j in row], scores)) for q, row in zip(questions, section_idx.tolist())}
    dicts_s = time.perf_counter() - began
    trec_measures = {"recip_rank"} | {f"{TREC[f]}.{','.join(map(str, KS))}" for f in ("hit", "recall", "precision", "ndcg")}

    def ours():
        judged = judge(section_idx, questions, index)
        return judged, {m.name: m(judged) for m in measures}

    def measures_only(judged):
        return lambda: {m.name: m(judged) for m in measures}

    def theirs():
        return pytrec_eval.RelevanceEvaluator(qrels, trec_measures).evaluate(run)

    def best(work):
        times, result = [], None
        for _ in range(args.repeat):
            began = time.perf_counter()
            result = work()
            times.append(time.perf_counter() - began)
        return min(times), result

    ours_s, (judged, values) = best(ours)
    measures_s, _ = best(measures_only(judged))
    theirs_s, reference = best(theirs)

    worst = 0.0
    for measure in measures:
        name = TREC[measure.family] if measure.k is None else f"{TREC[measure.family]}_{measure.k}"
        other = np.fromiter((reference[q.id][name] for q in questions), np.float64, len(questions))
        worst = max(worst, float(np.max(np.abs(values[measure.name] - other))))
    assert worst <= 1e-9, f"receval and pytrec_eval disagree by {worst}"

    n_values = len(measures) * len(questions)
    print(
        f"{args.questions} questions x {args.depth} results, {len(measures)} measures "
        f"(rr; hit, recall, precision, ndcg @ {KS}) = {n_values:,} values; best of {args.repeat}"
    )
    print(f"receval judge + measures            {ours_s:8.3f} s")
    print(f"  of which the measures (from Judged) {measures_s:6.3f} s")
    print(f"pytrec_eval evaluator + evaluate    {theirs_s:8.3f} s   (building its dicts: {dicts_s:.3f} s, not counted)")
    print(f"all values agree to 1e-9 (largest difference {worst:.1e})")
    print(f"ratio pytrec_eval / receval, judge + measures: {theirs_s / ours_s:.1f}x  (goal >= 2)")
    print(f"ratio pytrec_eval / receval, measures only:    {theirs_s / measures_s:.1f}x")
    _figures.record(args, {
        "receval_s": ours_s, "measures_s": measures_s, "pytrec_eval_s": theirs_s, "ratio": theirs_s / ours_s,
        "ratio_measures": theirs_s / measures_s, "largest_difference": worst,
    })


if __name__ == "__main__":
    main()
