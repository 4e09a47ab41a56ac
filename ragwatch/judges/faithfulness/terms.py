"""The terms of a statement a reader checks at a glance, by kind, and which of them no context holds.

Five kinds, each found in the statement and looked up in the retrieved contexts:

- `number` and `identifier`: the key terms of `evidence.key_terms` (a term with a digit; a code
  identifier: snake_case, CamelCase, anything in backticks), looked up as `evidence.missing_terms` does
  (a substring of the contexts, or every word part of an identifier);
- `name`: a capitalised word that does not start a sentence, list item or heading (and is not a
  function word), or starts one as the subject of a verb (`Airflow provides`), and a run of such
  words as one multi-word name;
- `quantity`: a number with a unit (`10 seconds`, `7B`, `5 GB`) whose number the contexts hold, but
  never with that unit;
- `quoted`: a string in quotes ('...', "...", typographic quotes) outside inline code.

Names, quantities and quoted strings are looked up word by word, case-insensitive, tolerant to plural
and possessive endings and to hyphenation (`pre-trained`, `pretrained` and `pre trained` are the same),
and to identifiers written with underscores or in CamelCase (`api_key` holds `API`). A last word cut
off by the end of the statement (no closing punctuation) matches the start of a context word.

Example:
    >>> absent = absent_terms("The purpose of Airflow is to retrieve documents.", ["RAG retrieves documents."])
    >>> absent["name"], absent["number"]
    (['Airflow'], [])
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from ragwatch.judges.faithfulness.evidence import key_terms, missing_terms

TermKind = Literal["number", "identifier", "name", "quantity", "quoted"]
KINDS: tuple[TermKind, ...] = ("number", "identifier", "name", "quantity", "quoted")

_WORD = re.compile(r"[A-Za-z0-9]+")
_NUMBER = r"\d+(?:[.,]\d+)*"
UNITS = frozenset((
    "ms", "s", "sec", "secs", "second", "seconds", "min", "mins", "minute", "minutes", "h", "hr", "hrs", "hour",
    "hours", "day", "days", "week", "weeks", "month", "months", "year", "years", "b", "k", "m", "bn", "kb",
    "mb", "gb", "tb", "kib", "mib", "gib", "tib", "byte", "bytes", "bit", "bits", "%", "percent", "token",
    "tokens", "epoch", "epochs", "gpu", "gpus", "cpu", "cpus", "core", "cores", "node", "nodes", "replica",
    "replicas", "worker", "workers", "times", "retries", "attempts", "parameters", "params", "x", "px", "hz",
    "khz", "mhz", "ghz", "mbps", "gbps", "usd", "dollars",
))
# capitalised, yet not a name: sentence words a heading or a list item capitalises
FUNCTION_WORDS = frozenset((
    "a", "an", "the", "this", "that", "these", "those", "your", "our", "my", "their", "its", "it", "we", "you",
    "they", "i", "if", "in", "on", "for", "to", "of", "and", "or", "but", "with", "by", "as", "at", "from",
    "then", "next", "finally", "first", "second", "third", "also", "each", "all", "any", "some", "no", "not",
    "yes", "there", "here", "when", "where", "what", "which", "who", "how", "why", "is", "are", "be", "do",
    "does", "can", "will", "note", "example", "step", "replace", "however", "additionally", "once", "after",
    "before", "use", "using", "run", "install", "ensure", "make", "set", "add", "create", "see", "about",
))
_AUXILIARIES = frozenset(("is", "are", "was", "were", "has", "have", "can", "will", "would", "should", "must", "does",
                          "do", "may", "might", "could", "also", "automatically", "only"))
# where a sentence (or a list item, heading or code block) starts: the next word is capitalised anyway
_START = frozenset((".", "!", "?", ":", ";", "\n", "*", "#", "-", "•", ">", "|", "```"))


def _stem(word: str) -> str:
    """The same crude stem for the statement and the contexts: plural endings off."""
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith("es") and w[:-2].endswith(("s", "x", "z", "ch", "sh")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def _tokens(text: str) -> list[str]:
    text = re.sub(r"(\w)['’]s\b", r"\1", text)  # possessive
    return [_stem(w) for w in _WORD.findall(text)]


class ContextWords:
    """The contexts' words (identifiers also split at underscores and case changes), for lookups that
    tolerate plural, possessive and hyphenation."""

    def __init__(self, texts: Sequence[str]) -> None:
        joined = "\n".join(texts)
        parts = re.sub(r"_", " ", joined) + "\n" + re.sub(r"([a-z])([A-Z])", r"\1 \2", joined)
        self.tokens = [*_tokens(joined), "\n", *_tokens(parts)]
        self.spaced = " " + " ".join(self.tokens) + " "
        self.squashed = "".join(self.tokens)
        starts, ends, offset = set(), set(), 0
        for token in self.tokens:
            starts.add(offset)
            offset += len(token)
            ends.add(offset)
        self.starts, self.ends = starts, ends

    def holds(self, term: str, *, prefix: bool = False) -> bool:
        """Whether the contexts say `term` (its words in order; hyphenated, joined or apart). With `prefix`,
        its last word may be the start of a context word (the statement was cut off inside it)."""
        words = _tokens(term)
        if not words:
            return True
        if f" {' '.join(words)} " in self.spaced:
            return True
        if prefix and f" {' '.join(words)}" in self.spaced:
            return True
        squashed = "".join(words)
        at = self.squashed.find(squashed)
        while at != -1:  # joined or split differently, aligned on word boundaries
            if at in self.starts and (prefix or at + len(squashed) in self.ends):
                return True
            at = self.squashed.find(squashed, at + 1)
        return False


def _prose(statement: str) -> str:
    """The statement without inline code, links, markup and escapes: where names, numbers and quotes are read."""
    text = statement.replace("\\_", "_")
    text = re.sub(r"`[^`\n]{1,80}`", " ", re.sub(r"```\w*", " ``` ", text))
    text = re.sub(r"https?://\S+|\]\([^)]*\)|<[^>\n]*>|\{%.*?%\}|\$\{[^}]*\}", " ", text)
    return re.sub(r"\[\d+\]", " ", text)  # citation markers


_QUOTED = re.compile(r"(?<![\w])[\"“'‘]([^\"”'’\n]{2,80})[\"”'’](?![\w])")
_QUANTITY = re.compile(r"(?<![\w.])(" + _NUMBER + r")\s?(%|[A-Za-z]+\b)")


def _subject_verb(word: str) -> bool:
    """A word that says the word before it is the subject of a sentence (`X provides`, `X is`)."""
    w = word.lower()
    return w in _AUXILIARIES or (len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is", "ous")))


def names(statement: str) -> list[str]:
    """Capitalised words that do not start a sentence, list item or heading (unless a verb follows them:
    `Airflow provides ...`), and runs of them (in order)."""
    prose = _QUOTED.sub(" ", _prose(statement))
    tokens = list(re.finditer(r"```|[A-Za-z][A-Za-z0-9]*(?:['’-][A-Za-z0-9]+)*|[.!?:;\n*#•>|(\-]|\d+\.?|\S", prose))
    out: list[str] = []
    run: list[str] = []
    start = True
    for i, m in enumerate(tokens):
        tok = m.group(0)
        if not tok[0].isalpha():
            if len(run) > 1:
                out.append(" ".join(run))
            run = []
            start = tok in _START or (tok[0].isdigit() and tok.endswith("."))
            continue
        follows_code = prose[max(0, m.start() - 1):m.start()] == "_" or prose[m.end():m.end() + 1] == "_"
        after = tokens[i + 1].group(0) if i + 1 < len(tokens) else ""
        named = not start or (after[:1].islower() and _subject_verb(after) and not tok.lower().endswith("ing"))
        if tok[0].isupper() and named and len(tok) > 1 and tok.lower() not in FUNCTION_WORDS and not follows_code:
            out.append(tok)
            run.append(tok)
        else:
            if len(run) > 1:
                out.append(" ".join(run))
            run = []
        start = False
    if len(run) > 1:
        out.append(" ".join(run))
    return list(dict.fromkeys(out))


def quantities(statement: str) -> list[tuple[str, str]]:
    """(number, unit) pairs of the statement, the unit one of `UNITS`."""
    return [(m.group(1), m.group(2)) for m in _QUANTITY.finditer(_prose(statement))
            if m.group(2).lower() in UNITS]


def quoted(statement: str) -> list[str]:
    text = re.sub(r"`[^`\n]{1,80}`", " ", statement)
    return list(dict.fromkeys(q.strip() for q in _QUOTED.findall(text) if q.strip()))


def absent_terms(statement: str, contexts: Sequence[str]) -> dict[TermKind, list[str]]:
    """Per kind, the statement's terms that no context holds (sorted; every kind present, maybe empty)."""
    index = ContextWords(contexts)
    cut_off = not re.search(r"[.!?:;)\]`'\"”*]\s*$", statement)
    last = _tokens(statement)[-1:] if cut_off else []
    missing = missing_terms(statement, contexts)  # the words of number/identifier terms the contexts lack
    terms = key_terms(statement)
    numbers = {t for t in missing if any(c.isdigit() for c in t)}
    out: dict[TermKind, list[str]] = {
        "number": sorted(numbers),
        "identifier": sorted(missing - numbers),
        "name": sorted(n for n in names(statement) if n.lower() not in terms
                       and not index.holds(n, prefix=bool(last) and _tokens(n)[-1:] == last)),
        "quantity": sorted(f"{n} {u}" for n, u in dict.fromkeys(quantities(statement))
                           if n not in missing and not index.holds(f"{n} {u}")),
        "quoted": sorted(q for q in quoted(statement) if not index.holds(q)),
    }
    return out
