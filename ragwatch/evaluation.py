"""One evaluation, stage by stage, without ZenML: retrieval, answers, handcrafted tests, judges.

The pipeline steps call these functions; a notebook can call them the same way.

Example:
    >>> index = Index.build(chunks, embedder)  # doctest: +SKIP
    >>> settings = RetrievalEvalSettings()
    >>> metrics, per_question = evaluate_retrieval_modes(index, samples, settings, embedder)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ragwatch.artifacts import MetricGroup
from ragwatch.checks.e2e import E2EReport, E2ETables, run_e2e_tests
from ragwatch.config import RetrievalEvalSettings, SystemUnderTest
from ragwatch.indexing.embeddings import Embedder
from ragwatch.indexing.index import Index
from ragwatch.judges import JudgesConfig, build_judges, compare_judges, run_judges, unavailable_metrics
from ragwatch.llm.client import LLMClient
from ragwatch.llm.types import LLMSettings
from ragwatch.rag import RAGSystem, SystemCalls, build_rag
from ragwatch.results import MetricResult
from ragwatch.retrieval.embedding_cache import RememberedEmbedder
from ragwatch.retrieval.evaluate import evaluate_retrieval
from ragwatch.retrieval.ranking import rankings_with_documents
from ragwatch.types import EvalSample, RagAnswer


def has_relevance(sample: EvalSample) -> bool:
    return bool(sample.relevant or sample.reference_contexts)


def evaluate_retrieval_modes(
    index: Index, samples: Sequence[EvalSample], settings: RetrievalEvalSettings, embedder: Embedder | None
) -> tuple[dict[str, MetricResult], pd.DataFrame]:
    """Every retrieval mode of `settings` on the samples that carry relevance labels.

    Metric names are `<mode>/<measure>`, e.g. `hybrid/hit_rate@5`. Samples without labels (e.g.
    questions the corpus cannot answer) are not retrieval questions; their count is in `details`.
    """
    labelled = [s for s in samples if has_relevance(s)]
    excluded = len(samples) - len(labelled)
    metrics: dict[str, MetricResult] = {}
    rows: list[dict[str, Any]] = []
    if not labelled:
        return metrics, pd.DataFrame()
    questions = [s.question for s in labelled]
    embedder = RememberedEmbedder(embedder) if embedder is not None else None  # embed once for all modes
    depth = max(settings.ks)
    for mode in settings.modes:
        # deep enough that documents ranked by their best chunk (MaxP) fill the top `depth`
        rankings = rankings_with_documents(
            lambda qs, d, m=mode: index.search_many(qs, k=d, mode=m, embedder=embedder), questions, depth,
            limit=len(index),
        ) if settings.match.rank_unit != "chunk" else index.search_many(questions, depth, mode, embedder)
        report = evaluate_retrieval(labelled, rankings, settings.ks, settings.match, corpus_chunks=index.chunks)
        for name, result in report.metrics.items():
            result.details["excluded_without_labels"] = excluded
            info = result.info.model_copy(update={"mode": mode})
            metrics[f"{mode}/{name}"] = result.model_copy(update={"name": f"{mode}/{name}", "info": info})
        for row in report.per_question:
            rows.append({"mode": mode, **row.model_dump(exclude={"measures"}), **row.measures})
    return metrics, pd.DataFrame(rows)


def generator_settings(system: SystemUnderTest) -> LLMSettings | None:
    """The generator of the built-in system; None for a system of the user's own (callable, HTTP)."""
    return system.generator if system.rag.kind == "builtin" else None


def build_system(
    system: SystemUnderTest, index: Index | None, embedder: Embedder | None
) -> tuple[RAGSystem, LLMClient | None]:
    """The system under test and (for the built-in one) its generator client."""
    if system.rag.kind != "builtin":
        return build_rag(system.rag), None
    llm = LLMClient(system.generator)
    return build_rag(system.rag, index=index, embedder=embedder, llm=llm), llm


def answer_questions(rag: RAGSystem, samples: Sequence[EvalSample]) -> list[RagAnswer]:
    """One answer per sample, in order; a failed answer carries its error. A system that answers
    samples (a log: `LoggedRAG`) gets the samples, so it finds each one's own answer by id."""
    answer_samples = getattr(rag, "answer_samples", None)
    if answer_samples is not None:
        return answer_samples(list(samples))
    return rag.answer_many([s.question for s in samples])


def run_handcrafted_tests(rag: RAGSystem, tables: E2ETables) -> E2EReport:
    """The keyword tests through `rag`; `rag.calls()` then counts their requests (`E2E_CALLS`, `all_calls`)."""
    return run_e2e_tests(tables, rag.answer_many)


E2E_CALLS = "system_calls"  # the keyword tests' `SystemCalls`, in the e2e `MetricGroup.details`


def all_calls(answers: SystemCalls | None, keyword_tests: SystemCalls | dict[str, Any] | None) -> SystemCalls | None:
    """The system's calls for the evaluation set's answers and for the keyword tests, counted together
    (`SystemCalls.keyword_tests` says how many questions were the tests'); None when neither asked."""
    tests = SystemCalls.model_validate(keyword_tests) if isinstance(keyword_tests, dict) else keyword_tests
    if tests is None or not tests.questions:
        return answers
    if answers is None:
        return SystemCalls(target=tests.target).plus(tests, keyword_tests=True)
    return answers.plus(tests, keyword_tests=True)


def judge_answers(
    samples: list[EvalSample],
    answers: list[RagAnswer],
    config: JudgesConfig,
    embedder: Embedder | None = None,
    generator: LLMSettings | None = None,
    system_fingerprint: str | None = None,
) -> MetricGroup:
    """Every enabled judge on the answered samples (written by the system with `system_fingerprint`, when
    known): the metrics, the judge LLM's usage
    (`details["usage"]`) and the metrics this system cannot have (`unavailable`, with the reason).

    `generator` is the built-in system's generator (None for a system of the user's own): answer
    confidence uses the logprobs captured at generation, perplexity may rescore answers with it; a
    system whose answers carry no logprobs has neither (not available, not failed).
    """
    llm = LLMClient(config.llm)
    generator_llm = LLMClient(generator) if generator is not None else None
    judges = build_judges(config, llm, embedder=embedder, generator_llm=generator_llm,
                          generator_model=generator.model if generator is not None else None,
                          system_fingerprint=system_fingerprint)
    metrics = run_judges(judges, samples, answers)
    return MetricGroup(group="judges", metrics=metrics, details={"usage": llm.usage.model_dump()},
                       unavailable=unavailable_metrics(judges, answers))


def judge_panel(
    samples: list[EvalSample],
    answers: list[RagAnswer],
    config: JudgesConfig,
    panel: Sequence[LLMSettings],
    primary: dict[str, MetricResult],
    embedder: Embedder | None = None,
    generator: LLMSettings | None = None,
    system_fingerprint: str | None = None,
) -> pd.DataFrame:
    """The same judges with every model of `panel`, next to the primary judge model.

    One row per (metric, judge model): score distribution, agreement with the primary judge
    (Cohen's kappa and Hamming distance on pass/fail, Spearman on scores) and cost.
    """
    results = {config.llm.model: primary}
    for settings in panel:
        panel_config = config.model_copy(update={"llm": settings})
        results[settings.model] = judge_answers(samples, answers, panel_config, embedder, generator,
                                                       system_fingerprint).metrics
    return compare_judges(results, reference=config.llm.model)


def results_frame(
    samples: Sequence[EvalSample], answers: Sequence[RagAnswer], metrics: dict[str, MetricResult]
) -> pd.DataFrame:
    """One row per sample: question, answer, contexts, reference, and every per-item score and reason.

    Columns per metric: `<metric>` (score or empty), `<metric>__reason`, `<metric>__error`.
    """
    rows: dict[str, dict[str, Any]] = {}
    for sample, answer in zip(samples, answers, strict=True):
        rows[sample.id] = {
            "item_id": sample.id,
            "question": sample.question,
            "kind": sample.kind,
            "answer": answer.answer,
            "answer_error": answer.error,
            "contexts": [c.text for c in answer.contexts],
            "context_sources": [c.source or c.chunk_id or "" for c in answer.contexts],
            "reference_answer": sample.reference_answer,
        }
    for name, result in metrics.items():
        for item in result.items:
            row = rows.get(item.item_id)
            if row is None:
                continue
            row[name] = item.score
            row[f"{name}__reason"] = str(item.details.get("reason", "")) if item.details else ""
            row[f"{name}__error"] = item.error
    base = ["item_id", "question", "kind", "answer", "answer_error", "contexts", "context_sources",
            "reference_answer"]
    frame = pd.DataFrame(list(rows.values()))
    return frame if len(frame) else pd.DataFrame(columns=base)
