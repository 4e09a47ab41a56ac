"""Where to read in an item's contexts: a hint before the person answers, the judge's place after.

`reading_hints` points at the two sentences sharing most words with a statement, from the statement
alone, so it gives nothing of the judge's verdict away. Once the item is labelled, `judge_pointer`
shows where the judge looked: the first sentence it cited (evidence verification), else the
sentence closest to the statement in the context window that decided (`judge_windows`, the
windows of the judge's own verifier).

Example:
    >>> reading_hints(["ZenML runs steps. Hooks run on failure."], "A hook runs when a step fails.")  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, Field

from ragwatch.statements import StatementVerdict

_WORD = re.compile(r"[a-z0-9]+")
# a sentence ends at . ! or ?, or at a line break unless the next line goes on in lower case (a
# hard-wrapped paragraph); code, lists and headings start their lines otherwise
_SENTENCE = re.compile(r"\S.*?(?:[.!?](?=[\s\"')\]]|$)|(?=\n(?![a-z]))|$)", re.S)
_STOP = frozenset(("a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "by", "with", "is", "are", "was",
                   "were", "be", "it", "its", "this", "that", "as", "at", "from", "can", "you", "your", "not",
                   "do", "does", "which", "what", "how", "when"))


class Pointer(BaseModel):
    """A place in the contexts: passage index and character span, and the judge window it lies in."""

    passage: int
    start: int
    end: int
    window: int | None = None
    window_passages: list[int] = Field(default_factory=list)


def judge_windows(passages: Sequence[str], max_chars: int) -> list[list[tuple[int, int, int]]]:
    """The context windows a statement-verifying judge read, as (passage, start, end) spans."""
    from ragwatch.judges.faithfulness.verify import context_window_spans

    return context_window_spans(passages, max_chars)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def closest_sentences(spans: Sequence[tuple[int, int, int]], passages: Sequence[str], statement: str,
                      reason: str = "", *, top: int = 1, min_shared: float = 1.0) -> list[Pointer]:
    """The `top` sentences within `spans` sharing most words with the statement (the judge's reason
    counts half), best first; none shares fewer than `min_shared`."""
    target, hint = _words(statement), _words(reason) - _words(statement)
    scored: list[tuple[float, int, int, int]] = []
    for p, start, end in spans:
        for m in _SENTENCE.finditer(passages[p], start, end):
            words = _words(m.group())
            score = len(words & target) + 0.5 * len(words & hint)
            if score >= min_shared:
                scored.append((-score, p, m.start(), m.end()))
    return [Pointer(passage=p, start=a, end=b) for _, p, a, b in sorted(scored)[:top]]


def reading_hints(passages: Sequence[str], statement: str) -> list[Pointer]:
    """Where to start reading for a statement: the two sentences sharing most of its words.

    Computed from the statement alone (never from the judge's output), so showing it before the
    person answers gives nothing of the judge's verdict away; it only saves a scan of the contexts.
    """
    spans = [(p, 0, len(text)) for p, text in enumerate(passages)]
    return closest_sentences(spans, passages, statement, top=2, min_shared=min(2.0, len(_words(statement))))


def judge_pointer(passages: Sequence[str], windows: Sequence[Sequence[tuple[int, int, int]]],
                  verdict: StatementVerdict) -> Pointer | None:
    """Where the judge looked for a statement: the first sentence it cited, else the sentence closest
    to the statement in the window that decided (every window when the verdict names none)."""
    pointer = _cited_pointer(passages, verdict.evidence_text)
    if pointer is not None:
        return pointer
    w = verdict.window
    spans = windows[w - 1] if w is not None and 0 < w <= len(windows) else [
        span for window in windows for span in window]
    found = closest_sentences(spans, passages, verdict.statement, verdict.reason)
    return found[0].model_copy(update={"window": w, "window_passages": sorted({p for p, _, _ in spans})}
                               ) if found else None


def _cited_pointer(passages: Sequence[str], cited: Sequence[str]) -> Pointer | None:
    """Where the first cited sentence sits in the passages (None when nothing was cited or found)."""
    for text in cited:
        for p, passage in enumerate(passages):
            at = passage.find(text)
            if at >= 0:
                return Pointer(passage=p, start=at, end=at + len(text), window_passages=[p])
    return None
