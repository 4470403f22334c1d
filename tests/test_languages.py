"""Text beyond English: CJK runs as character bigrams, Snowball languages, a subword
tokenizer; the CJK rule in ROUGE and in the span measures; the tokenizer in the caches'
keys and the run's identity. The CJK collection is tests/fixtures/cjk (12 sections of
a Chinese library help page, 12 questions)."""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from receval.chunking.wordspans import word_spans
from receval.core.errors import ConfigError
from receval.datasets import load_dataset
from receval.measures.overlap import rouge_precision, tokenize
from receval.measures.spans import token_spans
from receval.retrievers.bm25 import BM25
from receval.retrievers.text import CJK, CJK_RANGES, LANGUAGES, Tokenizer, cjk_mask
from receval.retrievers.tfidf import TfIdf

FIXTURES = Path(__file__).parent / "fixtures"


def dataset(name: str):
    path = None if name == "library" else str(FIXTURES / name)
    return load_dataset(OmegaConf.create({"name": name, "format": "folder", "path": path,
                                          "questions": None, "split": None, "title": True}))


# ---------------------------------------------------------------- the reference


def hand_bigrams(text: str) -> list[str]:
    """Character-bigram tokens written out by hand: each run of Chinese characters gives its
    overlapping pairs (a lone character itself); ASCII words as they are."""
    tokens = []
    for run in re.findall(r"[\u4e00-\u9fff]+|[a-z0-9]+", text.lower()):
        if run[0] < "\u4e00" or len(run) == 1:
            tokens.append(run)
        else:
            tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
    return tokens


def hand_bm25(docs: list[str], questions: list[str], k1: float = 1.2, b: float = 0.75) -> np.ndarray:
    """BM25 (Lucene's idf) over :func:`hand_bigrams`, term by term in plain Python."""
    tokenized = [hand_bigrams(d) for d in docs]
    avgdl = sum(map(len, tokenized)) / len(docs)
    df = Counter(t for tokens in tokenized for t in set(tokens))
    scores = np.zeros((len(questions), len(docs)))
    for i, question in enumerate(questions):
        for j, tokens in enumerate(tokenized):
            tf = Counter(tokens)
            for t in hand_bigrams(question):
                if tf[t]:
                    idf = math.log(1 + (len(docs) - df[t] + 0.5) / (df[t] + 0.5))
                    scores[i, j] += idf * tf[t] * (k1 + 1) / (tf[t] + k1 * (1 - b + b * len(tokens) / avgdl))
    return scores


def mrr(scores: np.ndarray, relevant: list[int]) -> float:
    """Mean reciprocal rank of each question's one relevant document (chunks scoring 0 are
    not retrieved; ties go to the earlier document)."""
    total = 0.0
    for row, target in zip(scores, relevant):
        if row[target] > 0:
            total += 1.0 / (1 + int(np.sum(row > row[target]) + np.sum(row[:target] == row[target])))
    return total / len(relevant)


def cjk_collection():
    data = dataset("cjk")
    docs = [s.text for s in data.sections]
    ids = [s.id for s in data.sections]
    relevant = [ids.index(next(iter(q.relevant))) for q in data.questions]
    return docs, [q.text for q in data.questions], relevant


# ---------------------------------------------------------------- done-when: CJK search


def test_bm25_and_tfidf_find_what_character_bigram_bm25_finds():
    docs, questions, relevant = cjk_collection()
    assert len(docs) == len(questions) == 12
    reference = mrr(hand_bm25(docs, questions), relevant)
    assert reference >= 0.9  # the collection is searchable by bigrams
    for make in (lambda t: BM25(t), lambda t: TfIdf(t)):
        retriever = make(Tokenizer())
        retriever.fit(docs)
        assert mrr(retriever.score(questions), relevant) == pytest.approx(reference, abs=0.02)
        words = make(Tokenizer(cjk="off"))  # receval before: a sentence is one token
        words.fit(docs)
        assert mrr(words.score(questions), relevant) == 0.0
    bm25 = BM25(Tokenizer())
    bm25.fit(docs)
    np.testing.assert_allclose(bm25.score(questions), hand_bm25(docs, questions), rtol=1e-12)


@pytest.mark.slow
def test_a_run_on_the_cjk_folder_finds_the_sections(make_config, tmp_path):
    """End to end with default settings: the stored per-question rr averages the reference's MRR."""
    import pyarrow.parquet as pq

    from receval.run.pipeline import run

    docs, questions, relevant = cjk_collection()
    reference = mrr(hand_bm25(docs, questions), relevant)
    for retriever in ("bm25", "tfidf"):
        out = tmp_path / retriever
        run(make_config(f"dataset.path={FIXTURES / 'cjk'}", f"retriever={retriever}", "cache_dir=null"), out)
        rr = pq.read_table(next(out.rglob("*.parquet")), columns=["rr"]).column("rr").to_pylist()
        assert len(rr) == 12 and np.mean(rr) == pytest.approx(reference, abs=0.02)


# ---------------------------------------------------------------- the bigram rule


def test_cjk_runs_become_overlapping_bigrams():
    t = Tokenizer()
    assert t("东京都") == ["东京", "京都"]
    assert t("中") == ["中"]  # a lone character stays one token
    assert t("中文abc字 x 一") == ["中文", "abc", "字", "x", "一"]  # other scripts break a run
    assert t("中文，字典") == ["中文", "字典"]  # so does punctuation
    assert t("東京に行きます") == ["東京", "京に", "に行", "行き", "きま", "ます"]  # kana and Han in one run
    assert t("データ・ベース") == ["デー", "ータ", "ベー", "ース"]  # the middle dot is punctuation
    assert t("한국어 처리") == ["한국", "국어", "처리"]
    assert t("2024年") == ["2024", "年"]
    assert t("ｶﾞｲﾄﾞ ＡＢＣ") == ["ガイ", "イド", "abc"]  # width folded first (Lucene's CJKWidthFilter)
    assert Tokenizer(cjk="off")("東京に行きます") == ["東京に行きます"]


@pytest.mark.slow  # about 1 s: every code point of planes 0-3
def test_the_cjk_class_is_the_word_characters_of_the_four_scripts():
    regex = pytest.importorskip("regex")
    every = "".join(map(chr, [*range(0xD800), *range(0xE000, 0x40000)]))  # the planes CJK lies in
    scripts = regex.findall(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]", every)
    word = set(re.findall(r"\w", "".join(scripts)))
    codes = np.frombuffer("".join(sorted(word)).encode("utf-32-le"), np.uint32)
    assert cjk_mask(codes).all()  # every letter of those scripts
    assert not cjk_mask(np.arange(0x40000, 0x110000)).any()
    ours = np.flatnonzero(cjk_mask(np.arange(0x40000)))
    assigned = "".join(chr(c) for c in ours if not 0xD800 <= c <= 0xDFFF)
    extra = set(re.findall(r"\w", assigned)) - set(scripts)
    # beyond them only the kana marks Japanese shares with Common, and 〆
    assert extra == {"\u3006", "\u30fc", "\uff70", "\uff9e", "\uff9f"}
    assert len(CJK_RANGES) == 22


# ---------------------------------------------------------------- English unchanged


STOPWORDS_BEFORE = frozenset(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not of off on once
    only or other our ours ourselves out over own same she should so some such than that
    the their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you
    your yours yourself yourselves""".split()
)


def tokens_before(text: str, stopwords: bool, stem) -> list[str]:
    """The tokenizer as it was before CJK bigrams (copied): ``\\w+`` of the lowercased text."""
    tokens = re.findall(r"\w+", text.lower())
    if stopwords:
        tokens = [t for t in tokens if t not in STOPWORDS_BEFORE]
    return stem.stemWords(tokens) if stem else tokens


@pytest.mark.parametrize("stopwords,stem", [(False, False), (True, False), (False, True), (True, True)])
def test_english_tokens_are_unchanged_on_the_built_in_library(stopwords, stem):
    Stemmer = pytest.importorskip("Stemmer")
    data = dataset("library")
    texts = [s.text for s in data.sections] + [q.text for q in data.questions]
    new = Tokenizer(stopwords=stopwords, stem=stem).many(texts)
    assert new == [tokens_before(t, stopwords, Stemmer.Stemmer("english") if stem else None) for t in texts]
    assert sum(map(len, new)) > 3_000


def test_english_bm25_scores_are_unchanged_to_the_bit():
    data = dataset("library")
    docs, questions = [s.text for s in data.sections], [q.text for q in data.questions]

    class Before(Tokenizer):
        def many(self, texts):
            return [tokens_before(t, False, None) for t in texts]

    now, before = BM25(Tokenizer()), BM25(Before())
    now.fit(docs)
    before.fit(docs)
    assert np.array_equal(now.score(questions), before.score(questions))


# ---------------------------------------------------------------- languages


def test_language_picks_the_stemmer_and_the_stopwords():
    Stemmer = pytest.importorskip("Stemmer")
    assert set(LANGUAGES) == set(Stemmer.algorithms())  # the schema's list is PyStemmer's
    assert Tokenizer(language="french", stopwords=True, stem=True)("Les bibliothèques et les livres") == [
        "bibliothequ", "livr"]
    assert Tokenizer(language="german", stopwords=True)("Die Bücher und die Häuser") == ["bücher", "häuser"]
    assert Tokenizer(language="russian", stem=True)("книги") == ["книг"]
    with pytest.raises(ConfigError, match="no stopword list for finnish; lists exist for dutch"):
        Tokenizer(language="finnish", stopwords=True)
    with pytest.raises(ConfigError, match="tokenizer.language='klingon': not a Snowball language"):
        Tokenizer(language="klingon")


def test_rm3_leaves_out_the_languages_stopwords_as_the_index_spells_them():
    pytest.importorskip("Stemmer")
    english = Tokenizer(stem=True).stopword_terms()
    assert "becaus" in english and "because" not in english  # stemmed as the index is
    assert {"und", "die"} <= Tokenizer(language="german").stopword_terms()


# ---------------------------------------------------------------- subword


def subword_file(folder: Path, sentences: list[str]) -> Path:
    """A WordPiece tokenizer.json trained on ``sentences`` with the tokenizers package."""
    from tokenizers import Tokenizer as Subword
    from tokenizers.models import WordPiece
    from tokenizers.normalizers import BertNormalizer
    from tokenizers.pre_tokenizers import BertPreTokenizer
    from tokenizers.trainers import WordPieceTrainer

    model = Subword(WordPiece(unk_token="[UNK]"))
    model.normalizer = BertNormalizer(lowercase=True)
    model.pre_tokenizer = BertPreTokenizer()
    model.train_from_iterator(sentences, WordPieceTrainer(vocab_size=120, special_tokens=["[UNK]"]))
    path = folder / "tokenizer.json"
    model.save(str(path))
    return path


SENTENCES = [
    "Fines for late returns are charged daily",
    "Renew your loans online before they are due",
    "Returning books late costs ten pence a day",
    "The reading room opens at nine",
]


def test_a_subword_tokenizer_reads_a_local_tokenizer_json(tmp_path):
    from tokenizers import Tokenizer as Subword

    path = subword_file(tmp_path, SENTENCES)
    tokenizer = Tokenizer(subword=str(path))
    expected = Subword.from_file(str(path)).encode("Renewing returns", add_special_tokens=False).tokens
    assert tokenizer("Renewing returns") == expected and len(expected) > 2  # word pieces
    assert tokenizer.key.startswith("subword;sha256=")
    bm25 = BM25(tokenizer)
    bm25.fit(SENTENCES)
    assert int(np.argmax(bm25.score(["renewing loans"])[0])) == 1
    path.write_text(path.read_text().replace('"[UNK]"', '"[unk]"'))
    assert Tokenizer(subword=str(path)).key != tokenizer.key  # the file's content, not its name


def test_the_config_node_builds_the_tokenizer(make_config, tmp_path):
    path = subword_file(tmp_path, SENTENCES)
    node = make_config(f"tokenizer.subword={path}", "tokenizer.language=german", "tokenizer.cjk=off").tokenizer
    assert Tokenizer.of(node) == Tokenizer(language="german", cjk="off", subword=str(path))
    assert Tokenizer.of(make_config().tokenizer) == Tokenizer()


def test_a_missing_or_bad_subword_file_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="tokenizer.subword=.*nope.json: no such file; give a local tokenizer.json"):
        Tokenizer(subword=str(tmp_path / "nope.json"))
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ConfigError, match="bad.json: not a tokenizer.json the tokenizers package reads"):
        Tokenizer(subword=str(tmp_path / "bad.json"))
    path = subword_file(tmp_path, SENTENCES)
    with pytest.raises(ConfigError, match="set tokenizer.stem=false and tokenizer.stopwords=false"):
        Tokenizer(subword=str(path), stem=True)


# ---------------------------------------------------------------- caches and identity


def test_the_tokenizer_keys_the_vocabulary_cache(tmp_path):
    from receval.chunking.cache import IndexCache

    keys = {Tokenizer().key, Tokenizer(cjk="off").key, Tokenizer(language="german").key, Tokenizer(stopwords=True).key}
    assert len(keys) == 4
    docs, _, _ = cjk_collection()
    cache = IndexCache(str(tmp_path))
    bigrams = cache.vocabularies("chunks")(docs, Tokenizer())
    words = cache.vocabularies("chunks")(docs, Tokenizer(cjk="off"))
    # clauses and bigrams: neither read the other's entry
    assert len(words) == 26 and len(bigrams) == len({t for d in docs for t in hand_bigrams(d)}) == 199
    assert len(list(tmp_path.rglob("*.npz"))) == 2


def test_the_tokenizer_is_part_of_the_runs_identity(make_config):
    from receval.results.identity import identity_hash

    config = OmegaConf.to_container(make_config(), resolve=True, enum_to_str=True)
    assert config["tokenizer"] == {"stopwords": False, "stem": False, "language": "english", "cjk": "bigram",
                                   "subword": None}
    hashes = {identity_hash(config)}
    for key, value in [("cjk", "off"), ("language", "german"), ("subword", "/m/tokenizer.json")]:
        hashes.add(identity_hash({**config, "tokenizer": {**config["tokenizer"], key: value}}))
    assert len(hashes) == 4


# ---------------------------------------------------------------- ROUGE and spans


def test_rouge_counts_each_cjk_character():
    assert tokenize("借书证 Wi-Fi？") == ["借", "书", "证", "wi", "fi"]
    # q: 一 次 能 借 几 本 书 (7); p holds 借, 本, 书 and the bigram 本书
    r1, r2, rl = rouge_precision("一次能借几本书？", "读者每次最多借十本书。")
    assert (r1, r2, rl) == pytest.approx((4 / 7, 1 / 6, 4 / 7))  # 次 借 本 书; 本书; 次 借 本 书 in order
    assert rouge_precision("图书馆", "") == (0.0, 0.0, 0.0)


def test_span_tokens_split_cjk_characters_and_leave_other_text_alone():
    text = "图书 馆abc借书证。 x"
    starts, ends = token_spans(text)
    assert [text[s:e] for s, e in zip(starts, ends)] == ["图", "书", "馆", "abc", "借", "书", "证", "。", "x"]
    rng = np.random.default_rng(3)
    alphabet = list("ab é\t\n-.") + ["\u3000", "\xa0"]
    for _ in range(200):
        plain = "".join(rng.choice(alphabet, size=int(rng.integers(0, 30))))
        assert all(np.array_equal(a, b) for a, b in zip(token_spans(plain), word_spans(plain)))


def test_span_tokens_agree_with_a_per_word_split():
    """Random text mixing CJK, Latin and whitespace: each whitespace word split into its CJK
    characters and the runs between them, by a plain loop."""
    rng = np.random.default_rng(5)
    alphabet = list("ab.东京かナ한 \t") + ["\U00020000", "\u3000"]
    for _ in range(300):
        text = "".join(rng.choice(alphabet, size=int(rng.integers(0, 25))))
        expected = []
        for match in re.finditer(r"\S+", text):
            for part in re.finditer(f"[{CJK}]|[^{CJK}]+", match.group()):
                expected.append((match.start() + part.start(), match.start() + part.end()))
        starts, ends = token_spans(text)
        assert list(zip(starts.tolist(), ends.tolist())) == expected
