"""A window of logged answers, evaluated as it was answered: the same metrics as an evaluation run
(the system-as-run metrics and the configured judges), with zero generator calls.

`log_samples(records)` turns records into evaluation samples that carry their logged answer;
`evaluate_logged(samples, ...)` answers them through `LoggedRAG` and measures them with
`ragwatch.evaluation` / `ragwatch.checks.system_metrics`, the code every evaluation uses. Retrieval
metrics need relevance: without `relevant` in the log they are listed as not available, not failed;
`answer/reference_coverage` likewise needs reference answers.

Example:
    >>> group = evaluate_logged(log_samples(window.records), JudgesConfig(enabled=[]))  # doctest: +SKIP
    >>> group.metrics["answer/context_support"].score  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
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
from ragwatch.log_settings import LogInput
from ragwatch.logs.records import LogRecord
from ragwatch.logs.settings import WindowSettings
from ragwatch.rag import RAGSystem
from ragwatch.rag.logged import LOGGED_KEY, LoggedRAG
from ragwatch.retrieval import MatchSettings
from ragwatch.types import EvalSample, RagAnswer, RelevantItem, RetrievedContext

RETRIEVAL = (HIT_RATE, MRR, CONTEXT_RECALL, CONTEXT_PRECISION)
NO_RELEVANCE = "not available for a log without relevance labels (log `relevant`: ids or sources of relevant passages)"
NO_REFERENCE = "not available for a log without reference answers"


def logged_answer(record: LogRecord) -> RagAnswer:
    """The answer as the system gave it; an empty answer is a failed answer with its reason."""
    return RagAnswer(
        question=record.question, answer=record.answer, error=record.answer_error,
        contexts=[RetrievedContext(text=c.text, chunk_id=c.id, source=c.source, score=c.score)
                  for c in record.contexts],
    )


def _relevant(value: str) -> RelevantItem:
    kind = "url" if value.startswith(("http://", "https://")) else "document" if "/" in value or "." in value \
        else "chunk_id"
    return RelevantItem(kind=kind, value=value)


def log_samples(records: Sequence[LogRecord]) -> list[EvalSample]:
    """One evaluation sample per record (id = trace id), its logged answer in `metadata`."""
    return [EvalSample(
        id=r.trace_id, question=r.question, reference_answer=r.reference_answer, kind="logged",
        relevant=[_relevant(v) for v in r.relevant],
        metadata={LOGGED_KEY: logged_answer(r).model_dump(mode="json"), "timestamp": r.timestamp.isoformat(),
                  "system_version": r.system_version, "where": r.where,
                  "feedback": r.feedback.model_dump(mode="json") if r.feedback else None,
                  # the logged root span (OpenInference, Phoenix): the OTLP export attaches results under it
                  **({"root_span_id": r.metadata["root_span_id"]} if r.metadata.get("root_span_id") else {})},
    ) for r in records]


def logged_eval_set(settings: LogInput) -> tuple[list[EvalSample], dict[str, Any]]:
    """The evaluation set a log makes (its last `window`, sampled to `budget`) and what reading it found."""
    from ragwatch.logs.read import read_log
    from ragwatch.logs.window import select_windows, window_of

    log = read_log(settings)
    if not log.records:
        raise ValueError(f"{settings.path}: no answer to evaluate\n{log.describe()}")
    budget = settings.budget or len(log.records)
    if settings.window:
        window = select_windows(log.records, WindowSettings(length=settings.window, budget=budget,
                                                            seed=settings.seed)).current
    else:
        times = [r.timestamp for r in log.records]
        window = window_of(log.records, "log", min(times), max(times) + timedelta(seconds=1), budget, settings.seed)
    report = {"log": log.source, "format": log.format, **log.counts, "window": window.describe(),
              "inclusion_prob": window.inclusion_prob, "bad_rows": [b.model_dump() for b in log.bad[:20]]}
    return log_samples(window.records), report


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
