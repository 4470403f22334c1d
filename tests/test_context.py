"""Comparing at equal context, end to end on stored runs: token-budget measures derived
from the per-rank columns (equal to the stored measures at a fixed k, never past the
budget), the chunk-size sweep at 300 tokens, excluded units, nuggets (a hand-built file,
and support labels), and the door's checks of the per-rank columns."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import SHARED, run_of, sweep_in_process
from forge import forged

from receval import analysis
from receval.analysis.budget import Derivation, _rank_table
from receval.analysis.derived import with_derived
from receval.analysis.holes import relabel
from receval.analysis.warehouse import sql
from receval.cli.report import report_for
from receval.core.errors import RecevalError, RunError
from receval.core.vocabulary import MeasureName
from receval.measures.nuggets import content_words, words
from receval.results.door import open_run

KS = (1, 3, 5, 10)


@pytest.fixture(scope="module")
def overlapping(tmp_path_factory):
    """bm25 over 40-word windows overlapping by 10 words, 30 deep: chunks repeat text."""
    return run_of(tmp_path_factory, "retriever=bm25", "chunking.overlap=10", "depth=30")


@pytest.fixture(scope="module")
def evidence_labelled(tmp_path_factory):
    """Questions labelled by evidence spans (judged at chunk ranks), 20-word windows overlapping by 5."""
    from conftest import FIXTURES

    return run_of(tmp_path_factory, "dataset=folder", f"dataset.path={FIXTURES / 'essays'}", "chunking.max_words=20",
                  "chunking.overlap=5", "depth=20")


@pytest.mark.slow
def test_evidence_runs_derive_the_stored_measures_too(evidence_labelled):
    run = open_run(evidence_labelled)
    derivation = Derivation(_rank_table(run, "metrics", "hit@3"))
    for family in ("hit", "recall", "precision", "ndcg", "ap", "token_recall", "token_iou", "redundancy", "alpha_ndcg"):
        for k in KS:
            assert np.allclose(derivation.values(MeasureName(family, k)), run.values(f"{family}@{k}"), equal_nan=True)
    assert 0 < np.nanmax(run.values("alpha_ndcg@10")) <= 1


@pytest.mark.slow
def test_measures_derived_from_the_per_rank_columns_equal_the_stored_ones(overlapping):
    run = open_run(overlapping)
    derivation = Derivation(_rank_table(run, "metrics", "hit@3"))
    for family in ("hit", "recall", "precision", "ndcg", "ap", "token_recall", "token_precision", "token_iou",
                   "context_tokens", "redundancy", "alpha_ndcg"):
        for k in KS:
            stored = run.values(f"{family}@{k}")
            assert np.allclose(derivation.values(MeasureName(family, k)), stored, equal_nan=True), (family, k)
    assert np.nanmean(run.values("redundancy@10")) > 0  # overlapping windows repeat words
    # a budget that holds every chunk is the measure at the ranking's end
    (derived,) = with_derived([run], ["recall@100000tok", "context_tokens@100000tok"])
    depth_recall = Derivation(_rank_table(run, "m", "x")).values(MeasureName("recall", 30))
    assert np.allclose(derived.values("recall@100000tok"), depth_recall, equal_nan=True)


@pytest.mark.slow
def test_a_budget_is_never_passed_and_hit_recall_rr_never_fall_as_it_grows(overlapping):
    run = open_run(overlapping)
    budgets = (20, 40, 60, 100, 200, 300, 600)
    names = [f"{f}@{b}tok" for b in budgets for f in ("context_tokens", "hit", "recall", "rr", "token_recall")]
    (derived,) = with_derived([run], names)
    for family in ("context_tokens", "hit", "recall", "rr", "token_recall"):
        series = np.column_stack([derived.values(f"{family}@{b}tok") for b in budgets])
        scored = ~np.isnan(series).any(axis=1)
        assert (np.diff(series[scored], axis=1) >= -1e-12).all(), family
    for b in budgets:
        assert np.nanmax(derived.values(f"context_tokens@{b}tok")) <= b
    # 40-word windows: a 39-token budget holds no chunk whole, so nothing is sent or found
    (small,) = with_derived([run], ["hit@39tok", "context_tokens@39tok"])
    chunk_tokens = run.values("context_tokens@1")
    fits = chunk_tokens <= 39
    assert np.nansum(small.values("context_tokens@39tok")[~fits]) == 0


@pytest.fixture(scope="module")
def chunk_sizes(tmp_path_factory):
    """The tutorial's sweep: bm25 over 20-, 40- and 120-word chunks, 30 chunks deep."""
    return sweep_in_process(tmp_path_factory.mktemp("sizes") / "s", ["retriever=bm25"], ["depth=30"],
                            [f"chunking.max_words={w}" for w in (20, 40, 120)])


@pytest.mark.slow
def test_the_chunk_size_sweep_at_300_tokens_sends_150_to_300_tokens_a_question(chunk_sizes):
    report = report_for([str(chunk_sizes), "--metrics", "hit@3,hit@300tok,recall@300tok,context_tokens@300tok",
                         "--format", "json"])
    data = report.to_dict()
    context = [run["metrics"]["context_tokens@300tok"]["mean"] for run in data["runs"]]
    assert all(150 <= c <= 300 for c in context), context
    # at k = 3 the 120-word chunks send well over twice the 20-word ones' text; at 300 tokens, alike
    at_3 = [np.nanmean(open_run(chunk_sizes / str(i)).values("context_tokens@3")) for i in range(3)]
    assert at_3[2] > 2.5 * at_3[0]
    # the tutorial's claim is the paired procedure's, not an order of means: at equal context the
    # 20-word chunks gain on more questions than they lose, and 47 questions do not show it
    paired = report_for([str(chunk_sizes), "--metric", "recall@300tok", "--baseline", "max_words=120",
                         "--format", "json"]).to_dict()
    small = next(pair for pair in paired["pairs"] if pair["run_dir"].endswith("/0"))
    assert small["diff"] > 0 and small["up"] > small["down"]
    assert small["verdict"] == "not shown" and small["ci"][0] <= 0 <= small["ci"][1] and small["p"] > 0.05
    assert paired["undecided"][0]["measure"] == "recall@300tok"


@pytest.mark.slow
def test_select_and_compare_and_sql_take_a_budget_measure(chunk_sizes, capsys):
    from receval.cli import compare, select

    assert select.main([str(chunk_sizes), "--metric", "recall@300tok", "--format", "json"]) == 0
    chosen = json.loads(capsys.readouterr().out)
    assert chosen["metric"] == "recall@300tok"
    assert compare.main([str(chunk_sizes / "0"), str(chunk_sizes / "2"), "--metric", "hit@300tok", "--format",
                         "json"]) in (0, 1)
    assert "hit@300tok" in capsys.readouterr().out
    table = sql([str(chunk_sizes)], 'SELECT label, "context_tokens@300tok" AS c FROM runs')
    assert all(150 <= c <= 300 for c in table.column("c").to_pylist())
    rows = analysis.summary(analysis.load(str(chunk_sizes)), metrics=["recall@300tok"])
    assert [r["recall@300tok"] for r in rows] == pytest.approx(
        [r["metrics"]["recall@300tok"]["mean"] for r in report_for(
            [str(chunk_sizes), "--metrics", "recall@300tok", "--format", "json"]).to_dict()["runs"]])


@pytest.mark.slow
def test_a_run_without_per_rank_columns_says_to_re_run_it(overlapping, tmp_path):
    copy = tmp_path / "old"
    shutil.copytree(overlapping, copy)
    table = pq.read_table(copy / "results.parquet")
    keep = [n for n in table.column_names if n not in ("chunk_tokens", "retrieved_at")]
    pq.write_table(table.select(keep).replace_schema_metadata(table.schema.metadata), copy / "results.parquet")
    run = open_run(forged(copy))
    with pytest.raises(RecevalError, match=r"hit@300tok is derived from each rank's chunk tokens, which .* does not "
                                           r"store .*: re-run it"):
        with_derived([run], ["hit@300tok"], option="--metrics")


# --------------------------------------------------------------------------- the door


@pytest.mark.slow
@pytest.mark.parametrize("column, value, problem", [
    ("chunk_tokens", lambda row: [-1, *row[1:]], "a value out of range"),
    ("retrieved_at", lambda row: [row[0], row[0], *row[2:]], "chunk ranks that do not rise"),
    ("retrieved_gain", lambda row: row[:-1], "a list whose length is not that of 'retrieved'"),
    ("chunk_new_tokens", lambda row: [row[0] + 1000, *row[1:]], "a count above the chunk's chunk_tokens"),
])
def test_the_door_refuses_per_rank_columns_no_run_writes(overlapping, tmp_path, column, value, problem):
    copy = tmp_path / "run"
    shutil.copytree(overlapping, copy)
    table = pq.read_table(copy / "results.parquet")
    values = table.column(column).to_pylist()
    values[0] = value(values[0])
    table = table.set_column(table.column_names.index(column), table.schema.field(column),
                             pa.array(values, table.schema.field(column).type))
    pq.write_table(table, copy / "results.parquet")
    with pytest.raises(RunError, match=rf"column {column!r} holds {problem}.* for question 'q01'"):
        open_run(forged(copy), skip=frozenset())


# --------------------------------------------------------------------------- excluded units


def top_nonrelevant(run) -> dict[str, str]:
    """Each scored question's first retrieved unit that is not labelled relevant."""
    table = run.table.select(["question_id", "retrieved", "relevant", "rr"]).to_pydict()
    return {qid: next(u for u in retrieved if u not in relevant)
            for qid, retrieved, relevant, rr in zip(*table.values()) if rr is not None
            and any(u not in relevant for u in retrieved)}


def excluded_run(tmp_path_factory, base_dir, *overrides):
    base = open_run(base_dir, skip=frozenset())
    top = top_nonrelevant(base)
    tsv = tmp_path_factory.mktemp("excluded") / "excluded.tsv"
    tsv.write_text("query-id\tcorpus-id\n" + "".join(f"{q}\t{u}\n" for q, u in top.items()))
    return base, top, open_run(run_of(tmp_path_factory, *overrides, f"dataset.excluded={tsv}"), skip=frozenset())


def check_excluded(base, top, after) -> tuple[int, int]:
    """The excluded unit is gone from each ranking; rr never falls; returns (dropped, raised)."""
    retrieved = dict(zip(after.ids, after.table.column("retrieved").to_pylist()))
    assert all(top[q] not in retrieved[q] for q in top)
    before_rr = dict(zip(base.ids, base.values("rr")))
    after_rr = dict(zip(after.ids, after.values("rr")))
    assert all(after_rr[q] >= before_rr[q] for q in top)
    dropped = dict(zip(after.ids, after.values("excluded")))
    assert all(dropped[q] >= 1 for q in top)
    assert after.info["excluded"]["units"] == len(top)
    assert after.info["excluded"]["dropped"] == int(sum(dropped.values()))
    return int(sum(dropped.values())), sum(after_rr[q] > before_rr[q] for q in top)


@pytest.mark.slow
def test_excluding_each_questions_top_nonrelevant_unit_raises_rr_and_lowers_none(tmp_path_factory):
    base_dir = run_of(tmp_path_factory, "retriever=bm25", "chunking.max_words=null")
    base, top, after = excluded_run(tmp_path_factory, base_dir, "retriever=bm25", "chunking.max_words=null")
    dropped, raised = check_excluded(base, top, after)
    assert dropped == len(top) and raised > 0  # one chunk a section here
    depth = int(after.flat["depth"])
    assert all(len(r) <= depth for r in after.table.column("retrieved").to_pylist())
    assert after.info["config_hash"] != base.info["config_hash"]


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "datasets" / "cranfield").is_dir(), reason="needs the shared cranfield collection")
def test_cranfield_excluding_each_questions_top_nonrelevant_document(tmp_path_factory):
    path = SHARED / "datasets" / "cranfield"
    overrides = ("dataset=beir", f"dataset.path={path}", "chunking.max_words=null", "retriever=bm25")
    base, top, after = excluded_run(tmp_path_factory, run_of(tmp_path_factory, *overrides), *overrides)
    dropped, raised = check_excluded(base, top, after)
    assert dropped == len(top) > 100 and raised > 0


@pytest.mark.slow
def test_exclude_self_drops_each_questions_own_document(tmp_path_factory):
    """ArguAna-style: each query is a document of the corpus, and retrieving it is trivial."""
    folder = tmp_path_factory.mktemp("arguana")
    texts = {"a1": "school uniforms stop bullying and save parents money", "a2": "uniforms limit how pupils express "
             "themselves at school", "a3": "homework helps pupils practise at home", "a4": "homework at home takes "
             "time from play"}
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "title": "", "text": t}) + "\n"
                                                 for i, t in texts.items()))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": i, "text": texts[i]}) + "\n" for i in ("a1", "a3")))
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\na1\ta2\t1\na3\ta4\t1\n")
    overrides = ("dataset=beir", f"dataset.path={folder}", "chunking.max_words=null", "retriever=bm25")
    plain = open_run(run_of(tmp_path_factory, *overrides), skip=frozenset())
    assert [r[0] for r in plain.table.column("retrieved").to_pylist()] == ["a1", "a3"]
    mine = open_run(run_of(tmp_path_factory, *overrides, "dataset.exclude_self=true"), skip=frozenset())
    assert [r[0] for r in mine.table.column("retrieved").to_pylist()] == ["a2", "a4"]
    assert mine.values("rr").tolist() == [1.0, 1.0] and mine.values("excluded").tolist() == [1.0, 1.0]


# --------------------------------------------------------------------------- nuggets

NUGGETS = {  # hand-built for the library's whole-section chunks
    "q01": [{"text": "DVDs are lent for 1 week", "importance": "vital"},
            {"text": "Express books cannot be reserved", "importance": "okay"},
            {"text": "zebras queue quietly", "importance": "vital"}],
    "q03": [{"id": "times", "text": "renewed up to 5 times", "importance": "vital"}],
}


@pytest.fixture(scope="module")
def with_nuggets(tmp_path_factory):
    path = tmp_path_factory.mktemp("nuggets") / "nuggets.jsonl"
    path.write_text("".join(json.dumps({"qid": q, "nuggets": n}) + "\n" for q, n in NUGGETS.items()))
    run_dir = run_of(tmp_path_factory, "retriever=bm25", "chunking.max_words=null", f"dataset.nuggets={path}")
    return open_run(run_dir, skip=frozenset()), path


def expected_support(run, question_id: str, texts: dict[str, str]) -> list[int]:
    """Each nugget's support rank by the stated rule, the slow way: the union of the
    words of the sections at ranks 1..r, against ceil(0.75 n) of the nugget's content words."""
    row = list(run.ids).index(question_id)
    ranked = run.table.column("retrieved").to_pylist()[row]
    out = []
    for nugget in NUGGETS[question_id]:
        wanted = set(content_words(nugget["text"]))
        need = math.ceil(0.75 * len(wanted))
        seen: set[str] = set()
        rank = 0
        for r, unit in enumerate(ranked, 1):
            seen |= set(words(texts[unit]))
            if len(wanted & seen) >= need:
                rank = r
                break
        out.append(rank)
    return out


def library_sections():
    from omegaconf import OmegaConf

    from receval.datasets import load_sections

    return load_sections(OmegaConf.create({"format": "folder", "path": None, "questions": None}))


@pytest.mark.slow
def test_nugget_recall_agrees_with_a_hand_built_nuggets_file(with_nuggets):
    run, _ = with_nuggets
    texts = {s.id: s.text for s in library_sections()}
    at = dict(zip(run.ids, run.table.column("nugget_at").to_pylist()))
    for qid in NUGGETS:
        assert at[qid] == expected_support(run, qid, texts), qid
    # by hand: q01's first nugget is in its top section (Loan periods), the zebras nowhere
    assert at["q01"][0] == 1 and at["q01"][2] == 0
    row = list(run.ids).index("q01")
    supported = lambda k: sum(0 < a <= k for a in at["q01"])  # noqa: E731
    for k in KS:
        assert run.values(f"nugget_recall@{k}")[row] == pytest.approx(supported(k) / 3)
        assert run.values(f"vital_nugget_recall@{k}")[row] == pytest.approx((0 < at["q01"][0] <= k) / 2)
    others = [i for i, q in enumerate(run.ids) if q not in NUGGETS]
    assert np.isnan(run.values("nugget_recall@3")[others]).all()  # no nuggets, no measure
    assert run.info["nuggets"] == {"questions": 2, "nuggets": 4, "vital": 3}
    (derived,) = with_derived([run], ["nugget_recall@100000tok"])
    assert derived.values("nugget_recall@100000tok")[row] == pytest.approx(sum(a > 0 for a in at["q01"]) / 3)


@pytest.mark.slow
def test_support_labels_replace_the_word_rule_for_the_nuggets_they_name(with_nuggets, tmp_path):
    run, _ = with_nuggets
    row = list(run.ids).index("q01")
    ranked = run.table.column("retrieved").to_pylist()[row]
    labels = tmp_path / "support.jsonl"
    labels.write_text("\n".join(json.dumps(line) for line in [
        {"question_id": "q01", "id": ranked[1], "nugget": "n3", "support": "support", "judge": "hand"},  # the zebras
        {"question_id": "q01", "id": ranked[0], "nugget": "n1", "support": "not_support", "judge": "hand"},
        {"question_id": "q01", "id": ranked[2], "nugget": "n1", "support": "partial_support", "judge": "hand"},
    ]) + "\n")
    relabelled = relabel([run], [str(labels)])
    (after,) = relabelled.runs
    n2 = run.table.column("nugget_at").to_pylist()[row][1]
    # n1 (vital): no unit labelled "support" (partial does not count) -> never; n2: the word rule; n3: rank 2
    assert after.table.column("nugget_at").to_pylist()[row] == [0, n2, 2]
    assert after.values("nugget_recall@3")[row] == pytest.approx(((0 < n2 <= 3) + 1) / 3)
    assert after.values("vital_nugget_recall@3")[row] == pytest.approx(1 / 2)
    assert relabelled.account.support == 3
    assert any("3 nugget support labels applied" in line for line in relabelled.cautions())


@pytest.mark.slow
def test_a_mean_over_fewer_questions_than_the_header_says_how_many(with_nuggets):
    run, _ = with_nuggets
    data = report_for([str(run.run_dir), "--metrics", "hit@3,nugget_recall@3", "--format", "json"]).to_dict()
    (summary,) = data["runs"]
    assert summary["metrics"]["nugget_recall@3"]["n"] == len(NUGGETS) and "n" not in summary["metrics"]["hit@3"]
    scored = summary["n_questions"]
    assert f"nugget_recall@3: the mean over the {len(NUGGETS)} of the {scored} questions scored" in " ".join(summary["notes"])


@pytest.mark.slow
def test_support_labels_that_apply_nowhere_say_why(with_nuggets, six_runs, tmp_path):
    run, _ = with_nuggets
    ranked = run.table.column("retrieved").to_pylist()[list(run.ids).index("q01")]
    labels = tmp_path / "support.jsonl"
    labels.write_text(json.dumps({"question_id": "q01", "id": ranked[0], "nugget": "n9", "support": "support"}) + "\n")
    with pytest.raises(RecevalError, match=r"nothing in .* its 1 nugget support line name nuggets these runs do not "
                                           r"store \(q01 n9\)"):
        relabel([run], [str(labels)])
    with pytest.raises(RecevalError, match=r"these runs store none \(run them with dataset.nuggets=FILE\)"):
        relabel([open_run(six_runs / "0", skip=frozenset())], [str(labels)])


@pytest.fixture
def support_server():
    """Says "support" when the passage holds every word of the fact, else "not_support"."""
    from chatserver import ChatServer, chat_reply

    server = ChatServer()

    def respond(body, attempt):
        user = body["messages"][-1]["content"]
        fact = user.split("Fact: ", 1)[1].split("\n\nPassage: ", 1)[0]
        passage = set(words(user.split("Passage: ", 1)[1]))
        label = "support" if set(words(fact)) <= passage else "not_support"
        return chat_reply(json.dumps({"support": label}))

    server.respond = respond
    server.thread.start()
    yield server
    server.httpd.shutdown()


@pytest.mark.slow
def test_pool_nuggets_judge_support_and_report_labels_end_to_end(with_nuggets, support_server, tmp_path, capsys):
    from hydra import compose, initialize_config_dir

    from receval.run import config as config_schema
    from receval.cli import pool as pool_command
    from receval.judge.job import run_judge

    run, _ = with_nuggets
    assert pool_command.main([str(run.run_dir), "--nuggets", "--depth", "2", "--out", str(tmp_path / "p.jsonl")]) == 0
    lines = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert {line["role"] for line in lines} == {"support"}
    assert len(lines) == 2 * 3 + 2 * 1  # q01: 2 units x 3 nuggets; q03: 2 units x 1 nugget
    assert lines[0]["nugget_text"] == NUGGETS["q01"][0]["text"] and lines[0]["text"]
    config_schema.register_judge()
    overrides = [f"pool={tmp_path / 'p.jsonl'}", "judge=llm", f"judge.base_url={support_server.url}", "judge.model=m",
                 f"judge.cache_dir={tmp_path / 'cache'}", f"out={tmp_path / 'support.jsonl'}"]
    with initialize_config_dir(config_dir=config_schema.config_dir(), version_base="1.3"):
        summary = run_judge(compose("judge", overrides=overrides))
    assert summary["support"]["asked"] == len(lines) == summary["support"]["labelled"]
    labels = [json.loads(line) for line in (tmp_path / "support.jsonl").read_text().splitlines()]
    assert {line["support"] for line in labels} <= {"support", "not_support"}
    assert all(line["judge"] == "llm:m" and len(line["prompt_sha256"]) == 64 for line in labels)
    asked = len(support_server.requests)
    with initialize_config_dir(config_dir=config_schema.config_dir(), version_base="1.3"):
        again = run_judge(compose("judge", overrides=[*overrides[:-1], f"out={tmp_path / 'again.jsonl'}"]))
    assert len(support_server.requests) == asked and again["usage"]["requests"] == 0  # the cache answered
    (after,) = relabel([run], [str(tmp_path / "support.jsonl")]).runs
    retrieved = dict(zip(run.ids, run.table.column("retrieved").to_pylist()))
    first = dict(zip(run.ids, run.table.column("retrieved_at").to_pylist()))
    by_pair = {(x["question_id"], x["nugget"], x["id"]): x["support"] == "support" for x in labels}
    for qid, nuggets in dict(zip(after.ids, after.table.column("nuggets").to_pylist())).items():
        if not nuggets:
            continue
        at = after.table.column("nugget_at").to_pylist()[list(after.ids).index(qid)]
        for nugget, rank in zip(nuggets, at):
            hits = [first[qid][i] for i, unit in enumerate(retrieved[qid][:2]) if by_pair.get((qid, nugget, unit))]
            assert rank == (hits[0] if hits else 0), (qid, nugget)


# --------------------------------------------------------------------------- an LLM's tokens


@pytest.mark.slow
def test_a_budget_counted_by_a_tokenizer_json_never_passes_its_tokens(overlapping, tmp_path_factory):
    from test_languages import SENTENCES, subword_file
    from tokenizers import Tokenizer as Subword

    from receval.datasets import LIBRARY

    pages = [p.read_text() for p in sorted((LIBRARY / "pages").glob("*.md"))]
    path = subword_file(tmp_path_factory.mktemp("tok"), SENTENCES + pages)
    counted = open_run(run_of(tmp_path_factory, "retriever=bm25", "chunking.max_words=null",
                              f"metrics.tokenizer={path}"), skip=frozenset())
    assert counted.info["budget"]["unit"] == "tokenizer" and len(counted.info["budget"]["sha256"]) == 64
    assert open_run(overlapping).info["budget"] == {"unit": "words"}
    # whole sections: the chunk at rank r is the unit retrieved at r, counted on its text
    model = Subword.from_file(str(path))
    texts = {s.id: s.text for s in library_sections()}
    tokens = counted.table.column("chunk_llm_tokens").to_pylist()
    for row, ranked in enumerate(counted.table.column("retrieved").to_pylist()[:5]):
        assert tokens[row] == [len(model.encode(texts[u], add_special_tokens=False).ids) for u in ranked]
    assert tokens[0] != counted.table.column("chunk_tokens").to_pylist()[0]  # not words
    (derived,) = with_derived([counted], ["context_tokens@200tok", "hit@200tok"])
    assert np.nanmax(derived.values("context_tokens@200tok")) <= 200
    with pytest.raises(RecevalError, match=r"hit@200tok: the runs count tokens differently"):
        with_derived([counted, open_run(overlapping)], ["hit@200tok"], option="--metrics")


@pytest.mark.slow
def test_the_budget_tokenizers_bytes_are_part_of_the_runs_identity(make_config, tmp_path):
    from test_languages import SENTENCES, subword_file

    from receval.core.errors import ConfigError
    from receval.run.pipeline import config_hash_of
    from receval.run.spec import run_spec

    path = subword_file(tmp_path, SENTENCES)
    before = config_hash_of(make_config(f"metrics.tokenizer={path}"))
    assert before != config_hash_of(make_config())
    assert run_spec(make_config(f"metrics.tokenizer={path}")).config_hash == before
    (tmp_path / "other").mkdir()
    path.write_bytes(subword_file(tmp_path / "other", SENTENCES[:2]).read_bytes())  # the same path, another tokenizer
    assert config_hash_of(make_config(f"metrics.tokenizer={path}")) != before
    with pytest.raises(ConfigError, match=r"metrics.tokenizer=.*nope.json: no such file"):
        run_spec(make_config(f"metrics.tokenizer={tmp_path / 'nope.json'}"))


@pytest.mark.slow
def test_the_sweepers_objective_takes_a_budget_measure(overlapping, make_config):
    from receval.cli.objective import value

    (derived,) = with_derived([open_run(overlapping)], ["recall@300tok"])
    cfg = make_config("objective.metric=recall@300tok", "objective.split=null")
    assert value(cfg, overlapping) == pytest.approx(np.nanmean(derived.values("recall@300tok")))


# --------------------------------------------------------------------------- reading the files


def site_dataset(site, **keys):
    from omegaconf import OmegaConf

    from receval.datasets import load_dataset

    return load_dataset(OmegaConf.create({"name": "site", "format": "folder", "path": str(site), "questions": None,
                                          "excluded": None, "exclude_self": False, "nuggets": None, **keys}))


def test_exclusions_come_from_a_tsv_and_a_questions_file_and_remove_labels(site, tmp_path):
    plain = site_dataset(site)
    lines = [json.loads(line) for line in (site / "questions.jsonl").read_text().splitlines() if line.strip()]
    lines[0]["excluded"] = ["bikes#returning-a-bike"]
    (site / "questions.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    tsv = tmp_path / "x.tsv"
    tsv.write_text("query-id\tcorpus-id\nb2\tbikes#prices-2\nb2\tbikes#returning-a-bike\n")
    data = site_dataset(site, excluded=str(tsv))
    by_id = {q.id: q for q in data.questions}
    assert by_id["b1"].excluded == ("bikes#returning-a-bike",)
    assert by_id["b2"].excluded == ("bikes#prices-2", "bikes#returning-a-bike")
    assert by_id["b2"].relevant == {"bikes#prices": 1}  # the excluded unit's label removed
    assert data.notes["excluded_labels"] == 1 and data.fingerprint != plain.fingerprint


@pytest.mark.parametrize("text, message", [
    ("query\tdoc\nb1\tbikes#prices\n", r"x.tsv:1: the header is .*; an exclusion file starts with query-id<TAB>corpus-id"),
    ("query-id\tcorpus-id\nb1\n", r"x.tsv:2: not a query-id<TAB>corpus-id pair"),
    ("query-id\tcorpus-id\nb1\tbikes#nowhere\n", r"x.tsv:2: unit 'bikes#nowhere' is not in the collection"),
    ("query-id\tcorpus-id\nzz\tbikes#prices\n", r"x.tsv:2: question 'zz' is not among the dataset's questions"),
    ("query-id\tcorpus-id\nb1\tbikes#prices\n", r"question 'b1': every relevant unit is excluded"),
])
def test_a_bad_exclusion_file_is_named_with_its_line(site, tmp_path, text, message):
    from receval.core.errors import DatasetError

    (tmp_path / "x.tsv").write_text(text)
    with pytest.raises(DatasetError, match=message):
        site_dataset(site, excluded=str(tmp_path / "x.tsv"))


@pytest.mark.parametrize("lines, message", [
    ([{"qid": "b1", "nuggets": [{"text": "a fact", "importance": "high"}]}], r"n.jsonl:1: nugget 1 has importance 'high'"),
    ([{"qid": "b1", "nuggets": [{"importance": "vital"}]}], r"n.jsonl:1: nugget 1 must be an object with a non-empty 'text'"),
    ([{"qid": "zz", "nuggets": []}], r"n.jsonl:1: question 'zz' is not among the dataset's questions"),
    ([{"qid": "b1", "nuggets": []}, {"question_id": "b1", "nuggets": []}], r"n.jsonl:2: question 'b1' is given nuggets again"),
    ([{"nuggets": []}], r"n.jsonl:1: no question id"),
])
def test_a_bad_nuggets_file_is_named_with_its_line(site, tmp_path, lines, message):
    from receval.core.errors import DatasetError

    (tmp_path / "n.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(DatasetError, match=message):
        site_dataset(site, nuggets=str(tmp_path / "n.jsonl"))


def test_nuggets_come_from_a_file_or_a_questions_file(site, tmp_path):
    (tmp_path / "n.jsonl").write_text(json.dumps({"qid": "b1", "nuggets": [
        {"text": "a day pass costs 5", "importance": "vital"}, {"id": "extra", "text": "pay by card", "importance": "okay"},
    ]}) + "\n")
    by_id = {q.id: q for q in site_dataset(site, nuggets=str(tmp_path / "n.jsonl")).questions}
    assert [(n.id, n.text, n.vital) for n in by_id["b1"].nuggets] == [("n1", "a day pass costs 5", True),
                                                                       ("extra", "pay by card", False)]
    assert not by_id["b2"].nuggets
