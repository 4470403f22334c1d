"""receval.stats.calibration: A/A type I rates of each test on null pairs built from
real runs' per-question scores (built-in library; Cranfield when shared)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import SHARED
from receval.stats.bootstrap import bootstrap_means
from receval.pipeline import run
from receval.results import read_run
from receval.stats.calibration import null_differences, type_one_rates

CRANFIELD = SHARED / "datasets" / "cranfield"
MEASURES = ("ndcg@10", "ap")


def per_question(folder, measure: str) -> np.ndarray:
    values = read_run(folder).table.column(measure).to_pylist()
    return np.array([np.nan if v is None else v for v in values])


def pair_differences(folders, measures=MEASURES) -> np.ndarray:
    """(answerable questions, pairs x measures): every pair of runs, each measure."""
    columns = []
    for measure in measures:
        scores = [per_question(f, measure) for f in folders]
        kept = ~np.isnan(scores[0])
        columns += [scores[a][kept] - scores[b][kept] for a in range(len(scores)) for b in range(a + 1, len(scores))]
    return np.column_stack(columns)


def resampler(n_resamples: int, seed: int):
    return lambda values: bootstrap_means(values, n_resamples=n_resamples, seed=seed)


def assert_calibrated(diffs, n_null: int, n_resamples: int, seed: int):
    rates = type_one_rates(diffs, 0.05, n_null, n_resamples, seed, resample_means=resampler(n_resamples, seed + 2))
    assert [r.test for r in rates] == ["randomization", "t", "bootstrap"]
    for rate in rates:
        assert rate.n_null == n_null * diffs.shape[1]
        assert rate.lo <= rate.rate <= rate.hi
        assert 0.04 <= rate.rate <= 0.06, (rate.test, rate.rate)
    return rates


def test_null_differences_swap_within_question():
    d = np.array([[0.5, -0.2], [0.0, 0.1], [0.25, 0.3]])
    null = null_differences(d, 4, seed=0)
    assert null.shape == (3, 8)
    np.testing.assert_array_equal(np.abs(null[:, :4]), np.abs(d[:, [0]]) * np.ones((1, 4)))
    np.testing.assert_array_equal(np.abs(null[:, 4:]), np.abs(d[:, [1]]) * np.ones((1, 4)))
    assert (null_differences(d, 4, seed=0) == null).all()


@pytest.mark.slow
def test_built_in_runs_reject_four_to_six_percent(make_config, tmp_path):
    """Three built-in runs (BM25, TF-IDF, BM25 on 41-word chunks): 3 pairs x ndcg@10 and
    ap, 600 null pairs each (seed 0): every test rejects 4-6% at alpha 0.05."""
    folders = []
    for i, overrides in enumerate([("retriever=bm25",), ("retriever=tfidf",), ("retriever=bm25", "chunking.max_words=41")]):
        run(make_config(*overrides), tmp_path / str(i))
        folders.append(tmp_path / str(i))
    diffs = pair_differences(folders)
    assert diffs.shape == (47, 6) and (diffs != 0).any(axis=0).all()
    assert_calibrated(diffs, n_null=600, n_resamples=2000, seed=0)


@pytest.mark.slow  # three runs over a whole collection
@pytest.mark.skipif(not CRANFIELD.is_dir(), reason=f"shared test collection absent: {CRANFIELD}")
def test_cranfield_runs_reject_four_to_six_percent(make_config, tmp_path):
    folders = []
    common = ("dataset=beir", f"dataset.path={CRANFIELD}", "dataset.split=test", "chunking.max_words=null", "depth=100")
    for i, overrides in enumerate([("retriever=bm25",), ("retriever=tfidf",), ("retriever=bm25", "retriever.k1=0.9", "retriever.b=0.4")]):
        run(make_config(*common, *overrides), tmp_path / str(i))
        folders.append(tmp_path / str(i))
    diffs = pair_differences(folders)
    assert diffs.shape == (225, 6)
    assert_calibrated(diffs, n_null=400, n_resamples=2000, seed=0)


def test_unknown_test_and_missing_resampler_are_refused():
    d = np.random.default_rng(0).normal(0, 0.1, 20)
    with pytest.raises(ValueError, match="unknown test 'wilcoxon': use randomization, t, bootstrap"):
        type_one_rates(d, tests=("wilcoxon",), n_null=10)
    with pytest.raises(ValueError, match="the bootstrap test's calibration needs resample_means"):
        type_one_rates(d, tests=("bootstrap",), n_null=10)
