"""Context sentences and lexical support: what the evidence-first verifier shows, cites and checks.

The contexts of an answer are cut into numbered sentences (a fenced code block is one unit, so a
command is cited whole). For each statement the verifier shows only the sentences that share the
most words with it (`best_sentences`), which is what a careful reader looks at first and costs a
small judge a fraction of the tokens of all contexts. The lexical measures are model-free:
`bigram_support` (share of the statement's word pairs found in the contexts: on the default's own
answers it ranks supported above unsupported statements about as well as careful readers' agreement
allows a 1.5B judge to), and `missing_terms` (numbers, code identifiers and names of the statement
that the cited sentences do not contain).

Example:
    >>> sents = context_sentences(["ZenML runs pipelines. Steps are cached by default."])
    >>> [s.text for s in best_sentences("Steps are cached.", sents, 1)]
    ['Steps are cached by default.']
    >>> round(bigram_support("Steps are cached by default.", ["Steps are cached by default."]), 2)
    1.0
    >>> sorted(missing_terms("Set `max_retries=5`.", ["Set max_retries=3."]))
    ['5']
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from ragwatch.corpus.chunking import split_sentences
from ragwatch.judges.faithfulness.verify import split_text  # the window verifier's own cutting rule

SENTENCE_CHARS = 360  # a longer sentence or code block is cut into pieces of about this size
_FENCE = re.compile(r"^\s*(```|~~~)")
_WORD = re.compile(r"[A-Za-z0-9_]+")
# a term a statement cannot get wrong: digits, code identifiers (snake_case, dotted, dashed, --flags),
# CamelCase names, and anything in backticks
_TERM = re.compile(r"[A-Za-z0-9_]+(?:[.\-/:=][A-Za-z0-9_]+)*")
_CAMEL = re.compile(r"[A-Z][a-z]+[A-Z][a-z]")
STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "for", "from", "has", "have", "in", "into", "is",
    "it", "its", "of", "on", "or", "that", "the", "their", "then", "there", "these", "this", "to", "was",
    "were", "will", "with", "you", "your", "which", "what", "when", "how", "do", "does", "not",
))


@dataclass(frozen=True)
class Sentence:
    """One numbered sentence of an answer's contexts (`id` from 1, `passage` from 1)."""

    id: int
    text: str
    passage: int


def words(text: str) -> list[str]:
    """Lower-cased word tokens (letters, digits, underscores), the unit every lexical measure uses."""
    return [w.lower() for w in _WORD.findall(text)]


def _units(passage: str) -> list[str]:
    """Sentences of one passage; a fenced code block stays one unit."""
    units: list[str] = []
    prose: list[str] = []
    code: list[str] | None = None
    for line in passage.splitlines():
        if _FENCE.match(line):
            if code is None:
                units += split_sentences("\n".join(prose))
                prose, code = [], []
            else:
                units.append("\n".join(code))
                code = None
            continue
        (prose if code is None else code).append(line)
    if code is not None:  # a block cut off by the chunker
        units.append("\n".join(code))
    units += split_sentences("\n".join(prose))
    return [u.strip() for u in units if words(u)]


def _pieces(text: str, limit: int = SENTENCE_CHARS) -> list[str]:
    if len(text) <= limit:
        return [text]
    return [p.strip() for p in split_text(text, limit) if p.strip()]


def context_sentences(contexts: Sequence[str]) -> list[Sentence]:
    """The contexts as numbered sentences, in order (ids from 1)."""
    out: list[Sentence] = []
    for passage_no, passage in enumerate(contexts, start=1):
        for unit in _units(passage):
            for piece in _pieces(unit):
                out.append(Sentence(id=len(out) + 1, text=piece, passage=passage_no))
    return out


def _bigrams(tokens: Sequence[str]) -> set[tuple[str, str]]:
    return set(pairwise(tokens))


def best_sentences(statement: str, sentences: Sequence[Sentence], k: int) -> list[Sentence]:
    """The `k` sentences that share the most with `statement` (idf-weighted words, plus word pairs),
    returned in context order. Ties keep the earlier sentence."""
    if k <= 0 or not sentences:
        return []
    tokenized = [words(s.text) for s in sentences]
    df = Counter(w for toks in tokenized for w in set(toks))
    n = len(sentences)
    wanted = {w for w in words(statement) if w not in STOPWORDS}
    pairs = _bigrams(words(statement))

    def score(toks: list[str]) -> float:
        present = set(toks)
        unigram = sum(math.log(1 + n / df[w]) for w in wanted if w in present)
        return unigram + 2.0 * len(pairs & _bigrams(toks))

    ranked = sorted(range(n), key=lambda i: (-score(tokenized[i]), i))[:k]
    return [sentences[i] for i in sorted(ranked)]


def bigram_support(statement: str, contexts: Sequence[str]) -> float:
    """Share of the statement's word pairs that occur in the contexts (a one-word statement: its word)."""
    tokens = words(statement)
    context_tokens = [w for text in contexts for w in words(text)]
    if len(tokens) < 2:
        return float(bool(tokens) and tokens[0] in set(context_tokens))
    pairs = list(pairwise(tokens))
    found = _bigrams(context_tokens)
    return sum(p in found for p in pairs) / len(pairs)


def key_terms(statement: str) -> set[str]:
    """Numbers, code identifiers and CamelCase names of a statement, lower-cased.

    Inline code (`...` on one line, not a ``` fence) counts whole; elsewhere a term with a digit or an
    underscore, or a CamelCase name (`BaseMaterializer`, not an acronym such as `APIs`).
    """
    text = re.sub(r"```\w*|\[\d+\]", " ", statement)  # code fences; citation markers such as [2]
    terms: set[str] = set()
    for quoted in re.findall(r"`([^`\n]{1,80})`", text):
        terms.update(t.lower() for t in _TERM.findall(quoted) if len(t) > 1 or t.isdigit())
    for term in _TERM.findall(text):
        if any(c.isdigit() for c in term) or "_" in term or _CAMEL.search(term):
            terms.add(term.lower())
    return terms


def missing_terms(statement: str, texts: Sequence[str]) -> set[str]:
    """Key terms of `statement` (and their word parts) that none of `texts` contains."""
    haystack = " ".join(texts).lower()
    have = set(words(haystack))
    missing = set()
    for term in key_terms(statement):
        if term in haystack:
            continue
        parts = words(term)
        if parts and all(p in have for p in parts) and not any(c.isdigit() for c in term):
            continue  # the same identifier written another way (`a.b` vs `a b`)
        missing.update([p for p in parts if p not in have] or [term])
    return missing


def makes_no_claim(statement: str) -> bool:
    """Markup or punctuation with fewer than two words: nothing a reader could check."""
    stripped = re.sub(r"\{%.*?%\}|<[^>]+>|```\w*", " ", statement)
    return len([w for w in words(stripped) if w not in STOPWORDS]) < 2
