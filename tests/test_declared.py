"""Measures that declare themselves (receval.scoring.declared): a family declared in a
test, ``f1@k``, is stored by a run, named by ``report --metrics`` and listed on the
generated reference page; every shipped declaration scores an empty ranking as it says,
and the name grammar takes family names with digits."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from conftest import exit_code
from receval.cli.report import main as report_main
from receval.core.errors import RecevalError
from receval.results.format import RESULTS
from receval.scoring import declared
from receval.scoring.chunks import ChunkRanking
from receval.scoring.declared import Family, Measure, declare, withdraw
from receval.scoring.measures import Judged, precision, recall

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs"))
import gen_reference  # noqa: E402

F1_HELP = "The harmonic mean of precision@k and recall@k (a family declared by tests/test_declared.py)."


def f1(judged: Judged, k) -> np.ndarray:
    """2 P@k R@k / (P@k + R@k), 0 when both are 0 (van Rijsbergen's F with beta = 1,
    "Information Retrieval", 2nd ed., 1979, ch. 7)."""
    p, r = precision(judged, k), recall(judged, k)
    return np.divide(2 * p * r, p + r, out=np.zeros_like(p), where=p + r > 0)


@pytest.fixture
def f1_family():
    """``f1@k`` declared for one test through the public way, withdrawn after it."""
    family = declare(Family("f1", f1, help=F1_HELP, label="F1"))
    try:
        yield family
    finally:
        withdraw("f1")


@pytest.mark.slow  # a whole run of the built-in library (about 1 s)
def test_a_family_declared_in_a_test_is_stored_reported_and_documented(f1_family, make_config, tmp_path, capsys):
    from receval.run.pipeline import run

    run(make_config("retriever=bm25", "metrics.ks=[1,3,5]"), tmp_path / "run")
    table = pq.read_table(tmp_path / "run" / RESULTS).to_pydict()
    for k in (1, 3, 5):
        p = np.asarray(table[f"precision@{k}"], dtype=float)
        r = np.asarray(table[f"recall@{k}"], dtype=float)
        expected = np.where(p + r > 0, 2 * p * r / np.where(p + r > 0, p + r, 1), 0.0)
        expected[np.isnan(p)] = np.nan  # unanswerable questions: null, as every measure
        np.testing.assert_allclose(np.asarray(table[f"f1@{k}"], dtype=float), expected, rtol=0, atol=1e-12,
                                   equal_nan=True)
    f1_3 = np.asarray(table["f1@3"], dtype=float)
    assert 0 < np.nanmean(f1_3) < 1 and np.isnan(f1_3).sum() == np.isnan(np.asarray(table["rr"], float)).sum()

    capsys.readouterr()
    assert exit_code(report_main, [tmp_path / "run", "--metrics", "f1@3", "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    (row,) = shown["runs"]
    assert row["metrics"]["f1@3"]["mean"] == pytest.approx(float(np.nanmean(f1_3)), abs=1e-12)
    assert exit_code(report_main, [tmp_path / "run", "--metrics", "F1@3"]) == 0
    assert "F1@3" in capsys.readouterr().out  # titled by its label

    page = gen_reference.measures_page()
    assert "### `f1@k`" in page and F1_HELP in page and "2 P@k R@k / (P@k + R@k)" in page

    withdraw("f1")  # undeclared, its columns are not a measure report names (what the issue found)
    try:
        with pytest.raises(RecevalError, match=r"unknown measure 'f1@3'"):
            from receval.analysis import filters
            from receval.results import open_run

            filters.canonical_measure("f1@3", [open_run(tmp_path / "run", skip=frozenset())])
    finally:
        declare(f1_family)


def test_a_declared_family_joins_the_grammar_and_the_stored_measures(f1_family):
    assert declared.parse_measure("f1@3") == Measure("f1", 3)
    assert declared.parse_measure(" F1@10 ").name == "f1@10"
    assert declared.is_measure("f1@3") and declared.in_unit_interval("f1@3")
    assert declared.measure_label("f1@3") == "F1@3" and not declared.lower_is_better("f1@3")
    assert [m.name for m in declared.measures_for([2])][-1] == "f1@2"
    with pytest.raises(ValueError, match=r"measure 'f1' needs a cutoff k >= 1, e\.g\. f1@3"):
        declared.parse_measure("f1")
    with pytest.raises(ValueError, match=r"f1 takes no token budget; these do: rr, hit"):
        declared.parse_measure("f1@300tok")
    assert "f1@k" in str(pytest.raises(ValueError, declared.parse_measure, "g2@3").value)


def test_without_the_declaration_f1_is_unknown():
    with pytest.raises(ValueError, match=r"unknown measure 'f1@3'"):
        declared.parse_measure("f1@3")
    assert "f1@1" not in [m.name for m in declared.measures_for([1])]


@pytest.mark.parametrize("name", ["F1", "1f", "f-1", "f1@3"])
def test_a_family_name_is_lower_case_letters_digits_and_underscores(name):
    with pytest.raises(ValueError, match=r"use lower-case letters, digits and _"):
        Family(name, f1, help="x")


def test_a_name_or_alias_is_declared_once():
    with pytest.raises(ValueError, match=r"'ndcg': ndcg is already declared"):
        declare(Family("ndcg", f1, help="x"))
    with pytest.raises(ValueError, match=r"'f2': mrr is already declared"):
        declare(Family("f2", f1, help="x", aliases=("mrr",)))
    assert declared.find("f2") is None
    for name in ("ndcg", "f2"):  # receval's own stay; an undeclared one is not there to withdraw
        with pytest.raises(ValueError, match=rf"withdraw '{name}': only a family declare\(\) added"):
            withdraw(name)


def test_a_formula_states_itself():
    with pytest.raises(ValueError, match=r"formula: a function whose docstring states the formula"):
        Family("f2", lambda judged, k: judged.gains[:, 0], help="x")


@pytest.mark.parametrize("family", declared.families(declared.UNITS), ids=lambda f: f.name)
def test_a_ranking_of_nothing_scores_what_its_family_declares(family):
    """Three labelled questions, nothing retrieved."""
    judged = Judged(gains=np.zeros((3, 4)), ideal=np.array([[3.0, 1.0], [1.0, 0.0], [2.0, 2.0]]),
                    n_relevant=np.array([2, 1, 2]))
    measure = Measure(family.name) if family.at_depth else Measure(family.name, 3)
    np.testing.assert_array_equal(measure(judged), np.full(3, family.empty))


@pytest.mark.parametrize("family", declared.families(declared.CHUNKS), ids=lambda f: f.name)
def test_no_chunks_sent_scores_what_its_family_declares(family):
    """Two questions with units (and nuggets), no chunk retrieved."""
    zeros = np.zeros((2, 3))
    ranking = ChunkRanking(
        lengths=np.zeros(2, np.int64), words=zeros, new=zeros, evidence=zeros, evidence_total=np.array([12.0, 5.0]),
        novelty=zeros, novelty_ideal=np.array([[1.0, 1.0], [1.0, 0.0]]), nugget_at=np.zeros((2, 2), np.int64),
        nugget_vital=np.ones((2, 2), bool), nugget_valid=np.ones((2, 2), bool),
    )
    values = declared.chunk_measure(declared.parse_chunk_measure(f"{family.name}@3"), ranking, 3)
    np.testing.assert_array_equal(values, np.full(2, family.empty))


def test_shipped_declarations_follow_their_names():
    """The table the read side reads: labels, directions, trec_eval names."""
    assert [f.name for f in declared.families(declared.UNITS)] == [
        "rr", "hit", "recall", "precision", "ndcg", "ap", "rprec", "bpref", "judged"]
    assert {declared.measure_label(n) for n in ("rr", "rr@3", "ndcg@5", "ap", "ap@10", "rprec", "alpha_ndcg@3")} == {
        "MRR", "MRR@3", "nDCG@5", "MAP", "MAP@10", "R-prec", "alpha-nDCG@3"}
    assert [f.name for f in declared.families() if f.better == "lower"] == ["context_tokens", "redundancy"]
    names = {n: declared.trec_eval_name(declared.parse_measure(n)) for n in ("rr", "ap", "ap@10", "ndcg@10", "judged@3")}
    assert names == {"rr": "recip_rank", "ap": "map", "ap@10": "map_cut_10", "ndcg@10": "ndcg_cut_10",
                     "judged@3": None}
