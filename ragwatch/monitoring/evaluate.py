"""A window of logged answers, evaluated as it was answered: the same metrics as an evaluation run
(the system-as-run metrics and the configured judges), with zero generator calls.

`evaluate_logged(samples, ...)` answers the samples (`ragwatch.evalset.logged.log_samples`) through
`LoggedRAG` and measures them with `ragwatch.evaluation` / `ragwatch.checks.system_metrics`, the code
every evaluation uses. Retrieval metrics need relevance: without `relevant` in the log they are listed
as not available, not failed; `answer/reference_coverage` likewise needs reference answers.

Example:
    >>> group = evaluate_logged(log_samples(window.records), JudgesConfig(enabled=[]))  # doctest: +SKIP
    >>> group.metrics["answer/context_support"].score  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from ragwatch.artifacts import MetricGroup
from ragwatch.checks.system_metrics import (
    CONTEXT_PRECISION,
    CONTEXT_RECALL,
    HIT_RATE,
    MRR,
    REFERENCE_COVERAGE,
    system_metrics,
)
from ragwatch.evaluation import answer_questions, judge_answers
from ragwatch.judges import JudgesConfig
from ragwatch.rag import RAGSystem
from ragwatch.rag.logged import LoggedRAG
from ragwatch.retrieval import MatchSettings
from ragwatch.types import EvalSample

RETRIEVAL = (HIT_RATE, MRR, CONTEXT_RECALL, CONTEXT_PRECISION)
NO_RELEVANCE = "not available for a log without relevance labels (log `relevant`: ids or sources of relevant passages)"
NO_REFERENCE = "not available for a log without reference answers"


def evaluate_answers(samples: list[EvalSample], rag: RAGSystem, judges: JudgesConfig,
                     match: MatchSettings | None = None, embedder: object = None) -> MetricGroup:
    """The system-as-run metrics and the judges of `rag`'s answers to `samples` (any system: the
    logged one or a callable; the figures depend on the answers only)."""
    answers = answer_questions(rag, samples)
    unavailable: dict[str, str] = {}
    metrics = system_metrics(samples, answers, match=match or MatchSettings(), k=None)
    if not any(s.relevant for s in samples):
        unavailable.update(dict.fromkeys(RETRIEVAL, NO_RELEVANCE))
    if not any(s.reference_answer for s in samples):
        unavailable[REFERENCE_COVERAGE] = NO_REFERENCE
    metrics = {k: v for k, v in metrics.items() if k not in unavailable}
    usage: dict[str, Any] = {}
    if judges.enabled:
        group = judge_answers(samples, answers, judges, embedder=embedder, generator=None)
        metrics.update(group.metrics)
        unavailable.update(group.unavailable)
        usage = group.details.get("usage", {})
    generator_calls = 0 if isinstance(rag, LoggedRAG) else None
    return MetricGroup(group="logged", metrics=metrics, unavailable=unavailable,
                       details={"usage": usage, "generator_calls": generator_calls, "n_answers": len(samples),
                                "failed_answers": sum(1 for a in answers if not a.ok)})


def evaluate_logged(samples: list[EvalSample], judges: JudgesConfig, match: MatchSettings | None = None,
                    embedder: object = None) -> MetricGroup:
    """`evaluate_answers` with the logged system: what was said with what was retrieved, nothing called."""
    return evaluate_answers(samples, LoggedRAG(source="log"), judges, match, embedder)
