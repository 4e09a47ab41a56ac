"""Retrieval metrics: which retrieved chunks (or documents) are relevant, and how well each ranking did.

Relevance comes from each sample's `RelevantItem`s (chunk id, document path, URL or reference text,
with a grade). A retrieved chunk is matched against them (`MatchSettings`); each relevant item is
credited at most once, at the first retrieved chunk that matches it, so several chunks of one
relevant document count once and recall stays <= 1. The list order of a ranking is authoritative
(ties in score are not re-sorted). A question without relevant items is an explicit failure, not a 0.

What is ranked: when a question's relevance is by document (document paths or URLs), the chunk
ranking becomes a document ranking first: each document takes the rank of its best chunk ("MaxP"),
so a long document's later chunks do not take ranking slots and count as misses. This is how
document-labelled benchmarks (BEIR, MS MARCO documents) are scored. `MatchSettings.rank_unit`
chooses: `auto` (documents for document/URL labels, chunks for chunk-id and text labels),
`document` or `chunk`. Search deeper than the largest k for this (`rankings_with_documents`).

With the corpus given (`corpus_chunks` or `corpus_sources`), a label that matches nothing in the
index is dropped, a question left without labels fails with the reason, and when most labels match
nothing the report warns, naming the relevance kind used and the kind the labels look like.

Measures follow the usual IR definitions (the same as `ranx`/trec_eval): precision@k divides by k
even when fewer than k chunks came back; nDCG uses gain = grade / log2(rank + 1) with the ideal DCG
from the judged relevant items; AP divides by the number of relevant items.

Example:
    >>> rankings = index.search_many([s.question for s in samples], 10, "hybrid", embedder)
    >>> report = evaluate_retrieval(samples, rankings, ks=(1, 5, 10))
    >>> report.metrics["hit_rate@5"].score, report.metrics["mrr"].ci_low
    >>> report.worst(5)
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ragwatch.results import ItemScore, MetricInfo, MetricResult
from ragwatch.types import Chunk, EvalSample, RelevantItem, RetrievedContext, SearchHit

if TYPE_CHECKING:
    import pandas as pd

MatchOn = Literal["auto", "chunk_id", "document", "url", "text"]
RankUnit = Literal["auto", "document", "chunk"]
DEFAULT_KS = (1, 3, 5, 10)
NO_LABELS = "no relevance labels: the sample has no relevant item (grade > 0) to match against"
# Warn when more than this share of the checked labels matches nothing in the index.
UNMATCHED_WARNING_SHARE = 0.5
logger = logging.getLogger(__name__)


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

    model_config = ConfigDict(extra="forbid")

    on: MatchOn = "auto"
    rank_unit: RankUnit = "auto"
    url_rewrites: list[tuple[str, str]] = Field(default_factory=list)
    aliases: dict[str, str] = Field(default_factory=dict)
    text_overlap: float = 0.5

    @field_validator("text_overlap")
    @classmethod
    def _overlap_in_range(cls, value: float) -> float:
        if not 0.0 < value <= 1.0:
            raise ValueError(f"text_overlap must be in (0, 1], got {value}: it is a share of tokens")
        return value


# ---------------------------------------------------------------- normalization and matching

_TOKEN = re.compile(r"\w+")
_EXTENSIONS = (".md", ".mdx", ".markdown", ".html", ".htm", ".xhtml", ".txt", ".pdf", ".docx", ".rst", ".ipynb")


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
        for ext in _EXTENSIONS:
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
class _Label:
    """One usable relevant item, prepared for matching."""

    item: RelevantItem
    kind: str
    paths: list[tuple[str, ...]] = field(default_factory=list)
    text: str = ""


def _labels(sample: EvalSample, match: MatchSettings) -> list[_Label]:
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
            labels.append(_Label(it, it.kind, paths=label_paths(it.value, match)))
        else:
            labels.append(_Label(it, it.kind, text=it.value))
    return labels


def _matches(label: _Label, chunk: Chunk, match: MatchSettings) -> bool:
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
    return _judge_labels(_labels(sample, match), hits, match)


def _judge_labels(labels: Sequence[_Label], hits: Sequence[SearchHit], match: MatchSettings) -> Judgement:
    open_labels = set(range(len(labels)))
    gains: list[float] = []
    credited: list[int | None] = []
    for hit in hits:
        best: int | None = None
        for i in sorted(open_labels):
            if _matches(labels[i], hit.chunk, match) and (
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


# ---------------------------------------------------------------- document-level ranking (MaxP)


def document_ranking(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """A chunk ranking as a document ranking: each document once, at its best chunk's position
    (MaxP), ranked 1..n. The chunk kept is that best chunk, so labels still match it.

    >>> [h.chunk.document_id for h in document_ranking(hits)]  # a a b a c -> a b c  # doctest: +SKIP
    """
    seen: set[str] = set()
    out: list[SearchHit] = []
    for hit in hits:
        key = hit.chunk.document_id or hit.chunk.source
        if key in seen:
            continue
        seen.add(key)
        out.append(SearchHit.model_construct(chunk=hit.chunk, score=hit.score, rank=len(out) + 1))
    return out


def _n_documents(hits: Sequence[SearchHit]) -> int:
    return len({h.chunk.document_id or h.chunk.source for h in hits})


def rankings_with_documents(
    search: Callable[[list[str], int], list[list[SearchHit]]], queries: Sequence[str], k: int, *, limit: int
) -> list[list[SearchHit]]:
    """Chunk rankings deep enough to hold `k` distinct documents each (or all `limit` chunks), so
    that the document ranking's top k is exact. `search(queries, depth)` returns chunk rankings.

    >>> rankings_with_documents(lambda qs, d: index.search_many(qs, d, "bm25"), questions, 10,
    ...                         limit=len(index))  # doctest: +SKIP
    """
    queries = list(queries)
    depth = min(limit, max(k * 4, k))
    rankings = search(queries, depth)
    while depth < limit:
        short = [i for i, r in enumerate(rankings) if len(r) >= depth and _n_documents(r) < k]
        if not short:
            break
        depth = min(limit, depth * 4)
        for i, deeper in zip(short, search([queries[i] for i in short], depth), strict=True):
            rankings[i] = deeper
    return rankings


class RememberedEmbedder:
    """An embedder that embeds each distinct text once and hands back the same vector after that.

    Retrieval evaluation searches the same questions in several modes (vector, hybrid) and again
    deeper for document ranking; query embedding is most of that time, so it is done once.

    >>> embedder = RememberedEmbedder(get_embedder(EmbeddingSettings()))  # doctest: +SKIP
    """

    def __init__(self, embedder: Any) -> None:
        self.inner = embedder
        self._vectors: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:  # identity, dim, max_input_tokens, count_tokens
        return getattr(self.inner, name)

    def embed(self, texts: list[str]) -> Any:
        import numpy as np

        new = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if new:
            self._vectors.update(zip(new, self.inner.embed(new), strict=True))
        if not texts:
            return self.inner.embed([])
        return np.stack([self._vectors[t] for t in texts])


def rank_unit_for(labels: Sequence[_Label], match: MatchSettings) -> Literal["document", "chunk"]:
    """`document` when every label is a document/URL (and `rank_unit` is auto), else `chunk`."""
    if match.rank_unit != "auto":
        return match.rank_unit
    return "document" if labels and all(lb.kind in ("document", "url") for lb in labels) else "chunk"


# ---------------------------------------------------------------- labels against the index


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

    def holds(self, label: _Label) -> bool | None:
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


def _unmatched_warning(unmatched: Sequence[_Label], checked: int, corpus: CorpusLabels) -> str | None:
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


# ---------------------------------------------------------------- per-question measures


def first_relevant_rank(gains: Sequence[float]) -> int | None:
    """1-based rank of the first relevant result, None when nothing relevant was retrieved."""
    return next((i + 1 for i, g in enumerate(gains) if g > 0), None)


def hit_at_k(gains: Sequence[float], k: int) -> float:
    return float(any(g > 0 for g in gains[:k]))


def recall_at_k(gains: Sequence[float], n_relevant: int, k: int) -> float:
    return sum(1 for g in gains[:k] if g > 0) / n_relevant


def precision_at_k(gains: Sequence[float], k: int) -> float:
    """Relevant results in the top k divided by k (fewer than k results still divide by k)."""
    return sum(1 for g in gains[:k] if g > 0) / k


def reciprocal_rank(gains: Sequence[float]) -> float:
    rank = first_relevant_rank(gains)
    return 0.0 if rank is None else 1.0 / rank


def _dcg(gains: Iterable[float]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at_k(gains: Sequence[float], relevant_grades: Sequence[float], k: int) -> float:
    """Graded nDCG@k, gain = grade / log2(rank + 1); the ideal ranking puts the judged items first."""
    ideal = _dcg(sorted(relevant_grades, reverse=True)[:k])
    return _dcg(gains[:k]) / ideal if ideal > 0 else 0.0


def average_precision(gains: Sequence[float], n_relevant: int, k: int | None = None) -> float:
    """Mean of precision@r over the ranks r of relevant results (within k), divided by all relevant."""
    top = gains if k is None else gains[:k]
    found, total = 0, 0.0
    for i, g in enumerate(top):
        if g > 0:
            found += 1
            total += found / (i + 1)
    return total / n_relevant


def question_measures(judgement: Judgement, ks: Sequence[int]) -> dict[str, float]:
    """All measures of one judged ranking (the judgement must have at least one relevant item)."""
    gains, grades = judgement.gains, judgement.relevant_grades
    n_rel = len(grades)
    out: dict[str, float] = {"mrr": reciprocal_rank(gains), "map": average_precision(gains, n_rel)}
    for k in ks:
        out[f"hit_rate@{k}"] = hit_at_k(gains, k)
        out[f"recall@{k}"] = recall_at_k(gains, n_rel, k)
        out[f"precision@{k}"] = precision_at_k(gains, k)
        out[f"ndcg@{k}"] = ndcg_at_k(gains, grades, k)
    return out


# ---------------------------------------------------------------- the report


class QuestionRow(BaseModel):
    """One question's outcome: where the first relevant chunk came, what was expected and retrieved."""

    question_id: str
    question: str
    first_relevant_rank: int | None = None
    measures: dict[str, float] = Field(default_factory=dict)
    expected: list[str] = Field(default_factory=list)
    retrieved: list[str] = Field(default_factory=list)  # source (or chunk id) per rank
    relevant_at: list[int] = Field(default_factory=list)  # ranks credited as relevant
    rank_unit: str = "chunk"  # what was ranked: document (best chunk per document) or chunk
    unmatched_labels: list[str] = Field(default_factory=list)  # labels that match nothing in the index
    error: str | None = None


class RetrievalReport(BaseModel):
    """Metrics (one `MetricResult` each, with bootstrap CIs) and one row per question."""

    metrics: dict[str, MetricResult]
    per_question: list[QuestionRow]
    ks: list[int]
    match: MatchSettings
    warnings: list[str] = Field(default_factory=list)

    def summary(self) -> dict[str, dict[str, Any]]:
        """Flat figures per metric, for metadata and tables."""
        return {name: m.summary() for name, m in self.metrics.items()}

    def worst(self, n: int = 10, *, include_failed: bool = False) -> pd.DataFrame:
        """The n worst questions (lowest reciprocal rank, then nDCG at the largest k) with what was
        retrieved instead of the expected items; failed questions come first when included."""
        import pandas as pd  # ~0.5 s to import; config validation needs none of it

        big = max(self.ks)
        scored = [r for r in self.per_question if r.error is None]
        scored.sort(key=lambda r: (r.measures["mrr"], r.measures[f"ndcg@{big}"], r.question_id))
        rows = ([r for r in self.per_question if r.error is not None] if include_failed else []) + scored
        return pd.DataFrame(
            [
                {
                    "question_id": r.question_id,
                    "question": r.question,
                    "first_relevant_rank": r.first_relevant_rank,
                    "expected": "; ".join(r.expected),
                    "retrieved_instead": "; ".join(r.retrieved[:big]),
                    "error": r.error,
                }
                for r in rows[:n]
            ],
            columns=["question_id", "question", "first_relevant_rank", "expected", "retrieved_instead",
                     "error"],
        )


_DESCRIPTIONS = {
    "mrr": "reciprocal rank of the first relevant result",
    "map": "average precision over the relevant items",
    "hit_rate": "a relevant result is in the top k",
    "recall": "share of the relevant items in the top k",
    "precision": "share of the top k that is relevant (divided by k)",
    "ndcg": "graded nDCG of the top k",
}


def retrieval_infos(ks: Sequence[int]) -> dict[str, MetricInfo]:
    """Metric name -> `MetricInfo` of every measure `evaluate_retrieval` reports, in report order."""
    infos = {m: MetricInfo(family="retrieval", measure=m, description=_DESCRIPTIONS[m]) for m in ("mrr", "map")}
    for measure in ("hit_rate", "recall", "precision", "ndcg"):
        for k in ks:
            infos[f"{measure}@{k}"] = MetricInfo(family="retrieval", measure=measure, k=k,
                                                 binary=measure == "hit_rate", description=_DESCRIPTIONS[measure])
    return infos


def _check_inputs(
    samples: Sequence[EvalSample], rankings: Sequence[Sequence[SearchHit]], ks: Sequence[int]
) -> None:
    if len(samples) != len(rankings):
        raise ValueError(
            f"got {len(samples)} samples but {len(rankings)} rankings: pass one ranking (list of SearchHit) "
            "per sample, in the same order, e.g. index.search_many([s.question for s in samples], ...)"
        )
    if not ks or any(not isinstance(k, int) or k < 1 for k in ks):
        raise ValueError(f"ks must be positive integers, got {list(ks)!r}")
    seen: set[str] = set()
    for s in samples:
        if s.id in seen:
            raise ValueError(f"duplicate sample id {s.id!r}: give every sample a unique id")
        seen.add(s.id)


def _hit_label(hit: SearchHit) -> str:
    return hit.chunk.source or hit.chunk.id


def _no_labels_reason(sample: EvalSample, match: MatchSettings) -> str:
    kinds = sorted({it.kind for it in sample.relevant if it.grade > 0})
    if match.on != "auto" and kinds:
        return (f"{NO_LABELS} of kind {match.on!r} (match.on); its labels are of kind {', '.join(kinds)}: "
                "set `evaluate.retrieval.match.on: auto` or import them with the right `relevance_kind`")
    return NO_LABELS


def evaluate_retrieval(
    samples: Sequence[EvalSample],
    rankings: Sequence[Sequence[SearchHit]],
    ks: Sequence[int] = DEFAULT_KS,
    match: MatchSettings | None = None,
    *,
    corpus_sources: Iterable[str] | None = None,
    corpus_chunks: Sequence[Chunk] | None = None,
    seed: int = 0,
) -> RetrievalReport:
    """Score one ranking per sample: hit_rate@k, recall@k, precision@k, ndcg@k, mrr and map.

    Samples labelled by document are scored on the document ranking (MaxP, see the module
    docstring): pass chunk rankings deep enough to hold max(ks) documents. With the corpus
    (`corpus_chunks`, the indexed chunks, or just `corpus_sources`), labels that match nothing in
    the index are dropped, a question left with none fails with that reason, and `warnings` says
    when most labels match nothing, so broken labels never read as retrieval misses.
    """
    match = match or MatchSettings()
    ks = sorted(set(ks))
    _check_inputs(samples, rankings, ks)
    corpus = None
    if corpus_sources is not None or corpus_chunks is not None:
        corpus = CorpusLabels(match, corpus_sources or (), corpus_chunks)
    infos = retrieval_infos(ks)
    names = list(infos)
    items: dict[str, list[ItemScore]] = {name: [] for name in names}
    rows: list[QuestionRow] = []
    units: Counter[str] = Counter()
    unmatched_all: list[_Label] = []
    checked = 0
    for sample, hits in zip(samples, rankings, strict=True):
        labels = _labels(sample, match)
        unit = rank_unit_for(labels, match)
        ranked = document_ranking(hits) if unit == "document" else list(hits)
        expected = [f"{it.kind}:{it.value[:80]}" for it in sample.relevant] or [
            f"text:{c[:80]}" for c in sample.reference_contexts
        ]
        retrieved = [_hit_label(h) for h in ranked]
        error = None if labels else _no_labels_reason(sample, match)
        judgement = _judge_labels(labels, ranked, match) if labels else None
        unmatched: list[_Label] = []
        if judgement is not None and corpus is not None:
            found = {i for i in judgement.credited if i is not None}
            # a label credited in the ranking is in the index; only the others need the corpus check
            held = {i: corpus.holds(lb) for i, lb in enumerate(labels) if i not in found}
            unmatched = [labels[i] for i, h in held.items() if h is False]
            checked += len(found) + sum(1 for h in held.values() if h is not None)
            unmatched_all += unmatched
            if len(unmatched) == len(labels):
                values = ", ".join(repr(lb.item.value[:80]) for lb in unmatched[:5])
                error = (f"none of its {len(labels)} {labels[0].kind} label(s) matches anything in the index "
                         f"({values}): check the labels and the relevance kind")
            elif unmatched:
                labels = [lb for lb in labels if all(lb is not u for u in unmatched)]
                judgement = _judge_labels(labels, ranked, match)
        unmatched_values = [lb.item.value[:80] for lb in unmatched]
        if error is not None or judgement is None:
            rows.append(QuestionRow(question_id=sample.id, question=sample.question, expected=expected,
                                    retrieved=retrieved, rank_unit=unit, unmatched_labels=unmatched_values,
                                    error=error))
            for name in names:
                items[name].append(ItemScore(item_id=sample.id, error=error))
            continue
        units[unit] += 1
        measures = question_measures(judgement, ks)
        rank = first_relevant_rank(judgement.gains)
        rows.append(QuestionRow(
            question_id=sample.id, question=sample.question, first_relevant_rank=rank, measures=measures,
            expected=expected, retrieved=retrieved, rank_unit=unit, unmatched_labels=unmatched_values,
            relevant_at=[i + 1 for i, g in enumerate(judgement.gains) if g > 0],
        ))
        for name in names:
            # measures are finite floats by construction: skip re-validating thousands of items. No
            # per-item details: every (mode, measure) holds one item per question, and the question's
            # ranks are in `per_question` once, so the metrics artifact stays compact.
            items[name].append(ItemScore.model_construct(
                item_id=sample.id, score=measures[name], error=None,
                passed=measures[name] > 0 if name.startswith("hit_rate") else None, details={},
            ))
    warnings = []
    if corpus is not None:
        warning = _unmatched_warning(unmatched_all, checked, corpus)
        if warning:
            logger.warning(warning)
            warnings.append(warning)
    details: dict[str, Any] = {"match_on": match.on, "rank_unit": dict(units)}
    if warnings:
        details["warnings"] = warnings
    metrics = {
        name: MetricResult.from_items(name, its, seed=seed, details=dict(details), info=infos[name])
        for name, its in items.items()
    }
    return RetrievalReport(metrics=metrics, per_question=rows, ks=list(ks), match=match, warnings=warnings)


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
            and corpus.holds(_Label(it, it.kind, paths=label_paths(it.value, match))) is False
        ]
        if bad:
            out[s.id] = bad
    return out


def compare_retrievers(
    samples: Sequence[EvalSample],
    settings: dict[str, Sequence[Sequence[SearchHit]]],
    ks: Sequence[int] = DEFAULT_KS,
    match: MatchSettings | None = None,
    *,
    corpus_sources: Iterable[str] | None = None,
    corpus_chunks: Sequence[Chunk] | None = None,
) -> pd.DataFrame:
    """Several retrieval settings side by side: one row per setting; per metric the score and its
    95% CI (`<metric>`, `<metric>_ci_low`, `<metric>_ci_high`), plus n_scored and n_failed."""
    import pandas as pd

    if not settings:
        raise ValueError("compare_retrievers needs at least one {name: rankings} entry")
    sources = list(corpus_sources) if corpus_sources is not None else None
    rows = []
    for name, rankings in settings.items():
        report = evaluate_retrieval(samples, rankings, ks, match, corpus_sources=sources,
                                    corpus_chunks=corpus_chunks)
        row: dict[str, Any] = {"setting": name}
        for metric, result in report.metrics.items():
            row[metric] = result.score
            row[f"{metric}_ci_low"] = result.ci_low
            row[f"{metric}_ci_high"] = result.ci_high
        first = next(iter(report.metrics.values()))
        row["n_scored"], row["n_failed"] = first.n_scored, first.n_failed
        rows.append(row)
    return pd.DataFrame(rows).set_index("setting")


def hits_from_contexts(contexts: Sequence[RetrievedContext]) -> list[SearchHit]:
    """Turn the contexts a RAG system reported into a ranking, so an external system's retrieval
    (callable or HTTP) is evaluated like the built-in one. Missing ids are derived from the text."""
    hits = []
    for rank, ctx in enumerate(contexts, start=1):
        cid = ctx.chunk_id or hashlib.sha256(ctx.text.encode()).hexdigest()[:16]
        chunk = Chunk(id=cid, document_id=ctx.source or cid, source=ctx.source or "", text=ctx.text,
                      start=0, end=len(ctx.text))
        hits.append(SearchHit(chunk=chunk, score=ctx.score if ctx.score is not None else 0.0, rank=rank))
    return hits
