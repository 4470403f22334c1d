"""The one tokenizer shared by every lexical retriever (TF-IDF, BM25).

Tokens are Unicode words (``\\w+``) of the lowercased text. Two options, both off by
default: drop English stopwords, and stem with the Snowball English stemmer (the
``stem`` extra, PyStemmer). Questions and chunks go through the same function, so
both retrievers always see the same words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from receval.core.errors import ConfigError

WORD = re.compile(r"\w+")

# A short, conventional English stopword list (articles, pronouns, auxiliaries,
# prepositions, conjunctions). Kept small on purpose: content words never appear.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not of off on once
    only or other our ours ourselves out over own same she should so some such than that
    the their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you
    your yours yourself yourselves""".split()
)


@dataclass(frozen=True)
class Tokenizer:
    """Lowercase Unicode words, optionally without stopwords and stemmed."""

    stopwords: bool = False
    stem: bool = False
    _stemmer: object = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.stem:
            try:
                import Stemmer  # PyStemmer, the `stem` extra
            except ImportError as error:
                raise ConfigError(
                    "tokenizer.stem=true needs PyStemmer: pip install 'receval[stem]' "
                    "(or set tokenizer.stem=false)"
                ) from error
            object.__setattr__(self, "_stemmer", Stemmer.Stemmer("english"))

    def __call__(self, text: str) -> list[str]:
        tokens = WORD.findall(text.lower())
        if self.stopwords:
            tokens = [t for t in tokens if t not in STOPWORDS]
        if self._stemmer is not None:
            tokens = self._stemmer.stemWords(tokens)
        return tokens

    def many(self, texts: Iterable[str]) -> list[list[str]]:
        return [self(text) for text in texts]

    @property
    def key(self) -> str:
        """Identifies the token stream, for caches keyed by tokenisation."""
        return f"words-lower;stopwords={int(self.stopwords)};stem={int(self.stem)}"
