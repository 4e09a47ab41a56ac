"""Evaluation steps: retrieval, answers, handcrafted tests, judges, the per-item table."""

from __future__ import annotations

from typing import Annotated

import pandas as pd
from zenml import log_metadata, step

from ragwatch.artifacts import AnswerSet, EvalSet, MetricGroup
from ragwatch.config import EvaluateConfig
from ragwatch.e2e import E2ETables
from ragwatch.embeddings import EmbeddingSettings, get_embedder
from ragwatch.evalsets import generation_samples
from ragwatch.evaluation import (
    answer_questions,
    build_system,
    evaluate_retrieval_modes,
    judge_answers,
    judge_panel,
    results_frame,
    run_handcrafted_tests,
)
from ragwatch.index import Index
from steps.secrets import export_api_keys


@step
def evaluate_retrieval_step(
    index: Index, eval_set: EvalSet, config: EvaluateConfig, embedding: EmbeddingSettings
) -> tuple[Annotated[MetricGroup, "retrieval_metrics"], Annotated[pd.DataFrame, "retrieval_per_question"]]:
    """Hit rate, MRR, MAP, nDCG, recall and precision at k, for every configured retrieval mode."""
    metrics, per_question = evaluate_retrieval_modes(
        index, eval_set.samples, config.retrieval, get_embedder(embedding)
    )
    group = MetricGroup(group="retrieval", metrics=metrics)
    log_metadata(metadata={"retrieval": {name: m.score for name, m in metrics.items()}})
    return group, per_question


@step
def generate_answers(
    index: Index, eval_set: EvalSet, config: EvaluateConfig, embedding: EmbeddingSettings
) -> Annotated[AnswerSet, "rag_answers"]:
    """The system under test answers every sample that has a reference answer."""
    export_api_keys()
    rag, llm = build_system(config.system, index, get_embedder(embedding))
    samples = generation_samples(eval_set.samples)
    answers = answer_questions(rag, samples)
    metadata = {
        "answers": {
            "questions": len(samples),
            "failed": sum(1 for a in answers if not a.ok),
            "system_fingerprint": rag.fingerprint(),
        }
    }
    if llm is not None:
        metadata["usage"] = {"generator": llm.usage.model_dump()}
    log_metadata(metadata=metadata)
    usage = llm.usage.model_dump() if llm is not None else {}
    return AnswerSet(answers=answers, system=rag.describe(), fingerprint=rag.fingerprint(), usage=usage)


@step
def run_e2e_tests_step(
    index: Index, tables: E2ETables, config: EvaluateConfig, embedding: EmbeddingSettings
) -> tuple[Annotated[MetricGroup, "e2e_metrics"], Annotated[pd.DataFrame, "e2e_results"]]:
    """The handcrafted keyword tests, through the system under test."""
    if not config.e2e.enabled or tables.n_cases == 0:
        return MetricGroup(group="e2e"), pd.DataFrame()
    export_api_keys()
    rag, _ = build_system(config.system, index, get_embedder(embedding))
    report = run_handcrafted_tests(rag, tables)
    log_metadata(metadata={"e2e": {name: m.score for name, m in report.metrics.items()}})
    frame = pd.DataFrame([r.model_dump() for r in report.results])
    return MetricGroup(group="e2e", metrics=report.metrics), frame


@step
def judge_answers_step(
    eval_set: EvalSet, answers: AnswerSet, config: EvaluateConfig, embedding: EmbeddingSettings
) -> tuple[Annotated[MetricGroup, "judge_metrics"], Annotated[pd.DataFrame, "judge_agreement"]]:
    """Every enabled LLM judge (and the embedding similarity) on the answers; with a judge panel,
    the same judges with each panel model and their agreement."""
    export_api_keys()
    samples, answered = generation_samples(eval_set.samples), list(answers.answers)
    embedder = get_embedder(embedding)
    metrics, usage = judge_answers(samples, answered, config.judges, embedder=embedder)
    agreement = pd.DataFrame(columns=["metric", "judge"])
    if config.judge_panel:
        agreement = judge_panel(samples, answered, config.judges, config.judge_panel, metrics, embedder)
    log_metadata(
        metadata={
            "judges": {name: m.score for name, m in metrics.items()},
            "usage": {"judge": usage},
        }
    )
    return MetricGroup(group="judges", metrics=metrics, details={"usage": usage}), agreement


@step
def collect_results(
    eval_set: EvalSet, answers: AnswerSet, judge_metrics: MetricGroup
) -> Annotated[pd.DataFrame, "eval_results"]:
    """One row per judged sample: question, answer, contexts, every score and reason."""
    samples = generation_samples(eval_set.samples)
    return results_frame(samples, answers.answers, judge_metrics.metrics)
