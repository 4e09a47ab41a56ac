"""Metrics of the system as it runs: the contexts it actually used and the answers it gave.

Retrieval metrics at fixed k measure the retriever, not the system: they cannot see a change of the
system's own `top_k`, a bug that shuffles contexts, or a generator that ignores them. These metrics
read only the `RagAnswer`s (contexts used, answer text) and the evaluation samples, so they apply
to the built-in system and to a user's own (callable, HTTP) alike, and need no LLM:

- `system/availability`: the system answered the question (1) or failed to (0): a rise in the share
  of questions it fails to answer is a change of the system, gated like any other;
- `system/hit_rate`: a relevant passage is among the contexts used (at the system's k);
- `system/mrr`: reciprocal rank of the first relevant context used (0 when none);
- `system/context_recall`: share of the sample's relevant items found in the contexts used;
- `system/context_precision`: share of the contexts used that match a relevant item;
- `answer/context_support`: share of the answer's content words that occur in the contexts used
  (a lexical grounding check; an answer from prior knowledge or another question scores low);
- `answer/reference_coverage`: share of the reference's content words the answer contains (the
  reference answer, or the reference context when the sample has no answer; ROUGE-1 recall).

A failed answer or an empty text is an explicit failure with its reason, never a silent zero. A sample
that lacks what a metric compares with (relevance labels; a reference answer or context) is a skipped
item with its reason (`ItemScore.skipped`): the question was asked and is measured by the rest.

Example:
    >>> metrics = system_metrics(samples, answers, match=MatchSettings(on="auto"))  # doctest: +SKIP
    >>> metrics["system/hit_rate"].score, metrics["system/hit_rate"].info.k  # doctest: +SKIP
    (0.82, 3)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ragwatch.results import ItemScore, MetricInfo, MetricResult
from ragwatch.retrieval.matching import MatchSettings, judge
from ragwatch.retrieval.measures import reciprocal_rank
from ragwatch.retrieval.ranking import hits_from_contexts
from ragwatch.types import EvalSample, RagAnswer

AVAILABILITY = "system/availability"
HIT_RATE = "system/hit_rate"
MRR = "system/mrr"
CONTEXT_RECALL = "system/context_recall"
CONTEXT_PRECISION = "system/context_precision"
CONTEXT_SUPPORT = "answer/context_support"
REFERENCE_COVERAGE = "answer/reference_coverage"
SYSTEM_METRICS = (AVAILABILITY, HIT_RATE, MRR, CONTEXT_RECALL, CONTEXT_PRECISION, CONTEXT_SUPPORT, REFERENCE_COVERAGE)
NOTHING_ANSWERED = ("not measured in this run: nothing was answered (every question was evaluated by retrieval "
                    "alone: `retrieval_only`, or `evaluate.without_reference: retrieval_only` on questions "
                    "without a reference answer)")

_INFO = {  # the family and measure of each; `k` (the system's top_k) is set per run
    AVAILABILITY: MetricInfo(family="system", measure="availability", binary=True, threshold=1.0,
                             description="share of questions the system answered (a failed call scores 0)"),
    HIT_RATE: MetricInfo(family="system", measure="hit_rate", binary=True, threshold=1.0,
                         description="a relevant passage is among the contexts the system used (its own k)"),
    MRR: MetricInfo(family="system", measure="mrr",
                    description="reciprocal rank of the first relevant context the system used"),
    CONTEXT_RECALL: MetricInfo(family="system", measure="context_recall",
                               description="share of relevant items found in the contexts the system used"),
    CONTEXT_PRECISION: MetricInfo(family="system", measure="context_precision",
                                  description="share of the contexts the system used that are relevant"),
    CONTEXT_SUPPORT: MetricInfo(family="system", measure="context_support",
                                description="share of the answer's content words found in its contexts"),
    REFERENCE_COVERAGE: MetricInfo(family="system", measure="reference_coverage",
                                   description="share of the reference's content words the answer contains"),
}

_WORD = re.compile(r"[a-z0-9][a-z0-9_\-]*[a-z0-9]|[a-z0-9]")
# Function words carry no content; without them a short wrong answer would look grounded.
_STOPWORDS = frozenset(str.split(
    "the a an and or but if of to in on at by for with from as is are was were be been being it its this that "
    "these those there their they them you your we our he she his her i me my not no yes do does did can could "
    "will would should may might must have has had which what when where who whom why how than then so such "
    "into out up down over under about also only just more most other some any each all both very via per "
    "use used using"
))


def content_words(text: str) -> set[str]:
    """Lower-cased words of two or more characters that are not function words."""
    return {w for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in _STOPWORDS}


def reported_top_k(system: Mapping[str, Any]) -> int | None:
    """The top_k the system under test says it ran with (`RAGSystem.describe()`); None when it says
    none (a system of the user's own): then every context it reported counts."""
    k = system.get("top_k")
    return k if isinstance(k, int) and not isinstance(k, bool) and k >= 1 else None


def system_metrics(
    samples: Sequence[EvalSample],
    answers: Sequence[RagAnswer],
    *,
    match: MatchSettings | None = None,
    k: int | None = None,
    seed: int = 0,
) -> dict[str, MetricResult]:
    """The seven metrics above, one item per sample; `answers[i]` answers `samples[i]`.

    With no sample at all (nothing was answered) there is nothing to measure: the caller says so with
    `NOTHING_ANSWERED` rather than reporting seven empty metrics.

    `k` is the system's own top_k (recorded in `details`; contexts beyond it are ignored). When
    None, every context the system reported counts.
    """
    if len(samples) != len(answers):
        raise ValueError(f"got {len(samples)} samples but {len(answers)} answers: pass the answers of the "
                         "system under test in the order of the samples")
    if k is not None and k < 1:
        raise ValueError(f"k is the system's top_k and must be at least 1, got {k}")
    match = match or MatchSettings()
    items: dict[str, list[ItemScore]] = {name: [] for name in SYSTEM_METRICS}
    for sample, answer in zip(samples, answers, strict=True):
        items[AVAILABILITY].append(_availability_item(sample, answer))
        for name, item in _retrieval_items(sample, answer, match, k).items():
            items[name].append(item)
        items[CONTEXT_SUPPORT].append(_support_item(sample, answer, k))
        items[REFERENCE_COVERAGE].append(_coverage_item(sample, answer))
    details = {"match_on": match.on}
    return {name: MetricResult.from_items(name, its, seed=seed, details=dict(details),
                                          info=_INFO[name].model_copy(update={"k": k}))
            for name, its in items.items()}


def _retrieval_items(sample: EvalSample, answer: RagAnswer, match: MatchSettings,
                     k: int | None) -> dict[str, ItemScore]:
    names = (HIT_RATE, MRR, CONTEXT_RECALL, CONTEXT_PRECISION)
    if not answer.ok:
        return {n: ItemScore(item_id=sample.id, error=f"the system failed to answer: {answer.error}") for n in names}
    if not (sample.relevant or sample.reference_contexts):
        return {n: ItemScore(item_id=sample.id, error="the sample has no relevance labels", skipped=True)
                for n in names}
    hits = hits_from_contexts(answer.contexts[:k] if k else answer.contexts)
    judgement = judge(sample, hits, match)
    if not judgement.relevant_grades:
        return {n: ItemScore(item_id=sample.id, error="the sample's labels give no relevant item") for n in names}
    gains = judgement.gains
    # precision asks of each context whether it matches any label (a page may give several relevant chunks)
    relevant_contexts = sum(1 for hit in hits if judge(sample, [hit], match).gains[0] > 0)
    sources = [h.chunk.source or h.chunk.id for h in hits]
    detail = {"contexts": len(hits), "relevant_at": [i + 1 for i, g in enumerate(gains) if g > 0], "sources": sources}
    hit = float(any(g > 0 for g in gains))
    return {
        HIT_RATE: ItemScore(item_id=sample.id, score=hit, passed=hit > 0, details=detail),
        MRR: ItemScore(item_id=sample.id, score=reciprocal_rank(gains), details=detail),
        CONTEXT_RECALL: ItemScore(item_id=sample.id, details=detail,
                                  score=sum(1 for g in gains if g > 0) / len(judgement.relevant_grades)),
        CONTEXT_PRECISION: ItemScore(item_id=sample.id, details=detail,
                                     score=relevant_contexts / len(hits) if hits else 0.0),
    }


def _availability_item(sample: EvalSample, answer: RagAnswer) -> ItemScore:
    # a failed call is the measurement here (score 0 with its reason), not an unscored item
    if answer.ok:
        return ItemScore(item_id=sample.id, score=1.0, passed=True)
    return ItemScore(item_id=sample.id, score=0.0, passed=False, details={"reason": answer.error})


def _support_item(sample: EvalSample, answer: RagAnswer, k: int | None) -> ItemScore:
    if not answer.ok:
        return ItemScore(item_id=sample.id, error=f"the system failed to answer: {answer.error}")
    words = content_words(answer.answer)
    if not words:
        return ItemScore(item_id=sample.id, error="the answer has no content words")
    contexts = answer.contexts[:k] if k else answer.contexts
    known = set().union(*(content_words(c.text) for c in contexts)) if contexts else set()
    unsupported = sorted(words - known)
    return ItemScore(item_id=sample.id, score=1 - len(unsupported) / len(words),
                     details={"unsupported_words": unsupported[:20], "answer_words": len(words)})


def _coverage_item(sample: EvalSample, answer: RagAnswer) -> ItemScore:
    if not answer.ok:
        return ItemScore(item_id=sample.id, error=f"the system failed to answer: {answer.error}")
    reference, kind = (sample.reference_answer, "answer") if sample.reference_answer else (
        " ".join(sample.reference_contexts), "context")
    words = content_words(reference or "")
    if not words:
        return ItemScore(item_id=sample.id, error="the sample has no reference answer or reference context",
                         skipped=True)
    found = words & content_words(answer.answer)
    return ItemScore(item_id=sample.id, score=len(found) / len(words),
                     details={"reference": kind, "missing_words": sorted(words - found)[:20]})
