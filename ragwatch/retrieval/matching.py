"""Which retrieved chunks are relevant: a sample's labels matched against a ranking.

Relevance comes from each sample's `RelevantItem`s (chunk id, document path, URL or reference text,
with a grade). A retrieved chunk is matched against them (`MatchSettings`); each relevant item is
credited at most once, at the first retrieved chunk that matches it, so several chunks of one
relevant document count once and recall stays <= 1. `CorpusLabels` tells a label that can never
match (it names nothing in the index) from a retrieval miss.

Example:
    >>> judgement = judge(sample, hits, MatchSettings(on="document"))
    >>> judgement.gains  # the grade credited at each rank, 0 when not relevant
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ragwatch.types import Chunk, EvalSample, RelevantItem, SearchHit

MatchOn = Literal["auto", "chunk_id", "document", "url", "text"]
RankUnit = Literal["auto", "document", "chunk"]
# Warn when more than this share of the checked labels matches nothing in the index.
UNMATCHED_WARNING_SHARE = 0.5


class MatchSettings(BaseModel):
    """How a retrieved chunk is matched against a sample's relevant items.

    `on="auto"` uses one kind per sample, the first it carries of: document/url, chunk_id, text (a
    synthetic pair names both its chunk and its document; counting both would halve recall). A
    fixed kind ignores the other items.
    `url_rewrites` are plain string replacements applied in order to a URL (or document path)
    before it is normalized, e.g. `[("https://docs.zenml.io/v/docs/", ""), ("stack-components/",
    "component-guide/")]`. `aliases` maps the path of a copy to the source that holds the same
    content in the index (e.g. a duplicate the loader skipped), so a label naming the copy matches
    chunks of the kept file. With `on="text"` (or auto and no items at all) the sample's
    `reference_contexts` are used as text items too.
    `rank_unit` is what is ranked: `document` scores each document once, at the rank of its best
    chunk (MaxP); `chunk` scores the chunk ranking as it is; `auto` ranks documents for samples
    whose labels are documents/URLs and chunks otherwise.
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    on: MatchOn = "auto"
    """Which label kind is matched: auto (one per question: document/url, chunk_id, text), or a fixed one."""
    rank_unit: RankUnit = "auto"
    """Rank documents (each at its best chunk), chunks, or auto (documents for document/URL labels)."""
    url_rewrites: list[tuple[str, str]] = Field(default_factory=list)
    """`[old, new]` string replacements applied in order to URLs and document paths before matching."""
    aliases: dict[str, str] = Field(default_factory=dict)
    """Path of a copy -> the indexed file that holds the same content."""
    text_overlap: float = 0.5
    """Share of tokens a chunk and a text label must share (either way) to match."""

    @field_validator("text_overlap")
    @classmethod
    def _overlap_in_range(cls, value: float) -> float:
        if not 0.0 < value <= 1.0:
            raise ValueError(f"text_overlap must be in (0, 1], got {value}: it is a share of tokens")
        return value


_TOKEN = re.compile(r"\w+")
DOCUMENT_EXTENSIONS = (".md", ".mdx", ".markdown", ".html", ".htm", ".xhtml", ".txt", ".pdf", ".docx", ".rst", ".ipynb")


@lru_cache(maxsize=65536)
def normalize_path(value: str) -> tuple[str, ...]:
    """Path segments for document/URL matching: lowercase, no scheme/host/query, no extension; a
    folder's page (`x/README.md`, `x/index.html`, GitBook's `x/x.md`) becomes `x`.
    `normalize_path("https://x.io/How-To/Setup.md#a")` is `("how-to", "setup")`."""
    text = value.strip().replace("\\", "/")
    if "://" in text:
        text = urlsplit(text).path
    text = text.split("#", 1)[0].split("?", 1)[0].lower()
    segments = [s for s in text.split("/") if s and s != "."]
    if segments:
        last = segments[-1]
        for ext in DOCUMENT_EXTENSIONS:
            if last.endswith(ext) and len(last) > len(ext):
                last = last[: -len(ext)]
                break
        segments[-1] = last
        if segments[-1] in ("readme", "index") or (len(segments) > 1 and segments[-1] == segments[-2]):
            segments.pop()
    return tuple(segments)


def label_paths(value: str, match: MatchSettings) -> list[tuple[str, ...]]:
    """The normalized paths a document/URL label stands for: its own, plus the kept source of any
    alias (a copy) it names."""
    own = normalize_path(rewrite(value, match.url_rewrites))
    paths = [own]
    for copy, kept in match.aliases.items():
        if paths_match(own, normalize_path(rewrite(copy, match.url_rewrites))):
            paths.append(normalize_path(rewrite(kept, match.url_rewrites)))
    return paths


def rewrite(value: str, rewrites: Sequence[tuple[str, str]]) -> str:
    """Apply the `(old, new)` string replacements in order."""
    for old, new in rewrites:
        value = value.replace(old, new)
    return value


def paths_match(reference: tuple[str, ...], source: tuple[str, ...]) -> bool:
    """Path-suffix equality: the shorter path equals the tail of the longer one (so a corpus
    prefix like `docs/book/` on either side does not matter). Empty paths never match."""
    if not reference or not source:
        return False
    n = min(len(reference), len(source))
    return reference[-n:] == source[-n:]


@lru_cache(maxsize=65536)
def _tokens(text: str) -> frozenset[str]:
    return frozenset(t.lower() for t in _TOKEN.findall(text))


def text_overlap(reference: str, chunk_text: str) -> float:
    """Share of the reference's tokens found in the chunk, or of the chunk's in the reference,
    whichever is larger (a chunk may hold the reference, or be a piece of it)."""
    ref, chunk = _tokens(reference), _tokens(chunk_text)
    if not ref or not chunk:
        return 0.0
    common = len(ref & chunk)
    return max(common / len(ref), common / len(chunk))


@dataclass
class Label:
    """One usable relevant item, prepared for matching."""

    item: RelevantItem
    kind: str
    paths: list[tuple[str, ...]] = field(default_factory=list)
    text: str = ""


def sample_labels(sample: EvalSample, match: MatchSettings) -> list[Label]:
    items = [it for it in sample.relevant if it.grade > 0]
    if match.on != "auto":
        items = [it for it in items if it.kind == match.on]
    else:
        # A sample may name the same ground truth twice (its chunk id and its document); counting
        # both would halve recall. Auto uses one kind per sample, pages first, so that synthetic and
        # imported (URL-labelled) questions are scored at the same granularity.
        for kinds in (("document", "url"), ("chunk_id",), ("text",)):
            chosen = [it for it in items if it.kind in kinds]
            if chosen:
                items = chosen
                break
    if match.on == "text" or (match.on == "auto" and not sample.relevant):
        known = {it.value for it in items if it.kind == "text"}
        items += [RelevantItem(kind="text", value=c) for c in sample.reference_contexts if c not in known]
    labels = []
    for it in items:
        if it.kind in ("document", "url"):
            labels.append(Label(it, it.kind, paths=label_paths(it.value, match)))
        else:
            labels.append(Label(it, it.kind, text=it.value))
    return labels


def matches_label(label: Label, chunk: Chunk, match: MatchSettings) -> bool:
    if label.kind == "chunk_id":
        return chunk.id == label.text
    if label.kind == "text":
        return text_overlap(label.text, chunk.text) >= match.text_overlap
    source = normalize_path(rewrite(chunk.source, match.url_rewrites))
    return any(paths_match(path, source) for path in label.paths)


@dataclass
class Judgement:
    """The relevance of one ranking: the grade credited at each position (0 = not relevant) and the
    grades of all judged relevant items (the recall denominator and the ideal ranking)."""

    gains: list[float]
    relevant_grades: list[float]
    credited: list[int | None] = field(default_factory=list)  # index into the labels, per position


def judge(sample: EvalSample, hits: Sequence[SearchHit], match: MatchSettings | None = None) -> Judgement:
    """Match a ranking against a sample's labels; each label is credited at most once (its first
    matching chunk); a chunk matching several labels takes the highest-graded one still open."""
    match = match or MatchSettings()
    return judge_labels(sample_labels(sample, match), hits, match)


def judge_labels(labels: Sequence[Label], hits: Sequence[SearchHit], match: MatchSettings) -> Judgement:
    open_labels = set(range(len(labels)))
    gains: list[float] = []
    credited: list[int | None] = []
    for hit in hits:
        best: int | None = None
        for i in sorted(open_labels):
            if matches_label(labels[i], hit.chunk, match) and (
                best is None or labels[i].item.grade > labels[best].item.grade
            ):
                best = i
        if best is None:
            gains.append(0.0)
        else:
            open_labels.discard(best)
            gains.append(labels[best].item.grade)
        credited.append(best)
    return Judgement(gains, [lb.item.grade for lb in labels], credited)


class CorpusLabels:
    """What an index holds, to tell a label that can never match from a retrieval miss.

    Document/URL labels are checked against the chunk sources, chunk ids against the chunk ids and
    text labels against the chunk texts (with the same overlap rule as matching).
    """

    def __init__(self, match: MatchSettings, sources: Iterable[str] = (), chunks: Sequence[Chunk] | None = None):
        self.match = match
        self.chunks = list(chunks) if chunks is not None else None
        all_sources = list(sources) + ([c.source for c in self.chunks] if self.chunks else [])
        self.paths = {normalize_path(rewrite(s, match.url_rewrites)) for s in all_sources} - {()}
        # every tail of every source path: a label path equal to one of them suffix-matches
        self._tails = {p[i:] for p in self.paths for i in range(len(p))}
        self.ids = {c.id for c in self.chunks} if self.chunks is not None else None

    def _path_known(self, path: tuple[str, ...]) -> bool:
        return bool(path) and (path in self._tails or any(path[i:] in self.paths for i in range(len(path))))

    def holds(self, label: Label) -> bool | None:
        """Whether anything in the index can match `label`; None when the corpus cannot tell."""
        if label.kind in ("document", "url"):
            return any(self._path_known(p) for p in label.paths) if self.paths else None
        if self.chunks is None:
            return None
        if label.kind == "chunk_id":
            return label.text in (self.ids or set())
        return any(text_overlap(label.text, c.text) >= self.match.text_overlap for c in self.chunks)

    def looks_like(self, value: str) -> str | None:
        """The relevance kind a value that matched nothing would match as, if any."""
        if self._path_known(normalize_path(rewrite(value, self.match.url_rewrites))):
            return "url" if "://" in value else "document"
        if self.ids is not None and value in self.ids:
            return "chunk_id"
        if len(_TOKEN.findall(value)) >= 8 and self.chunks is not None and any(
            text_overlap(value, c.text) >= self.match.text_overlap for c in self.chunks
        ):
            return "text"
        return None


def unmatched_warning(unmatched: Sequence[Label], checked: int, corpus: CorpusLabels) -> str | None:
    """A warning when most labels match nothing in the index, naming the kind used and a likely fix."""
    if not checked or len(unmatched) / checked <= UNMATCHED_WARNING_SHARE:
        return None
    used = ", ".join(f"{k} ({n})" for k, n in Counter(lb.kind for lb in unmatched).most_common())
    guesses = Counter(g for g in (corpus.looks_like(lb.item.value) for lb in unmatched[:200]) if g)
    examples = ", ".join(repr(lb.item.value[:60]) for lb in unmatched[:3])
    text = (f"{len(unmatched)} of {checked} relevance labels ({len(unmatched) / checked:.0%}) match nothing "
            f"in the index (relevance kind used: {used}; e.g. {examples}).")
    if guesses:
        likely, n = guesses.most_common(1)[0]
        text += (f" {n} of them match as `{likely}` labels: set `relevance_kind: {likely}` in the import "
                 "config (or `relevant_kind` per row), or `evaluate.retrieval.match.on`.")
    else:
        text += (" They match under no relevance kind either: check that the labels name files of this "
                 "corpus (paths relative to a corpus folder, or file names) and the `url_rewrites`.")
    return text


def unmatched_labels(
    samples: Sequence[EvalSample], corpus_sources: Iterable[str], match: MatchSettings | None = None
) -> dict[str, list[str]]:
    """Sample id -> its document/URL labels that match no source of the corpus (after rewrites)."""
    match = match or MatchSettings()
    corpus = CorpusLabels(match, corpus_sources)
    out: dict[str, list[str]] = {}
    for s in samples:
        bad = [
            it.value for it in s.relevant
            if it.kind in ("document", "url")
            and corpus.holds(Label(it, it.kind, paths=label_paths(it.value, match))) is False
        ]
        if bad:
            out[s.id] = bad
    return out
