"""Judgment holes (issue 25): judged@k against trec_eval's judged-only view on Cranfield,
and the report's notes on runs scored mostly on unlabelled units."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import SHARED, run_of
from receval.analysis.holes import judged_cautions
from receval.results import open_run
from receval.results.external import read_labels

pytrec_eval = pytest.importorskip("pytrec_eval")
CRANFIELD = SHARED / "datasets" / "cranfield"


@pytest.mark.slow  # a whole collection
@pytest.mark.skipif(not CRANFIELD.is_dir(), reason=f"shared test collection absent: {CRANFIELD}")
def test_judged_at_k_equals_trec_eval_judged_view_on_cranfield(tmp_path_factory):
    run_dir = run_of(
        tmp_path_factory, "dataset=beir", f"dataset.path={CRANFIELD}", "dataset.split=test", "retriever=bm25",
        "chunking.max_words=null", "depth=10", "metrics.ks=[1,3,5,10]",
    )
    table = open_run(run_dir, skip=frozenset()).table.to_pydict()
    qrels = read_labels(CRANFIELD / "qrels" / "test.tsv")
    qids = table["question_id"]
    assert len(qids) == 225
    for k in (1, 3, 5, 10):
        # trec_eval -J: only judged documents are kept; num_ret of the top k is then the judged count
        cut = {q: {d: float(k - i) for i, d in enumerate(r[:k])} for q, r in zip(qids, table["retrieved"])}
        theirs = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in qids}, {"num_ret"},
                                                judged_docs_only_flag=True).evaluate(cut)
        expected = [theirs.get(q, {}).get("num_ret", 0) / k for q in qids]
        np.testing.assert_allclose(table[f"judged@{k}"], expected, rtol=0, atol=1e-12, err_msg=f"judged@{k}")
    # about 7 judged documents per query: BM25's top 10 is roughly a quarter judged
    assert 0.15 < np.mean(table["judged@10"]) < 0.5


def test_the_judged_note_appears_only_when_the_unlabelled_could_change_the_order(tmp_path_factory):
    """The built-in questions label one or two sections each: judged@10 is at most their
    count / 10, low for every run; that alone is no note."""
    run = open_run(run_of(tmp_path_factory, "depth=10", "metrics.ks=[1,10]"), skip=frozenset())
    n_labels = np.asarray([len(r) for r in run.strings("relevant")], dtype=float)
    judged = run.values("judged@10")
    assert (judged[n_labels > 0] <= n_labels[n_labels > 0] / 10 + 1e-12).all() and np.nanmean(judged) < 0.15
    assert judged_cautions([run], ["bm25"], "ndcg@10") == []  # one run: no comparison to change
    assert judged_cautions([run, run], ["a", "b"], "ndcg@10") == []  # judged alike: the order stands
    import pyarrow as pa

    def with_column(base, name, values):
        return base.filtered(base.table.set_column(base.table.column_names.index(name), name, pa.array(values)))

    # a run whose top 10 is all labelled, scoring the same: the other's unlabelled units could reverse it
    full = with_column(run, "judged@10", [1.0] * run.table.num_rows)
    (note,) = judged_cautions([full, run], ["a", "b"], "ndcg@10")
    share = 1 - np.nanmean(judged)
    assert note.startswith(f"#1 b has more of its top 10 unlabelled than #0 a ({share:.2f} vs 0.00): #0 leads it by "
                           "0.000 on nDCG@10, but labelling those units could reverse the order; pool and judge")
    assert "receval judge pool=pool.jsonl" in note
    # after a judged sample (report --labels of a budgeted pool): an undrawn unit within the pool's depth counts
    # through the drawn ones of its stratum, so no note; below that depth it counts as not relevant, said so
    assert judged_cautions([full, run], ["a", "b"], "ndcg@10", sampled=True, sample_depth=10) == []
    (shallow,) = judged_cautions([full, run], ["a", "b"], "ndcg@10", sampled=True, sample_depth=5)
    assert shallow.startswith(f"#1 b has more of its top 10 unlabelled than #0 a ({share:.2f} vs 0.00): #0 leads it "
                              "by 0.000 on nDCG@10, but the judged sample's estimates count its units below the "
                              "pool's depth 5 as not relevant")
    assert "receval pool RUNS --budget N --depth 10" in shallow and "pool and judge them" not in shallow
    # a run 0.05 better judged and 0.10 ahead: the other's extra unlabelled share cannot close the gap
    ahead = with_column(with_column(run, "judged@10", (judged + 0.05).tolist()), "ndcg@10",
                        (run.values("ndcg@10") + 0.10).tolist())
    assert judged_cautions([ahead, run], ["a", "b"], "ndcg@10") == []
    behind = with_column(ahead, "ndcg@10", (run.values("ndcg@10") + 0.04).tolist())  # 0.04 ahead: it could
    assert len(judged_cautions([behind, run], ["a", "b"], "ndcg@10")) == 1
    # the same scores, judged 0.01 better on average but by noise the questions do not bear out
    # (per-question jitter of 0.1): two standard errors of the paired difference exceed 0.01
    jitter = np.where(np.arange(run.table.num_rows) % 2 == 0, 0.11, -0.09)
    noisy = with_column(run, "judged@10", (judged + jitter).tolist())
    assert judged_cautions([noisy, run], ["a", "b"], "ndcg@10") == []
    steady = with_column(run, "judged@10", (judged + 0.01).tolist())  # the same 0.01 on every question: real
    assert len(judged_cautions([steady, run], ["a", "b"], "ndcg@10")) == 1


# --------------------------------------------------------------------------- pool, re-score


import json  # noqa: E402

from conftest import sweep_in_process  # noqa: E402
from receval.analysis.holes import label_agreement, relabel  # noqa: E402
from receval.analysis.pool import pool  # noqa: E402
from receval.cli.pool import main as pool_main  # noqa: E402
from receval.cli.report import report_for  # noqa: E402
from receval.run.config import BootstrapConfig  # noqa: E402
from receval.core.errors import RecevalError  # noqa: E402
from receval.results import load_runs  # noqa: E402
from receval.results.judgments import rescore, stored_labels  # noqa: E402


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    return sweep_in_process(root, ["depth=10"], ["retriever=bm25", "retriever=tfidf"], ["chunking.max_words=40"])


@pytest.mark.slow
def test_pool_lists_every_unlabelled_pair_once_with_runs_and_best_rank(two_runs):
    runs = load_runs([two_runs], skip=frozenset())
    pairs = pool(runs, depth=5, calibrate=4, seed=0).pairs
    holes = [p for p in pairs if p.role == "hole"]
    expected: dict[tuple, list] = {}
    for run in runs:
        labels = stored_labels(run)
        for qid, retrieved in zip(run.ids, run.strings("retrieved")):
            for rank, uid in enumerate(retrieved[:5], 1):
                if uid not in labels.get(qid, {}):
                    entry = expected.setdefault((qid, uid), [0, rank])
                    entry[0] += 1
                    entry[1] = min(entry[1], rank)
    assert {(p.question_id, p.id): [p.n_runs, p.best_rank] for p in holes} == expected
    assert len(holes) == len(expected) and any(p.n_runs == 2 for p in holes)
    calibration = [p for p in pairs if p.role == "calibration"]
    assert len(calibration) == 4 and all(p.known >= 1 for p in calibration)
    assert pool(runs, depth=5, calibrate=4, seed=0).pairs == pairs  # seeded
    references = [p for p in pairs if p.role == "reference"]
    assert len(references) == sum(len(v) for v in stored_labels(runs[0]).values())
    with pytest.raises(RecevalError, match="--depth 0"):
        pool(runs, depth=0)


@pytest.mark.slow
def test_pool_budget_draws_at_most_the_budget_even_below_the_number_of_strata(two_runs, tmp_path):
    """Issue 46: --budget 1 once pooled a pair per stratum (11 on the built-in library)."""
    runs = load_runs([two_runs], skip=frozenset())
    for budget in (1, 2, 5, 30):
        holes = [p for p in pool(runs, depth=10, budget=budget, seed=0).pairs if p.role == "hole"]
        assert len(holes) == budget
        by_stratum = {}
        for p in holes:
            by_stratum.setdefault(p.stratum, []).append(p)
        assert all(0 < p.inclusion <= 1 and p.drawn == len(by_stratum[p.stratum]) for p in holes)
    # its labels re-score by estimation, and the report knows the depth the sample reached (the judged@k note's)
    labels = tmp_path / "sampled.jsonl"
    labels.write_text("".join(json.dumps({"question_id": p.question_id, "id": p.id, "grade": 0, "depth": 10,
                                          "inclusion": p.inclusion, "stratum": p.stratum, "drawn": p.drawn,
                                          "design": "budget"}) + "\n" for p in holes))
    found = relabel(runs, [str(labels)])
    assert found.estimation is not None and found.sample_depth == 10


@pytest.mark.slow
def test_pool_command_writes_texts_and_refuses_to_overwrite_a_run(two_runs, tmp_path):
    out = tmp_path / "pool.jsonl"
    before = sorted(p.stat().st_mtime_ns for p in two_runs.rglob("*") if p.is_file())
    assert pool_main([str(two_runs), "--depth", "3", "--out", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines and all(x["text"] for x in lines if x["role"] == "hole")
    assert sorted(p.stat().st_mtime_ns for p in two_runs.rglob("*") if p.is_file()) == before  # runs untouched
    with pytest.raises(SystemExit) as stop:
        pool_main([str(two_runs), "--out", str(two_runs / "0" / "results.parquet"), "--force"])
    assert stop.value.code == 2


@pytest.mark.slow
def test_rescore_without_added_labels_reproduces_every_stored_measure(two_runs):
    for run in load_runs([two_runs], skip=frozenset()):
        again, conflicts = rescore(run, {})
        assert conflicts == []
        for name in run.measure_names:
            np.testing.assert_array_equal(again.values(name), run.values(name), err_msg=name)
        assert again.table.column("first_relevant_rank").to_pylist() == run.table.column("first_relevant_rank").to_pylist()


@pytest.mark.slow
def test_added_labels_rescore_and_contradictions_are_listed_not_applied(two_runs, tmp_path):
    runs = load_runs([two_runs], skip=frozenset())
    run = runs[0]
    qid, retrieved = run.ids[0], run.strings("retrieved")[0]
    stored = stored_labels(run)[qid]
    known = next(iter(stored))
    new = next(u for u in retrieved if u not in stored)
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"question_id": qid, "id": new, "grade": 2, "judge": "person"}) + "\n"
                      + json.dumps({"question_id": qid, "id": known, "grade": 0, "judge": "person"}) + "\n")
    found = relabel(runs, [str(labels)])
    assert [(c.question_id, c.id, c.stored, c.added) for c in found.conflicts] == [(qid, known, stored[known], 0)]
    again = found.runs[0]
    assert stored_labels(again)[qid] == {**stored, new: 2}  # the contradiction not applied
    rank = retrieved.index(new) + 1
    first = run.table.column("first_relevant_rank")[0].as_py()
    assert again.table.column("first_relevant_rank")[0].as_py() == min(rank, first or rank)
    assert again.values("judged@10")[0] == pytest.approx(run.values("judged@10")[0] + 0.1)
    assert (run.run_dir / "results.parquet").stat().st_size > 0
    assert load_runs([run.run_dir], skip=frozenset())[0].values("rr")[0] == run.values("rr")[0]  # on disk: unchanged
    report = report_for([str(two_runs), "--labels", str(labels), "--agreement", "--n-resamples", "50"])
    assert report.relabelled[1].startswith("1 added labels contradict stored ones and were not applied")
    assert report.label_agreement is not None and -1 <= report.label_agreement.tau.tau <= 1
    data = report.to_dict()
    assert data["label_agreement"]["winner_changed"] in (True, False) and "labels" in data
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question_id": "q", "id": "d", "grade": -1}\n')
    with pytest.raises(RecevalError, match=r"bad.jsonl:1: .*grade an integer from 0 to 1000"):
        relabel(runs, [str(bad)])
    twice = tmp_path / "twice.jsonl"
    twice.write_text('{"question_id": "q", "id": "d", "grade": 1}\n{"question_id": "q", "id": "d", "grade": 2}\n')
    with pytest.raises(RecevalError, match=r"twice.jsonl:2: q d has grade 2 here and 1 on line 1"):
        relabel(runs, [str(twice)])
    with pytest.raises(RecevalError, match="--agreement compares label sets"):
        report_for([str(two_runs), "--agreement"])


# --------------------------------------------------------------------------- labels that do not match


def write_labels(path, *labels):
    path.write_text("".join(json.dumps({"question_id": q, "id": u, "grade": g}) + "\n" for q, u, g in labels))
    return str(path)


def a_hole(run):
    """A question with a stored relevant label and a retrieved unit it does not label."""
    stored = stored_labels(run)
    for qid, ranked in zip(run.ids, run.strings("retrieved")):
        new = [u for u in ranked or [] if u not in stored.get(qid, {})]
        if stored.get(qid) and new:
            return qid, new[0]
    raise AssertionError("no question with a hole")


def test_labels_for_an_unknown_question_are_named_and_not_applied(two_runs, tmp_path):
    runs = load_runs([two_runs], skip=frozenset())
    qid, unit = a_hole(runs[0])
    found = relabel(runs, [write_labels(tmp_path / "l.jsonl", (qid, unit, 2), ("no-such-q", unit, 3))])
    assert (found.account.given, found.account.applied, found.account.unknown_questions) == (2, 1, ["no-such-q"])
    assert found.cautions()[0] == f"re-scored with 1 of the 2 added labels from {tmp_path / 'l.jsonl'} (stored runs unchanged)"
    assert "1 question ids no run has, their labels not applied: no-such-q" in found.cautions()


def test_a_unit_no_run_knows_is_named_and_does_not_lower_recall(two_runs, tmp_path):
    runs = load_runs([two_runs], skip=frozenset())
    qid, unit = a_hole(runs[0])
    alone = relabel(runs, [write_labels(tmp_path / "a.jsonl", (qid, unit, 2))]).runs
    typo = relabel(runs, [write_labels(tmp_path / "b.jsonl", (qid, unit, 2), (qid, "nowhere#typo", 3))])
    assert typo.account.unknown_units == [f"{qid} nowhere#typo"] and typo.account.applied == 1
    assert any(line.startswith("1 labels name units no run retrieved or labels") and "nowhere#typo" in line
               for line in typo.cautions())
    for before, after in zip(alone, typo.runs):
        for name in ("recall@10", "ndcg@10"):
            np.testing.assert_array_equal(after.values(name), before.values(name), err_msg=name)
    assert any("(--unknown-units apply applies them" in line for line in typo.cautions())
    applied = relabel(runs, [str(tmp_path / "b.jsonl")], unknown_units="apply").runs  # asked for: it counts
    flag = report_for([str(two_runs), "--labels", str(tmp_path / "b.jsonl"), "--unknown-units", "apply"])
    assert flag.relabelled[0].startswith("re-scored with 2 of the 2 added labels")
    row = list(runs[0].ids).index(qid)
    assert applied[0].values("recall@10")[row] < alone[0].values("recall@10")[row]


def test_relevant_labels_on_an_unanswerable_question_are_not_applied(two_runs, tmp_path):
    runs = load_runs([two_runs], skip=frozenset())
    qid, unit = a_hole(runs[0])
    kinds = dict(zip(runs[0].ids, runs[0].strings("kind")))
    none = next(q for q, k in kinds.items() if k == "unanswerable")
    found = relabel(runs, [write_labels(tmp_path / "l.jsonl", (qid, unit, 2), (none, unit, 2))])
    assert found.account.unanswerable == [none] and found.account.applied == 1
    assert f"1 unanswerable questions labelled relevant, not applied (the dataset says they have no answer): {none}" \
        in found.cautions()
    assert stored_labels(found.runs[0]).get(none, {}) == {}


def test_labels_matching_nothing_exit_2_and_nothing_says_unchanged(two_runs, tmp_path, capsys):
    from receval.cli.report import main

    runs = load_runs([two_runs], skip=frozenset())
    qid, unit = a_hole(runs[0])
    nothing = write_labels(tmp_path / "n.jsonl", ("no-such-q", unit, 2), (qid, "nowhere#typo", 1))
    with pytest.raises(RecevalError, match=r"--labels: none of the 2 labels in .*n.jsonl applies to these runs: "
                                           r"1 question ids no run has.*no-such-q.*nowhere#typo"):
        relabel(runs, [nothing])
    with pytest.raises(SystemExit) as exited:
        main([str(two_runs), "--labels", nothing, "--agreement", "--n-resamples", "50"])
    out = capsys.readouterr()
    assert exited.value.code == 2 and "none of the 2 labels" in out.err
    assert "unchanged" not in out.out + out.err and "Kendall" not in out.out


def test_agreement_over_labels_that_change_nothing_says_so(two_runs, tmp_path):
    runs = load_runs([two_runs], skip=frozenset())
    stored = stored_labels(runs[0])
    # a grade-0 label on a unit beyond every run's top 10 changes no ranking measure
    qid, ranked = next((q, r) for q, r in zip(runs[0].ids, runs[0].strings("retrieved")) if stored.get(q))
    deep = next((u for u in ranked[10:] if u not in stored[qid]), None) if len(ranked) > 10 else None
    unit = deep or a_hole(runs[0])[1]
    labels = write_labels(tmp_path / "z.jsonl", (qid, unit, 0))
    report = report_for([str(two_runs), "--labels", labels, "--agreement", "--n-resamples", "50", "--metric", "mrr"])
    text = "\n".join(report.label_agreement.lines([r.label for r in report.runs]))
    assert "the added labels changed no run's MRR" in text and "nothing was compared" in text
    assert "unchanged" not in text and "Kendall" not in text
    assert report.to_dict()["label_agreement"]["kendall_tau"] is None
    # the table and the agreement block count the same questions
    assert report.label_agreement.tau.n_questions + report.label_agreement.only_added == report.questions["n_scored"]


# --------------------------------------------------------------------------- the loop on Cranfield


def one_label_collection(root):
    """Cranfield with one relevant label per query kept (its highest grade, first in file order)."""
    (root / "qrels").mkdir(parents=True)
    for name in ("corpus.jsonl", "queries.jsonl"):
        (root / name).symlink_to(CRANFIELD / name)
    best: dict[str, tuple[str, int]] = {}
    for line in (CRANFIELD / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, doc, grade = line.split("\t")
        if int(grade) >= 1 and (qid not in best or int(grade) > best[qid][1]):
            best[qid] = (doc, int(grade))
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, (d, g) in best.items()))
    return root


@pytest.mark.slow  # twelve runs over a whole collection
@pytest.mark.skipif(not CRANFIELD.is_dir(), reason=f"shared test collection absent: {CRANFIELD}")
def test_cranfield_pool_judged_by_full_qrels_restores_the_ranking(tmp_path, make_config):
    from receval.run.pipeline import run as run_one

    collection = one_label_collection(tmp_path / "cranfield1")
    sweep = tmp_path / "sweep"
    for job, (k1, b) in enumerate((k1, b) for k1 in (0.5, 0.9, 1.2, 2.0) for b in (0.3, 0.6, 0.9)):
        run_one(make_config("dataset=beir", f"dataset.path={collection}", "chunking.max_words=null",
                            f"retriever.k1={k1}", f"retriever.b={b}"), sweep / str(job))
    runs = load_runs([sweep], skip=frozenset())
    qrels = CRANFIELD / "qrels" / "test.tsv"
    holes = [p for p in pool(runs, depth=10).pairs if p.role == "hole"]
    full = {}
    for line in qrels.read_text().splitlines()[1:]:
        qid, doc, grade = line.split("\t")
        full.setdefault(qid, {})[doc] = int(grade)
    labels = tmp_path / "labels.jsonl"  # the judge=qrels job with judge.missing=zero, in short
    labels.write_text("".join(json.dumps({"question_id": p.question_id, "id": p.id,
                                          "grade": full.get(p.question_id, {}).get(p.id, 0)}) + "\n" for p in holes))
    boot = BootstrapConfig(n_resamples=200)
    complete = relabel(runs, [str(qrels)], unknown_units="apply").runs  # the collection's units no run found count
    judged = relabel(runs, [str(labels)]).runs
    # re-scoring with the full qrels is what a run made with them measures
    reference = run_one(make_config("dataset=beir", f"dataset.path={CRANFIELD}", "dataset.split=test",
                                    "chunking.max_words=null", "retriever.k1=0.5", "retriever.b=0.3"),
                        tmp_path / "full")
    assert complete[0].values("ndcg@10").mean() == pytest.approx(reference.means["ndcg@10"], abs=1e-12)
    for metric in ("ndcg@10", "ap"):
        after = label_agreement(complete, judged, metric, boot)
        before = label_agreement(complete, runs, metric, boot)
        print(f"{metric}: one label tau {before.tau.tau:.3f}, pool judged tau {after.tau.tau:.3f}")
        assert after.tau.tau >= 0.95
        assert before.tau.tau < after.tau.tau


def test_report_human_labels_give_a_prediction_powered_interval(two_runs, tmp_path):
    from receval.stats.ppi import ppi_mean

    runs = load_runs([two_runs], skip=frozenset())
    judge, human = tmp_path / "judge.jsonl", tmp_path / "human.jsonl"
    lines_j, lines_h = [], []
    for p in pool(runs, depth=10).pairs:  # the judge calls a hole relevant when it is ranked first by some run
        if p.role == "hole":
            lines_j.append({"question_id": p.question_id, "id": p.id, "grade": int(p.best_rank == 1)})
            if int(p.question_id.lstrip("q") or 0) % 3 == 0 or p.question_id.endswith("0"):
                lines_h.append({"question_id": p.question_id, "id": p.id, "grade": int(p.best_rank <= 2)})
    judge.write_text("".join(json.dumps(x) + "\n" for x in lines_j))
    human.write_text("".join(json.dumps(x) + "\n" for x in lines_h))
    report = report_for([str(two_runs), "--labels", str(judge), "--human", str(human), "--metric", "ndcg@10"])
    assert len(report.ppi) == 2
    asked = {x["question_id"] for x in lines_h}
    by_judge, by_human = relabel(runs, [str(judge)]).runs[0], relabel(runs, [str(human)]).runs[0]
    mine = np.asarray([q in asked for q in by_judge.ids]) & np.isfinite(by_judge.values("ndcg@10"))
    rest = ~np.asarray([q in asked for q in by_judge.ids]) & np.isfinite(by_judge.values("ndcg@10"))
    expected = ppi_mean(by_human.values("ndcg@10")[mine], by_judge.values("ndcg@10")[mine],
                        by_judge.values("ndcg@10")[rest])
    assert report.ppi[0] == expected and report.to_dict()["ppi"][0]["ci"] == [expected.lo, expected.hi]
    with pytest.raises(RecevalError, match="--human corrects a judge's labels"):
        report_for([str(two_runs), "--human", str(human)])
