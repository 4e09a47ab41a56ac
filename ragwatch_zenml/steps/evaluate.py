"""Evaluation steps: retrieval, answers, handcrafted tests, judges, the per-item table.

Each step takes only the part of the evaluate config it uses, so that changing a judge setting
re-runs the judges and not retrieval or answer generation (the step cache keys on parameters).
"""

from __future__ import annotations

from typing import Annotated

import pandas as pd
from zenml import log_metadata, step

from ragwatch.artifacts import AnswerSet, EvalSet, MetricGroup
from ragwatch.checks.e2e import E2ETables, e2e_results_frame
from ragwatch.config import E2ESettings, RetrievalEvalSettings, SystemUnderTest
from ragwatch.evalset.assemble import generation_samples
from ragwatch.evaluation import (
    E2E_CALLS,
    all_calls,
    answer_questions,
    build_system,
    evaluate_retrieval_modes,
    judge_answers,
    judge_panel,
    results_frame,
    run_handcrafted_tests,
)
from ragwatch.indexing.embeddings import EmbeddingSettings, get_embedder
from ragwatch.indexing.index import Index
from ragwatch.judges import JudgesConfig
from ragwatch.llm.types import LLMSettings
from ragwatch_zenml.steps.secrets import export_api_keys


@step
def evaluate_retrieval_step(
    index: Index, eval_set: EvalSet, retrieval: RetrievalEvalSettings, embedding: EmbeddingSettings
) -> tuple[Annotated[MetricGroup, "retrieval_metrics"], Annotated[pd.DataFrame, "retrieval_per_question"]]:
    """Hit rate, MRR, MAP, nDCG, recall and precision at k, for every configured retrieval mode."""
    metrics, per_question = evaluate_retrieval_modes(
        index, eval_set.samples, retrieval, get_embedder(embedding)
    )
    group = MetricGroup(group="retrieval", metrics=metrics)
    log_metadata(metadata={"retrieval": {name: m.score for name, m in metrics.items()}})
    return group, per_question


@step
def generate_answers(
    index: Index, eval_set: EvalSet, system: SystemUnderTest, embedding: EmbeddingSettings
) -> Annotated[AnswerSet, "rag_answers"]:
    """The system under test answers every sample that has a reference answer.

    A system of the user's own (callable, HTTP) without `rag.cache_key` runs this step uncached
    (`pipelines/evaluate.py`): it is asked on every evaluate.
    """
    export_api_keys()
    rag, llm = build_system(system, index, get_embedder(embedding))
    samples = generation_samples(eval_set.samples)
    answers = answer_questions(rag, samples)
    calls = rag.calls()
    metadata = {
        "answers": {
            "questions": len(samples),
            "failed": sum(1 for a in answers if not a.ok),
            "system_fingerprint": rag.fingerprint(),
        },
        "system_calls": calls.model_dump(),
    }
    if llm is not None:
        metadata["usage"] = {"generator": llm.usage.model_dump()}
    log_metadata(metadata=metadata)
    usage = llm.usage.model_dump() if llm is not None else {}
    return AnswerSet(answers=answers, system=rag.describe(), fingerprint=rag.fingerprint(), usage=usage,
                     calls=calls)


@step
def run_e2e_tests_step(
    index: Index, tables: E2ETables, system: SystemUnderTest, e2e: E2ESettings, embedding: EmbeddingSettings
) -> tuple[Annotated[MetricGroup, "e2e_metrics"], Annotated[pd.DataFrame, "e2e_results"]]:
    """The handcrafted keyword tests, through the system under test."""
    if not e2e.enabled or tables.n_cases == 0:
        return MetricGroup(group="e2e"), e2e_results_frame([])
    export_api_keys()
    rag, _ = build_system(system, index, get_embedder(embedding))
    report = run_handcrafted_tests(rag, tables)
    calls = rag.calls()  # counted with the answers' (`with_keyword_test_calls`): an outage they see counts
    log_metadata(metadata={"e2e": {name: m.score for name, m in report.metrics.items()},
                           "system_calls": calls.model_dump()})
    frame = e2e_results_frame(report.results)
    return MetricGroup(group="e2e", metrics=report.metrics, details={E2E_CALLS: calls.model_dump()}), frame


@step
def with_keyword_test_calls(answers: AnswerSet, e2e: MetricGroup) -> Annotated[AnswerSet, "system_answers"]:
    """The answers, their `calls` counting the keyword tests' requests too: what the run asked the system
    under test, which `track_evaluation` logs as `system_calls` and reads for "could not evaluate"."""
    return answers.model_copy(update={"calls": all_calls(answers.calls, e2e.details.get(E2E_CALLS))})


@step
def judge_answers_step(
    eval_set: EvalSet,
    answers: AnswerSet,
    judges: JudgesConfig,
    judge_panel_models: list[LLMSettings],
    generator: LLMSettings | None,
    embedding: EmbeddingSettings,
    code_version: str,
) -> tuple[Annotated[MetricGroup, "judge_metrics"], Annotated[pd.DataFrame, "judge_agreement"]]:
    """Every enabled judge (LLM judges, embedding similarity, answer confidence) on the answers;
    with a judge panel, the same judges with each panel model and their agreement.

    `generator` is the built-in system's generator (None for the user's own system), for perplexity.
    `code_version` (`ragwatch.code_version`) is read by nobody: it is in the step's cache key, so new judge
    code or calibration data re-judges instead of serving the old verdicts (the LLM cache still serves every
    call whose prompt did not change).
    """
    export_api_keys()
    samples, answered = generation_samples(eval_set.samples), list(answers.answers)
    embedder = get_embedder(embedding)
    group = judge_answers(samples, answered, judges, embedder=embedder, generator=generator,
                          system_fingerprint=answers.fingerprint)
    agreement = pd.DataFrame(columns=["metric", "judge"])
    if judge_panel_models:
        agreement = judge_panel(samples, answered, judges, judge_panel_models, group.metrics, embedder, generator,
                                answers.fingerprint)
    log_metadata(
        metadata={
            "judges": {name: m.score for name, m in group.metrics.items() if m.score is not None},
            "usage": {"judge": group.details["usage"]},
            **({"not_available": group.unavailable} if group.unavailable else {}),
        }
    )
    return group, agreement


@step
def collect_results(
    eval_set: EvalSet, answers: AnswerSet, judge_metrics: MetricGroup
) -> Annotated[pd.DataFrame, "eval_results"]:
    """One row per judged sample: question, answer, contexts, every score and reason."""
    samples = generation_samples(eval_set.samples)
    return results_frame(samples, answers.answers, judge_metrics.metrics)
