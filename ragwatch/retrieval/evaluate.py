"""Retrieval evaluation: one ranking per question scored into `MetricResult`s and a per-question table.

A question without relevant items is an explicit failure, not a 0. With the corpus given
(`corpus_chunks` or `corpus_sources`), a label that matches nothing in the index is dropped, a
question left without labels fails with the reason, and when most labels match nothing the report
warns, naming the relevance kind used and the kind the labels look like. With the corpus known, a hit
rate or recall at a k no smaller than the corpus's documents (or chunks, for questions ranked by
chunk) is reached trivially, whatever the retriever does: the metric carries a warning saying so
(`details["warnings"]`, also in `RetrievalReport.warnings`). Each metric declares its identity
(`MetricInfo`: family "retrieval", measure, k).

Example:
    >>> rankings = index.search_many([s.question for s in samples], 10, "hybrid", embedder)
    >>> report = evaluate_retrieval(samples, rankings, ks=(1, 5, 10))
    >>> report.metrics["hit_rate@5"].score, report.metrics["mrr"].ci_low
    >>> report.worst(5)
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from ragwatch.results import ItemScore, MetricInfo, MetricResult
from ragwatch.retrieval.matching import (
    CorpusLabels,
    Label,
    MatchSettings,
    judge_labels,
    sample_labels,
    unmatched_warning,
)
from ragwatch.retrieval.measures import first_relevant_rank, question_measures
from ragwatch.retrieval.ranking import document_ranking, rank_unit_for
from ragwatch.types import Chunk, EvalSample, SearchHit

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_KS = (1, 3, 5, 10)
# With every unit of the corpus in the top k, any labelled unit is in it: these measures are 1 for any ranking.
TRIVIAL_AT_K = ("hit_rate", "recall")
NO_LABELS = "no relevance labels: the sample has no relevant item (grade > 0) to match against"
logger = logging.getLogger(__name__)


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
    unmatched_all: list[Label] = []
    checked = 0
    for sample, hits in zip(samples, rankings, strict=True):
        labels = sample_labels(sample, match)
        unit = rank_unit_for(labels, match)
        ranked = document_ranking(hits) if unit == "document" else list(hits)
        expected = [f"{it.kind}:{it.value[:80]}" for it in sample.relevant] or [
            f"text:{c[:80]}" for c in sample.reference_contexts
        ]
        retrieved = [_hit_label(h) for h in ranked]
        error = None if labels else _no_labels_reason(sample, match)
        judgement = judge_labels(labels, ranked, match) if labels else None
        unmatched: list[Label] = []
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
                judgement = judge_labels(labels, ranked, match)
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
        warning = unmatched_warning(unmatched_all, checked, corpus)
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
    if corpus is not None:
        sizes = corpus_sizes(corpus_sources, corpus_chunks)
        for k in ks:
            warning = trivial_warning(k, units, sizes)
            if warning is None:
                continue
            warnings.append(warning)
            for measure in TRIVIAL_AT_K:
                metric = metrics[f"{measure}@{k}"]
                metric.details["warnings"] = [*metric.details.get("warnings", []), warning]
    return RetrievalReport(metrics=metrics, per_question=rows, ks=list(ks), match=match, warnings=warnings)


def corpus_sizes(corpus_sources: Iterable[str] | None, corpus_chunks: Sequence[Chunk] | None) -> dict[str, int]:
    """How many documents (and chunks, when the chunks are given) the ranked corpus holds: what a ranking by
    document or by chunk can hold at most. Documents are counted as `document_ranking` tells them apart."""
    if corpus_chunks is None:
        return {"document": len(set(corpus_sources or ()))}
    return {"document": len({c.document_id or c.source for c in corpus_chunks}), "chunk": len(corpus_chunks)}


def trivial_warning(k: int, units: Counter[str], sizes: dict[str, int]) -> str | None:
    """The warning for hit rate and recall at `k` when every unit of the corpus fits in the top k, for the
    questions ranked by that unit (`units`: scored questions per rank unit); None when none does."""
    trivial = [(unit, n) for unit, n in units.items() if n and unit in sizes and 0 < sizes[unit] <= k]
    if not trivial:
        return None
    unit, n = max(trivial, key=lambda pair: pair[1])
    plural = "documents" if unit == "document" else "chunks"
    scope = "" if n == sum(units.values()) else f" for the {n} of {sum(units.values())} questions ranked by {unit}"
    return (f"hit_rate@{k}, recall@{k}: trivially reached: k={k} >= the corpus's {sizes[unit]} {plural}, so every "
            f"{unit} is in the top {k}{scope} whatever the ranking; read them at a k below {sizes[unit]} "
            "(evaluate.retrieval.ks) or on a larger corpus")


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
