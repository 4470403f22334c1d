"""receval.stats.calibration: the paired procedure's A/A type I rate on null pairs built
from real runs' per-question scores (built-in library; Cranfield when shared)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import SHARED
from receval.run.pipeline import run
from receval.results import open_run
from receval.stats.calibration import null_differences, type_one_rate

CRANFIELD = SHARED / "datasets" / "cranfield"
MEASURES = ("ndcg@10", "ap")


def per_question(folder, measure: str) -> np.ndarray:
    values = open_run(folder, skip=frozenset()).table.column(measure).to_pylist()
    return np.array([np.nan if v is None else v for v in values])


def pair_differences(folders, measures=MEASURES) -> np.ndarray:
    """(answerable questions, pairs x measures): every pair of runs, each measure."""
    columns = []
    for measure in measures:
        scores = [per_question(f, measure) for f in folders]
        kept = ~np.isnan(scores[0])
        columns += [scores[a][kept] - scores[b][kept] for a in range(len(scores)) for b in range(a + 1, len(scores))]
    return np.column_stack(columns)


def assert_calibrated(diffs, n_null: int, n_resamples: int, seed: int, low: float = 0.03):
    """At most about alpha (0.065, the A/A bound the tests hold it to), and not far below
    it on measures with many values."""
    rate = type_one_rate(diffs, 0.95, n_null, n_resamples, seed)
    assert rate.n_null == n_null * diffs.shape[1]
    assert rate.lo <= rate.rate <= rate.hi
    assert low <= rate.rate <= 0.065, rate
    return rate


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
    ap, 600 null pairs each (seed 0): the procedure rejects 3-6.5% at alpha 0.05."""
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
