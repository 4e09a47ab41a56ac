"""Split documents into chunks sized in the embedding model's tokens, with stable ids.

A document is cut into small "units" (sentences, lines, or words and character pieces when a
sentence alone is too long), each counted once with `count_tokens`; units are then packed greedily
into chunks. When a chunk is full it ends at the strongest boundary in its second half (Markdown
heading > paragraph > line > sentence > word), and the next chunk starts with up to
`overlap_tokens` of the previous one. A new Markdown section starts a new chunk without overlap
once the current chunk is half full.

Example:
    >>> doc = Document(id="d", source="a.md", text="# A\\n\\nOne two three.", format="markdown")
    >>> chunks = chunk_documents([doc], ChunkingSettings(max_tokens=50), lambda t: len(t.split()))
    >>> [(c.text, c.metadata["headings"]) for c in chunks]
    [('# A\\n\\nOne two three.', ['A'])]
"""

from __future__ import annotations

import bisect
import hashlib
import re
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragwatch.types import Chunk, Document

TokenCounter = Callable[[str], int]

# Boundary strength at the start of a unit: the chunker prefers to cut at the strongest one.
HEADING, PARAGRAPH, LINE, SENTENCE, WORD, PIECE = 5, 4, 3, 2, 1, 0

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
# Whitespace after . ! ? (or after a closing quote or bracket that follows one): the split point.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"')\]])\s+")
_WORD = re.compile(r"\S+")
# Formats whose text carries Markdown headings (HTML and DOCX are converted to that shape on load).
HEADED_FORMATS = frozenset({"markdown", "html", "docx"})
_HEADING = re.compile(r"^[ \t]{0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)")
_MIN_FILL = 0.5  # a chunk is cut at a preferred boundary only once it is at least this full
_MAX_REPACKS = 6


class ChunkingSettings(BaseModel):
    """How big chunks are, in tokens of the embedding model (see `Embedder.count_tokens`)."""

    model_config = ConfigDict(extra="forbid")

    max_tokens: int = Field(200, gt=0, description="largest chunk, in embedding-model tokens")
    overlap_tokens: int = Field(30, ge=0, description="tokens a chunk repeats from the previous one")
    allow_oversize: bool = Field(
        False, description="allow max_tokens above the embedding window (the tail is not embedded)"
    )
    max_document_share: float = Field(
        0.25,
        gt=0,
        le=1,
        description="warn when one document yields more than this share of all chunks (corpora of 5+ documents)",
    )

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkingSettings:
        if self.overlap_tokens >= self.max_tokens:
            raise ValueError(
                f"overlap_tokens ({self.overlap_tokens}) must be smaller than max_tokens "
                f"({self.max_tokens}); lower overlap_tokens"
            )
        return self


@dataclass(slots=True)
class _Unit:
    start: int
    end: int
    strength: int
    tokens: int


def chunk_documents(
    documents: Sequence[Document],
    settings: ChunkingSettings,
    count_tokens: TokenCounter,
    max_window: int | None = None,
) -> list[Chunk]:
    """Chunk every document, in order. `max_window` is the embedding model's input limit in tokens.

    `count_tokens` must count the whole text (a tokenizer that truncates makes every chunk look
    small enough). Chunk metadata: `chunk_index`, `n_tokens` (counted on the chunk text), `title`
    (the document's), `page` and `page_end` (PDF, 1-based; `page_end` only when the chunk spans
    pages), `headings` (Markdown: the heading path in force where the chunk starts).
    Raises ValueError when `settings.max_tokens > max_window` and `allow_oversize` is not set.
    """
    limit = _check_limits(settings, count_tokens, max_window)
    chunks: list[Chunk] = []
    for doc in documents:
        chunks.extend(_chunk_one(doc, settings, count_tokens, limit))
    _warn_oversize(chunks, max_window, settings.allow_oversize)
    return chunks


class ChunkSpread(BaseModel):
    """How chunks spread over documents: the largest contributors, and a warning when one dominates."""

    top: list[tuple[str, int]]  # (source, chunks), at most 10, largest first
    warnings: list[str] = Field(default_factory=list)


def chunk_spread(chunks: list[Chunk], *, max_share: float = 0.25, top: int = 10) -> ChunkSpread:
    """Chunks per document, largest first, and a warning per document above `max_share` of all chunks.

    One dominating file (a dump, a log, a concatenated export) skews every retrieval figure towards
    itself; corpora of fewer than 5 documents are not warned about, since a share means little there.

    Example:
        >>> chunk_spread([]).top
        []
    """
    counts = Counter(c.source for c in chunks)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    total = len(chunks)
    warnings_: list[str] = []
    if len(counts) >= 5:
        warnings_ = [
            f"{source} yields {n} of {total} chunks ({100 * n / total:.0f}%, above the "
            f"{100 * max_share:.0f}% set by chunking.max_document_share): retrieval figures will be dominated "
            "by it; check that it belongs in the corpus"
            for source, n in ranked
            if n / total > max_share
        ]
    return ChunkSpread(top=ranked[:top], warnings=warnings_)


def chunk_document(
    document: Document,
    settings: ChunkingSettings,
    count_tokens: TokenCounter,
    max_window: int | None = None,
) -> list[Chunk]:
    """Chunk one document (see `chunk_documents`)."""
    return chunk_documents([document], settings, count_tokens, max_window)


def chunk_id(source: str, start: int, text: str) -> str:
    """Stable id of a chunk: a hash of its document source, start offset and text."""
    return hashlib.sha256(f"{source}\0{start}\0{text}".encode()).hexdigest()[:32]


# --- limits --------------------------------------------------------------------------------------


def _check_limits(settings: ChunkingSettings, count_tokens: TokenCounter, max_window: int | None) -> int:
    if max_window is not None and settings.max_tokens > max_window and not settings.allow_oversize:
        raise ValueError(
            f"chunking max_tokens ({settings.max_tokens}) exceeds the embedding model's window "
            f"({max_window} tokens): lower max_tokens to at most {max_window}, or set "
            "allow_oversize: true to accept that text past the window is not embedded"
        )
    overhead = count_tokens("")
    if overhead >= settings.max_tokens:
        raise ValueError(
            f"the token counter counts {overhead} tokens for an empty text (special tokens), "
            f"which leaves no room in max_tokens={settings.max_tokens}; raise max_tokens"
        )
    return settings.max_tokens


def _warn_oversize(chunks: list[Chunk], max_window: int | None, allow: bool) -> None:
    if max_window is None:
        return
    over = [c for c in chunks if c.metadata["n_tokens"] > max_window]
    why = "allow_oversize is set" if allow else "the tokenizer defeated the splitter"
    if over:
        lost = sum(c.metadata["n_tokens"] - max_window for c in over)
        total = sum(c.metadata["n_tokens"] for c in chunks)
        warnings.warn(
            f"{len(over)} of {len(chunks)} chunks exceed the embedding window of {max_window} tokens "
            f"({why}): their text past token {max_window} is not embedded, {lost} tokens "
            f"in all ({100 * lost / max(total, 1):.1f}% of the corpus); retrieval cannot find those parts",
            stacklevel=3,
        )


# --- one document --------------------------------------------------------------------------------


def _chunk_one(doc: Document, settings: ChunkingSettings, count: TokenCounter, limit: int) -> list[Chunk]:
    overhead = count("")

    def count_net(text: str) -> int:
        # Special tokens ([CLS], [SEP]) are paid once per chunk, not once per unit.
        return max(count(text) - overhead, 0)

    headed = doc.format in HEADED_FORMATS
    units = _units(doc.text, headed, count_net, limit - overhead)
    if not units:
        return []
    spans = _pack(units, 0, len(units), limit - overhead, settings.overlap_tokens)
    checked: list[tuple[int, int, int]] = []
    for lo, hi in spans:
        checked.extend(_verify(doc.text, units, lo, hi, limit, settings.overlap_tokens, count, overhead))

    headings = _heading_index(doc.text) if headed else None
    chunks = []
    for index, (lo, hi, n_tokens) in enumerate(checked):
        start, end = units[lo].start, units[hi - 1].end
        text = doc.text[start:end]
        chunks.append(
            Chunk(
                id=chunk_id(doc.source, start, text),
                document_id=doc.id,
                source=doc.source,
                text=text,
                start=start,
                end=end,
                metadata=_metadata(doc, start, end, index, n_tokens, headings),
            )
        )
    return chunks


def _units(text: str, markdown: bool, count: TokenCounter, budget: int) -> list[_Unit]:
    """Cut `text` into counted units no larger than `budget` tokens, covering all non-space text."""
    units: list[_Unit] = []
    in_fence = False
    for para_start, para_end in _spans_between(text, _PARAGRAPH_BREAK, 0, len(text)):
        strength = PARAGRAPH
        for line_start, line_end in _lines(text, para_start, para_end):
            line = text[line_start:line_end]
            if markdown and _FENCE.match(line):
                in_fence = not in_fence
            line_strength = HEADING if markdown and not in_fence and _HEADING.match(line) else strength
            for s_start, s_end in _spans_between(text, _SENTENCE_END, line_start, line_end):
                _add_unit(units, text, s_start, s_end, line_strength, count, budget)
                line_strength = SENTENCE
            strength = LINE
    return units


def _add_unit(
    units: list[_Unit], text: str, start: int, end: int, strength: int, count: TokenCounter, budget: int
) -> None:
    tokens = count(text[start:end])
    if tokens <= budget:
        units.append(_Unit(start, end, strength, tokens))
        return
    # Too long for one chunk: fall back to words, and to character pieces for a giant "word".
    for m in _WORD.finditer(text, start, end):
        w_start, w_end = m.span()
        w_tokens = count(text[w_start:w_end])
        if w_tokens <= budget:
            units.append(_Unit(w_start, w_end, strength, w_tokens))
        else:
            for p_start, p_end, p_tokens in _pieces(text, w_start, w_end, count, budget):
                units.append(_Unit(p_start, p_end, strength, p_tokens))
                strength = PIECE
        strength = WORD


def _pieces(text: str, start: int, end: int, count: TokenCounter, budget: int) -> list[tuple[int, int, int]]:
    """Split one long word into the longest character pieces that fit `budget` (binary search)."""
    pieces = []
    while start < end:
        lo, hi = start + 1, end  # find the largest cut in [lo, hi] whose piece fits
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if count(text[start:mid]) <= budget:
                lo = mid
            else:
                hi = mid - 1
        pieces.append((start, lo, count(text[start:lo])))
        start = lo
    return pieces


_LIST_MARKER = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)])\s+")


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, with the chunker's own rule (lines and list items count as breaks).

    Example:
        >>> split_sentences("ZenML runs pipelines. It tracks artifacts!\n- Steps are cached")
        ['ZenML runs pipelines.', 'It tracks artifacts!', 'Steps are cached']
    """
    sentences = []
    for line in text.splitlines():
        line = _LIST_MARKER.sub("", line).strip()
        sentences += [s.strip() for s in _SENTENCE_END.split(line) if s.strip()]
    return sentences


def _spans_between(text: str, sep: re.Pattern[str], start: int, end: int) -> list[tuple[int, int]]:
    """Non-blank spans of text[start:end] between matches of `sep`, trimmed of surrounding space."""
    spans = []
    pos = start
    for m in sep.finditer(text, start, end):
        spans.append((pos, m.start()))
        pos = m.end()
    spans.append((pos, end))
    return [t for s, e in spans if (t := _trim(text, s, e))]


def _lines(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans = []
    pos = start
    while pos < end:
        nl = text.find("\n", pos, end)
        stop = end if nl == -1 else nl
        if trimmed := _trim(text, pos, stop):
            spans.append(trimmed)
        pos = stop + 1
    return spans


def _trim(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


# --- packing -------------------------------------------------------------------------------------


def _pack(units: list[_Unit], lo: int, hi: int, budget: int, overlap: int) -> list[tuple[int, int]]:
    """Group units[lo:hi] into chunks of at most `budget` tokens; returns (first, end) index pairs.

    Each unit must fit `budget` on its own. Sizes add up unit counts: exact for a whitespace
    counter, an estimate for sub-word tokenizers (`_verify` checks the real count).
    """
    prefix = [0, *accumulate(u.tokens for u in units[lo:hi])]

    def size(a: int, b: int) -> int:  # tokens of units[a:b], absolute indices
        return prefix[b - lo] - prefix[a - lo]

    min_fill = budget * _MIN_FILL
    spans: list[tuple[int, int]] = []
    i, prev_end = lo, lo
    while i < hi:
        j, total, heading_cut = i, 0, False
        while j < hi:
            unit = units[j]
            if j > i and total + unit.tokens > budget:
                break
            if j > max(i, prev_end) and unit.strength == HEADING and total >= min_fill:
                heading_cut = True
                break
            total += unit.tokens
            j += 1
        end = j
        if j < hi and not heading_cut:
            # Full: end at the strongest boundary that keeps the chunk at least half full and adds
            # something new; on a tie the later boundary wins.
            best = (-1, j)
            for b in range(j, max(i, prev_end), -1):
                if size(i, b) < min_fill and b != j:
                    break
                best = max(best, (units[b].strength, b))
            end = best[1]
        spans.append((i, end))
        if end >= hi:
            break
        if units[end].strength == HEADING:
            nxt = end  # a new section starts fresh, without the previous section's tail
        else:
            nxt, carried = end, 0
            while nxt - 1 > i and carried + units[nxt - 1].tokens <= overlap:
                nxt -= 1
                carried += units[nxt].tokens
            while nxt < end and size(nxt, end + 1) > budget:  # the next chunk must fit a new unit
                nxt += 1
        i, prev_end = nxt, end
    return spans


def _verify(
    text: str,
    units: list[_Unit],
    lo: int,
    hi: int,
    limit: int,
    overlap: int,
    count: TokenCounter,
    overhead: int,
) -> list[tuple[int, int, int]]:
    """Count a packed chunk for real; re-pack it smaller while a sub-word tokenizer says it is too big."""
    n_tokens = count(text[units[lo].start : units[hi - 1].end])
    if n_tokens <= limit or hi - lo == 1:
        return [(lo, hi, n_tokens)]
    budget = limit - overhead
    for _ in range(_MAX_REPACKS):
        budget = max(1, budget * limit // n_tokens - 1)
        spans = _pack(units, lo, hi, budget, min(overlap, budget - 1))
        counted = [(a, b, count(text[units[a].start : units[b - 1].end])) for a, b in spans]
        if all(n <= limit or b - a == 1 for a, b, n in counted):
            return counted
        n_tokens = max(n for _, _, n in counted)
    return counted


# --- metadata ------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Headings:
    offsets: list[int]
    paths: list[list[str]]


def _heading_index(text: str) -> _Headings:
    """Offsets of Markdown headings (outside code fences) and the heading path in force after each."""
    offsets: list[int] = []
    paths: list[list[str]] = []
    stack: list[tuple[int, str]] = []
    in_fence = False
    pos = 0
    for line in text.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and (m := _HEADING.match(line)):
            level = len(m.group(1))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, m.group(2).strip()))
            offsets.append(pos)
            paths.append([title for _, title in stack])
        pos += len(line) + 1
    return _Headings(offsets, paths)


def _metadata(
    doc: Document, start: int, end: int, index: int, n_tokens: int, headings: _Headings | None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"chunk_index": index, "n_tokens": n_tokens}
    if title := doc.metadata.get("title"):
        meta["title"] = title
    if doc.page_starts:
        meta["page"] = bisect.bisect_right(doc.page_starts, start)
        last_page = bisect.bisect_right(doc.page_starts, end - 1)
        if last_page != meta["page"]:
            meta["page_end"] = last_page
    if headings is not None:
        h = bisect.bisect_right(headings.offsets, start) - 1
        meta["headings"] = headings.paths[h] if h >= 0 else []
    return meta
