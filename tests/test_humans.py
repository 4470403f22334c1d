"""Human labels where they count (issue 46): the person's sample drawn by the judge's
grade with Neyman's allocation from the calibration spread, prediction-powered inference
over that design (narrower at half the labels than a uniform sample, with a biased
judge), the labels that would certify the judge, and the commands end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from conftest import exit_code, sweep_in_process
from receval.run import config as config_schema
from receval.analysis.humans import certify, draw_for_humans, grade_spreads
from receval.stats.estimators import design_intervals, working_ppi
from receval.stats.sampling import labels_needed


def test_grade_spreads_read_each_judged_column_of_the_confusion():
    grades = [0, 1, 2]
    matrix = np.array([[50, 20, 0],   # known 0: judged 0, 1, 2
                       [2, 20, 1],    # known 1
                       [0, 0, 0]])    # known 2: none; judged 2 has one pair: the overall spread
    spreads = grade_spreads(grades, matrix, [0, 1, 2])
    assert spreads[0] == pytest.approx(np.std([0] * 50 + [1] * 2))
    assert spreads[1] == pytest.approx(0.5)  # 20 known 0 and 20 known 1 among the judged 1s
    assert spreads[2] == pytest.approx(np.std([0] * 70 + [1] * 23))


def test_the_draw_follows_neyman_and_records_its_probabilities():
    judged = [(f"q{i % 10}", f"d{i}", 1 if i < 300 else 0) for i in range(1000)]
    drawn = draw_for_humans(judged, {0: 0.1, 1: 0.5}, 100, seed=4)
    by_grade = {g: [r for r in drawn if r["judge_grade"] == g] for g in (0, 1)}
    # N_g S_g: 700 * 0.1 = 70 against 300 * 0.5 = 150, after 2 each: 2 + 96 * 70 / 220 and 2 + 96 * 150 / 220
    assert len(by_grade[0]) == 33 and len(by_grade[1]) == 67 and len(drawn) == 100
    assert {r["inclusion"] for r in by_grade[1]} == {67 / 300} and {r["drawn"] for r in by_grade[0]} == {33}
    assert {r["stratum"] for r in by_grade[0]} != {r["stratum"] for r in by_grade[1]}
    assert draw_for_humans(judged, {0: 0.1, 1: 0.5}, 100, seed=4) == drawn


def test_certify_counts_labels_by_the_judges_error_in_each_grade():
    grades = [0, 1]
    matrix = np.array([[90, 30], [10, 70]])  # judged 0: 10 of 100 wrong; judged 1: 30 of 100 wrong
    judged = {"q": {f"d{i}": int(i < 4000) for i in range(10000)}}
    found = certify(judged, (grades, matrix, "the calibration sample"), 0.02, 0.95)
    # Agresti-Coull centres (x + z^2/2) / (n + z^2), z^2 = 3.8415: 0.11480 and 0.30740; uniform
    # n0 = z^2 p (1 - p) / d^2 at p = 0.6 * 0.11480 + 0.4 * 0.30740 = 0.19184: 1488.9, 1296 after the
    # finite-population correction; Neyman n0 = z^2 (0.6 * 0.31878 + 0.4 * 0.46142)^2 / d^2: 1356.5 -> 1195
    assert (found.uniform, found.stratified) == (1296, 1195)
    assert found.error_rate == pytest.approx(0.6 * 0.1 + 0.4 * 0.3)  # the line shows the observed rate
    assert "drawn by its grade" in found.line() and f"{found.uniform} human labels" in found.line()


def test_a_judge_never_seen_wrong_still_needs_labels_to_certify_it():
    """Each grade right on every calibration pair once gave "0 drawn by its grade": a rate
    of 0 from 50 pairs is not a rate known to be 0."""
    judged = {"q": {f"d{i}": int(i < 100) for i in range(1000)}}
    found = certify(judged, ([0, 1], np.array([[40, 0], [0, 10]]), "the reference labels"), 0.05, 0.95)
    # centres 1.9207 / 43.841 = 0.04381 (grade 0) and 1.9207 / 13.841 = 0.13877 (grade 1): uniform
    # n0 = 77.55 -> 72; Neyman n0 = z^2 (0.9 * 0.20467 + 0.1 * 0.34570)^2 / 0.05^2 = 73.55 -> 69
    assert (found.uniform, found.stratified, found.error_rate) == (72, 69, 0.0)
    # a loose precision: the stratified count keeps 2 a grade (1 where the judge gave a grade once)
    assert certify(judged, ([0, 1], np.array([[40, 0], [0, 10]]), "x"), 0.5, 0.95).stratified == 4
    one = {"q": {**{f"d{i}": 0 for i in range(50)}, "e": 1}}
    assert certify(one, ([0, 1], np.array([[40, 0], [0, 10]]), "x"), 0.5, 0.95).stratified == 3
    assert labels_needed(np.array([10, 10]), np.array([0, 0]), np.array([0, 0]), 0.5)[1] == 4


def biased_world(seed: int, n_questions: int = 100, n_units: int = 40):
    """A person's grades and a judge that over-labels, as LLM judges do: it grades every
    relevant unit as the person does, and 40% of the others 1."""
    rng = np.random.default_rng(seed)
    person = np.where(rng.random((n_questions, n_units)) < 0.25, rng.integers(1, 4, (n_questions, n_units)), 0)
    judge = np.where(person >= 1, person, np.where(rng.random(person.shape) < 0.4, 1, 0))
    ranked = np.stack([rng.permutation(n_units) for _ in range(n_questions)])[None]
    return person, judge, ranked


@pytest.mark.slow  # 2 designs x 12 draws, each with 100 replicates
def test_a_stratified_human_sample_with_half_the_labels_is_no_wider_than_a_uniform_one():
    person, judge, ranked = biased_world(0)
    n_questions, n_units = person.shape
    question = np.repeat(np.arange(n_questions), n_units)
    y, f = person.ravel(), judge.ravel()
    index = ranked + (np.arange(n_questions) * n_units)[None, :, None]
    # the calibration spread: 300 pairs the judge graded blind, with known grades
    calibration = np.random.default_rng(1).choice(y.size, 300, replace=False)
    grades = [0, 1, 2, 3]
    matrix = np.zeros((4, 4), dtype=np.int64)
    np.add.at(matrix, (y[calibration], f[calibration]), 1)
    spreads = dict(zip(grades, grade_spreads(grades, matrix, grades)))
    pairs = [(str(question[i]), str(i), int(f[i])) for i in range(y.size)]
    measures = ["precision@20", "precision@5"]
    scored = {m: np.ones((1, n_questions), dtype=bool) for m in measures}
    truth = {"precision@20": (np.take_along_axis(person, ranked[0], 1)[:, :20] >= 1).sum(axis=1).mean() / 20}
    widths = {"uniform": {m: [] for m in measures}, "stratified": {m: [] for m in measures}}
    hits = []
    for seed in range(12):
        rng = np.random.default_rng(100 + seed)
        uniform = np.zeros(y.size, dtype=bool)
        uniform[rng.choice(y.size, 400, replace=False)] = True
        drawn = draw_for_humans(pairs, spreads, 200, seed)
        stratified = np.zeros(y.size, dtype=bool)
        inclusion, stratum = np.ones(y.size), -np.ones(y.size, dtype=np.int64)
        for record in drawn:
            i = int(record["id"])
            stratified[i], inclusion[i], stratum[i] = True, record["inclusion"], record["stratum"]
        designs = {
            "uniform": working_ppi(question, f, y, np.where(uniform, 400 / y.size, 1.0), np.where(uniform, 0, -1),
                                   n_questions, 3),
            "stratified": working_ppi(question, f, y, inclusion, stratum, n_questions, 3),
        }
        for name, working in designs.items():
            found = design_intervals(working, index, measures, scored, 0.95, 100, seed)
            for m in measures:
                widths[name][m].append(found[m][0].hi - found[m][0].lo)
            if name == "stratified":
                hits.append(found["precision@20"][0].lo <= truth["precision@20"] <= found["precision@20"][0].hi)
    assert int(stratified.sum()) == 200 and int(uniform.sum()) == 400
    for m in measures:
        assert np.mean(widths["stratified"][m]) <= np.mean(widths["uniform"][m]), m
    assert np.mean(hits) >= 10 / 12  # the narrower interval still holds the person's value


def judge_cfg(*overrides: str):
    config_schema.register_judge()
    with initialize_config_dir(config_dir=config_schema.config_dir(), version_base="1.3"):
        return compose("judge", overrides=list(overrides))


@pytest.mark.slow  # a sweep, two judge jobs and three reports in-process
def test_for_humans_pool_person_labels_and_report_end_to_end(tmp_path_factory, tmp_path):
    from receval.cli.pool import main as pool_main
    from receval.cli.report import report_for
    from receval.judge.job import run_judge
    from receval.results import load_runs
    from receval.results.judgments import stored_labels

    sweep = sweep_in_process(tmp_path_factory.mktemp("sweep"), ["depth=10"], ["retriever=bm25", "retriever=tfidf"])
    pool = tmp_path / "pool.jsonl"
    assert exit_code(pool_main, [sweep, "--depth", "10", "--calibrate", "20", "--out", pool]) == 0
    # the judge: everything ranked first or second by some run is relevant (grade 1), the rest 0
    records = [r for r in map(json.loads, pool.read_text().splitlines()) if r.get("role") != "run"]
    judge_file = tmp_path / "judge_grades.jsonl"
    judge_file.write_text("".join(json.dumps({"question_id": r["question_id"], "id": r["id"],
                                              "grade": int((r.get("best_rank") or 99) <= 2)}) + "\n"
                                  for r in records if r.get("role") in ("hole", "calibration")))
    # a reference on part of the holes (the person's rule: relevant when some run ranks it first) gives the
    # judge's confusion with its grade-0 errors, which the calibration's relevant-only pairs cannot
    reference = tmp_path / "reference.jsonl"
    reference.write_text("".join(json.dumps({"question_id": r["question_id"], "id": r["id"],
                                             "grade": int(r.get("best_rank") == 1)}) + "\n"
                                 for r in records[::3] if r.get("role") == "hole"))
    run_judge(judge_cfg(f"pool={pool}", "judge=qrels", f"judge.path={judge_file}", f"reference={reference}",
                        f"out={tmp_path / 'judge.jsonl'}"))
    # the person's draw, by the judge's grade
    human_pool = tmp_path / "humans.jsonl"
    assert exit_code(pool_main, [sweep, "--for-humans", "40", "--stratify", "judge", "--judged",
                                 tmp_path / "judge.jsonl", "--out", human_pool]) == 0
    drawn = [json.loads(line) for line in human_pool.read_text().splitlines()]
    assert len(drawn) == 40 and {r["design"] for r in drawn} == {"humans"} and all(r["text"] for r in drawn)
    # the person: relevant when ranked first by some run
    person = tmp_path / "person.jsonl"
    best = {(r["question_id"], r["id"]): r.get("best_rank") for r in records}
    person.write_text("".join(json.dumps({"question_id": r["question_id"], "id": r["id"],
                                          "grade": int(best[r["question_id"], r["id"]] == 1)}) + "\n" for r in drawn))
    run_judge(judge_cfg(f"pool={human_pool}", "judge=qrels", f"judge.path={person}", f"out={tmp_path / 'human.jsonl'}"))
    report = report_for([str(sweep), "--labels", str(tmp_path / "judge.jsonl"), "--human", str(tmp_path / "human.jsonl"),
                         "--metric", "precision@10", "--n-resamples", "50", "--agreement"])
    assert len(report.stratified_ppi) == 2 and report.stratified_ppi[0].n_labelled == 40
    first = report.stratified_ppi[0]
    assert first.lo <= first.estimate <= first.hi and first.alone[1] <= first.alone[0] <= first.alone[2]
    data = report.to_dict()
    assert data["ppi"][0]["design"] == "stratified by judge grade" and data["certify"][0]["stratified"] > 0
    runs = load_runs([sweep], skip=frozenset())
    assert stored_labels(runs[0])  # the stored labels stay known for certain
    for metric, why in (("ap", "MAP divides by each question's number of relevant units"),
                        ("ndcg@10", "nDCG@10 divides by each question's ideal DCG")):
        with pytest.raises(Exception, match=f"corrects precision@k; {why}.*give --metric precision@10"):
            report_for([str(sweep), "--labels", str(tmp_path / "judge.jsonl"), "--human", str(tmp_path / "human.jsonl"),
                        "--metric", metric])


def test_stratified_ppi_refuses_the_ratios_with_the_reason():
    """nDCG from signed corrections can leave [0, 1] (-1.012 [-1.557, -0.466] against a true 0.751 on the built-in
    library with a gullible judge and 40 human labels): refused like AP and recall, before anything is read."""
    from receval.analysis.humans import stratified_ppi
    from receval.core.errors import RecevalError

    for metric, why in (("ndcg@10", "ideal DCG"), ("recall@10", "number of relevant units"), ("rr", "every unit above")):
        with pytest.raises(RecevalError, match=f"corrects precision@k; .*{why}.*give --metric precision@10"):
            stratified_ppi([], {}, [], metric, 0.95, 10, 0)
