"""The one tokenizer shared by every lexical retriever (TF-IDF, BM25).

Tokens are Unicode words (``\\w`` characters and the combining marks words are written
with: :func:`receval.core.marks.words`, so Thai or Hindi words are not cut at every vowel
sign) of the lowercased text, except two scripts' worth:

- **CJK** (``tokenizer.cjk``, default ``bigram``): a run of Han, Hiragana, Katakana or
  Hangul characters becomes its overlapping character bigrams (``東京都`` -> ``東京``,
  ``京都``), a run of one character stays one token, as Lucene's CJKBigramFilter does
  after its StandardTokenizer (full-width ASCII and half-width kana are folded first, as
  its CJKWidthFilter does). Text without spaces would otherwise be one token per
  sentence, and match nothing. ``off``: such runs are words like any other. A text
  without CJK (or full-width) characters gets exactly the ``\\w+`` words either way.
- **Subword** (``tokenizer.subword``): the tokens of a local ``tokenizer.json`` (the
  ``tokenizers`` package; nothing is downloaded), in place of words.

Two options, both off by default: drop the language's stopwords
(:mod:`receval.retrievers.stopwords`), and stem with its Snowball stemmer (PyStemmer, the
``stem`` extra); ``tokenizer.language`` picks both. Questions and chunks go through the
same function, so every lexical retriever sees the same tokens; :attr:`Tokenizer.key`
names the token stream for the caches.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from operator import add
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from receval.core.cjk import _CJK_ANY, CJK, CJK_RANGES, cjk_mask, has_cjk  # noqa: F401 (re-exported)
from receval.core.errors import ConfigError
from receval.core.marks import MARKS, words
from receval.retrievers.stopwords import STOPWORDS as _LISTS

STOPWORDS = _LISTS["english"]  # the default language's list (RM3 reads it)

_CJK_OR_WIDE = re.compile(f"[{CJK}\uff01-\uff5e]")  # a text the CJK rule can change
_WIDE = re.compile("[\uff01-\uff5e\uff61-\uffdc]+")  # full-width ASCII, half-width kana and Hangul
# a CJK run (a bigram or a lone character) or a word (its combining marks in it: receval.core.marks)
_CJK_WORD = re.compile(f"[{CJK}]+|(?:[^\\W{CJK}]|[{MARKS}])+")


def cjk_words(text: str) -> list[str]:
    """Lowercase words of ``text`` with every CJK run as its overlapping character bigrams
    (a one-character run: that character); the ``\\w+`` words when it has no CJK."""
    if text.isascii() or not _CJK_OR_WIDE.search(text):
        return words(text.lower())
    if _WIDE.search(text):
        text = _WIDE.sub(lambda m: unicodedata.normalize("NFKC", m.group()), text)
    tokens = []
    for token in _CJK_WORD.findall(text.lower()):  # a run is all CJK or has none
        if len(token) > 2 and _CJK_ANY.match(token):
            tokens.extend(map(add, token, token[1:]))  # "abcd" -> ab, bc, cd
        else:
            tokens.append(token)
    return tokens


class CjkSplit(StrEnum):
    bigram = "bigram"  # overlapping character bigrams, a lone character one token (Lucene's CJK analyzer)
    off = "off"  # a run of CJK characters is one word, as any other script's


# PyStemmer's Snowball algorithms (Stemmer.algorithms() of PyStemmer 3.1), listed so the
# schema needs no PyStemmer installed
LANGUAGES = (
    "arabic", "armenian", "basque", "catalan", "czech", "danish", "dutch", "dutch_porter", "english",
    "esperanto", "estonian", "finnish", "french", "german", "greek", "hindi", "hungarian", "indonesian",
    "irish", "italian", "lithuanian", "nepali", "norwegian", "persian", "polish", "porter", "portuguese",
    "romanian", "russian", "serbian", "sesotho", "spanish", "swedish", "tamil", "turkish", "yiddish",
)
Language = StrEnum("Language", {name: name for name in LANGUAGES})
Language.__doc__ = "A Snowball stemmer (tokenizer.stem) and stopword list (tokenizer.stopwords)."


def load_tokenizer_json(path: str, option: str) -> tuple[object, str]:
    """A local ``tokenizer.json`` (the ``tokenizers`` package; nothing is downloaded), without
    truncation or padding, and the sha256 of its bytes; a ConfigError naming ``option``."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise ConfigError(
            f"{option}={path}: no such file; give a local tokenizer.json "
            "(a model folder's, or one saved with the tokenizers package; nothing is downloaded)"
        )
    try:
        from tokenizers import Tokenizer as Subword
    except ImportError:
        raise ConfigError(f"{option}={path} needs the tokenizers package: pip install tokenizers") from None

    data = file.read_bytes()
    try:
        model = Subword.from_str(data.decode("utf-8"))
    except Exception as error:  # the tokenizers package's parse errors are plain Exceptions
        raise ConfigError(f"{option}={path}: not a tokenizer.json the tokenizers package reads ({error})") from error
    model.no_truncation()
    model.no_padding()
    return model, hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Tokenizer:
    """Lowercase Unicode words (CJK runs as bigrams) or a subword tokenizer's tokens,
    optionally without the language's stopwords and stemmed."""

    stopwords: bool = False
    stem: bool = False
    language: str = "english"
    cjk: str = "bigram"
    subword: str | None = None  # a local tokenizer.json
    _stemmer: object = field(default=None, compare=False, repr=False)
    _subword: object = field(default=None, compare=False, repr=False)
    _subword_sha: str = field(default="", compare=False, repr=False)

    @classmethod
    def of(cls, node) -> Tokenizer:
        """The tokenizer a ``tokenizer`` config node asks for."""
        subword = node.get("subword")
        return cls(
            stopwords=bool(node.stopwords), stem=bool(node.stem), language=str(node.get("language", "english")),
            cjk=str(node.get("cjk", "bigram")), subword=None if subword is None else str(subword),
        )

    def __post_init__(self) -> None:
        if self.language not in LANGUAGES:
            raise ConfigError(f"tokenizer.language={self.language!r}: not a Snowball language; use one of {', '.join(LANGUAGES)}")
        if self.cjk not in {c.value for c in CjkSplit}:
            raise ConfigError(f"tokenizer.cjk={self.cjk!r}: use bigram or off")
        if self.stopwords and self.language not in _LISTS:
            raise ConfigError(
                f"tokenizer.stopwords=true: receval has no stopword list for {self.language}; "
                f"lists exist for {', '.join(sorted(_LISTS))} (or set tokenizer.stopwords=false)"
            )
        if self.subword is not None:
            self._load_subword()
        if self.stem:
            try:
                import Stemmer  # PyStemmer, the `stem` extra
            except ImportError as error:
                raise ConfigError(
                    "tokenizer.stem=true needs PyStemmer: pip install 'receval[stem]' "
                    "(or set tokenizer.stem=false)"
                ) from error
            object.__setattr__(self, "_stemmer", Stemmer.Stemmer(self.language))

    def _load_subword(self) -> None:
        if self.stopwords or self.stem:
            raise ConfigError(
                "tokenizer.subword replaces words with a model's tokens, which are not stemmed or "
                "stopword-filtered: set tokenizer.stem=false and tokenizer.stopwords=false"
            )
        model, sha = load_tokenizer_json(self.subword, "tokenizer.subword")
        object.__setattr__(self, "_subword", model)
        object.__setattr__(self, "_subword_sha", sha)

    def __call__(self, text: str) -> list[str]:
        return self.many([text])[0]

    def many(self, texts: Iterable[str]) -> list[list[str]]:
        if self._subword is not None:
            return [e.tokens for e in self._subword.encode_batch(list(texts), add_special_tokens=False)]
        split = cjk_words if self.cjk == CjkSplit.bigram else (lambda text: words(text.lower()))
        tokenized = [split(text) for text in texts]
        if self.stopwords:
            stop = _LISTS[self.language]
            tokenized = [[t for t in tokens if t not in stop] for tokens in tokenized]
        if self._stemmer is not None:
            tokenized = [self._stemmer.stemWords(tokens) for tokens in tokenized]
        return tokenized

    def stopword_terms(self) -> set[str]:
        """The language's stopwords as this tokenizer's index spells them (stemmed when it
        stems): what pseudo-relevance feedback leaves out."""
        words = _LISTS.get(self.language, _LISTS["english"])
        plain = Tokenizer(stem=self.stem, language=self.language, cjk=self.cjk)
        return {t for tokens in plain.many(sorted(words)) for t in tokens}

    @property
    def key(self) -> str:
        """Identifies the token stream, for caches keyed by tokenisation."""
        if self._subword is not None:
            return f"subword;sha256={self._subword_sha}"
        return (
            f"words-marks-lower;cjk={self.cjk};language={self.language};"
            f"stopwords={int(self.stopwords)};stem={int(self.stem)}"
        )
