"""Query-side stages (receval/transforms): RM3 worked by hand, its sparse path against
its score block, and the group's config checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from receval.run import stages
from receval.run import components
from receval.run.components import Context
from receval.core.errors import ConfigError
from receval.run.config import check
from receval.run.ranking import select_top
from receval.retrievers.bm25 import BM25
from receval.retrievers.text import Tokenizer
from receval.transforms.rm3 import Rm3

CHUNKS = ["apple banana", "apple cherry cherry", "banana date", "cherry date"]


def rm3_stage(fb_docs=2, fb_terms=2, original_weight=0.5, k1=1.2, b=0.0):
    first = BM25(Tokenizer(), k1=k1, b=b)
    stage = Rm3(fb_docs, fb_terms, original_weight, True, Tokenizer()).wrap(first, {})
    stage.fit(CHUNKS, np.arange(len(CHUNKS)))
    return stage


def test_rm3_worked_example():
    """idf(apple) = idf(cherry) = ln(1 + 2.5/2.5) = ln 2; with b = 0 a term met once scores
    ln 2, cherry twice ln 2 * 2 * 2.2 / 3.2. Feedback: chunks 0 and 1 (both ln 2; ties by
    id); RM = ln 2 * (apple 1/2 + 1/3, banana 1/2, cherry 2/3); the 2 heaviest, scaled:
    apple 5/9, cherry 4/9; mixed half and half with the question: apple 7/9, cherry 2/9."""
    stage = rm3_stage()
    weights = stage.expand(["apple"]).toarray()[0]
    ids = stage.first.vocabulary.ids
    assert weights[ids["apple"]] == pytest.approx(7 / 9)
    assert weights[ids["cherry"]] == pytest.approx(2 / 9)
    assert weights[ids["banana"]] == 0 and weights[ids["date"]] == 0
    out = stage.rank(["apple"], 4)
    idx, scores = out.idx, out.scores
    assert idx[0].tolist() == [1, 0, 3, -1]  # "banana date" shares no expanded term
    ln2 = math.log(2)
    np.testing.assert_allclose(scores[0, :3], [ln2 * (7 / 9 + 2 / 9 * 2 * 2.2 / 3.2), ln2 * 7 / 9, ln2 * 2 / 9])
    assert set(out.seconds) == {"transform", "bm25"}


def test_rm3_with_original_weight_one_is_the_first_stage():
    stage = rm3_stage(original_weight=1.0)
    plain = BM25(Tokenizer(), k1=1.2, b=0.0)
    plain.fit(CHUNKS, np.arange(4))
    questions = ["apple", "cherry date", "banana"]
    idx, scores = stage.rank(questions, 4).idx, stage.rank(questions, 4).scores
    want = plain.rank(questions, 4)
    want_idx, want_scores = want.idx, want.scores
    assert idx.tolist() == want_idx.tolist()
    # the question's counts are scaled to sum to 1: scores shrink by its length, order is kept
    np.testing.assert_allclose(scores * np.array([[1], [2], [1]]), want_scores)


def test_rm3_sparse_path_equals_its_score_block():
    """The lexical stage's sparse top-k path (no score block) gives what select_top of the
    block gives, for expanded questions too."""
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(40)]
    texts = [" ".join(rng.choice(words, size=rng.integers(3, 12))) for _ in range(300)]
    questions = [" ".join(rng.choice(words, size=3)) for _ in range(20)]
    first = BM25(Tokenizer())
    stage = Rm3(5, 8, 0.6, True, Tokenizer()).wrap(first, {})
    stage.fit(texts, np.arange(len(texts)))
    block_idx, block_scores = select_top(stage.score(questions), 10, np.arange(len(texts)), floor=0.0)
    first.BLOCK_BELOW = 0  # force the sparse path
    out = stage.rank(questions, 10)
    idx, scores = out.idx, out.scores
    assert idx.tolist() == block_idx.tolist()
    np.testing.assert_allclose(scores, block_scores, rtol=1e-12)


def test_rm3_leaves_stopwords_out_of_the_feedback():
    first = BM25(Tokenizer())
    stage = Rm3(2, 1, 0.0, True, Tokenizer()).wrap(first, {})
    stage.fit(["the the the cat", "the dog"], np.arange(2))
    weights = stage.expand(["cat"]).toarray()[0]
    assert weights[first.vocabulary.ids["cat"]] == pytest.approx(1.0)
    assert weights[first.vocabulary.ids["the"]] == 0


def test_rm3_needs_a_lexical_first_stage(make_config):
    cfg = make_config("transform=rm3", "retriever=fused")
    with pytest.raises(ConfigError, match="transform=rm3 needs a lexical first stage"):
        stages.build(cfg, Context(tokenizer=Tokenizer()))


@pytest.mark.slow
def test_transform_keys_are_checked(make_config):
    with pytest.raises(ConfigError, match="transform.fb_docs"):
        check(make_config("transform=rm3", "transform.fb_docs=0"))
    with pytest.raises(ConfigError, match="original_weight"):
        check(make_config("transform=rm3", "transform.original_weight=1.5"))
    assert make_config().get("transform") is None
    assert components.kinds("transform")[:1] and "rm3" in components.kinds("transform")


@pytest.mark.slow
def test_rm3_run_is_named_and_keeps_old_identities(make_config, tmp_path):
    import pyarrow.parquet as pq

    from receval.run.pipeline import resolved, run
    from receval.results.identity import identity_hash
    from receval.results.labels import naming
    from receval.run.written import label_facts

    plain, expanded = make_config(), make_config("transform=rm3")
    saved_before = {k: v for k, v in resolved(plain).items() if k != "transform"}  # a run from before the group
    assert resolved(plain)["transform"] is None
    assert identity_hash(resolved(plain)) == identity_hash(saved_before) != identity_hash(resolved(expanded))
    configs = [resolved(plain), resolved(expanded)]
    labels = naming(configs, written=[label_facts(c) for c in configs]).labels  # with what each run writes
    assert labels == ["transform=none", "transform=rm3(10,10,0.5)"]
    result = run(expanded, tmp_path)
    assert result.means["rr"] > 0
    table = pq.read_table(tmp_path / "results.parquet")
    assert "latency_ms.transform" in table.column_names
