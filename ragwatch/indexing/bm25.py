"""BM25 text analysis: which BM25 runs (`BM25Settings`) and how text becomes its terms (`Analyzer`).

The default is the standard one (as Lucene's EnglishAnalyzer and bm25s): words lowercased, split at
non-letters, Lucene's 33 English stop words dropped, Snowball-stemmed (PyStemmer).

Example:
    >>> tokenize("Registering stacks", BM25Settings(stemmer="none"))
    ['registering', 'stacks']
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragwatch.indexing.errors import RagIndexError

_WORD = re.compile(r"[^\W_]+")  # letters and digits; `log_metadata` -> `log`, `metadata`


class BM25Settings(BaseModel):
    """Which BM25 runs. The default is the standard one (as Lucene's EnglishAnalyzer and bm25s):
    Snowball English stemming and Lucene's 33 English stop words. `none` turns either off."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    stemmer: Literal["snowball", "none"] = "snowball"
    """Snowball English stemming, or none."""
    stopwords: Literal["english", "none"] = "english"
    """Lucene's 33 English stop words removed, or none."""
    k1: float = Field(default=1.5, ge=0)
    """BM25 term-frequency saturation."""
    b: float = Field(default=0.75, ge=0, le=1)
    """BM25 document-length normalisation (0 = none, 1 = full)."""

    def describe(self) -> str:
        """One line for reports, e.g. 'BM25 (Lucene, k1=1.5, b=0.75), Snowball English stemmer, ...'."""
        stem = "Snowball English stemmer" if self.stemmer == "snowball" else "no stemming"
        stop = "Lucene English stop words" if self.stopwords == "english" else "no stop words"
        return f"BM25 (Lucene, k1={self.k1:g}, b={self.b:g}), {stem}, {stop}"


class _Terms(dict[str, str]):
    """word -> BM25 term, filled on first sight of a word ('' for a stop word)."""

    def __init__(self, stopwords: frozenset[str], stem: Any) -> None:
        super().__init__()
        self.stopwords = stopwords
        self.stem = stem

    def __missing__(self, word: str) -> str:
        term = "" if word in self.stopwords else (self.stem(word) if self.stem else word)
        self[word] = term
        return term


class Analyzer:
    """Text -> BM25 terms for one `BM25Settings`; each distinct word is looked at once."""

    def __init__(self, settings: BM25Settings) -> None:
        from bm25s.stopwords import STOPWORDS_EN  # Lucene's English stop-word list

        stopwords = frozenset(STOPWORDS_EN) if settings.stopwords == "english" else frozenset()
        stem = None
        if settings.stemmer == "snowball":
            try:
                import Stemmer  # PyStemmer: the Snowball stemmers in C
            except ImportError as exc:
                raise RagIndexError(
                    "BM25 with stemmer 'snowball' needs PyStemmer: run `pip install PyStemmer`, "
                    "or set bm25: {stemmer: none} in the config"
                ) from exc
            stem = Stemmer.Stemmer("english").stemWord
        self._terms = _Terms(stopwords, stem)

    def __call__(self, text: str) -> list[str]:
        return [t for t in map(self._terms.__getitem__, _WORD.findall(text.lower())) if t]


def tokenize(text: str, settings: BM25Settings | None = None) -> list[str]:
    """The BM25 terms of `text` (default settings: lowercased, stop words dropped, stemmed)."""
    return Analyzer(settings or BM25Settings())(text)
