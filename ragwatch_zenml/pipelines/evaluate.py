"""index + eval_set -> retrieval metrics, answers, handcrafted tests, judges -> tracking -> report."""

from __future__ import annotations

from zenml import pipeline

from ragwatch.checks.e2e import E2ETables
from ragwatch.code_version import code_version
from ragwatch.config import FullConfig, evalset_fingerprint, index_key
from ragwatch.evalset.job import evalset_job
from ragwatch.evaluation import generator_settings
from ragwatch_zenml.steps.evalset import retrieval_only_set
from ragwatch_zenml.steps.evaluate import (
    collect_results,
    evaluate_retrieval_step,
    generate_answers,
    judge_answers_step,
    run_e2e_tests_step,
    with_keyword_test_calls,
)
from ragwatch_zenml.steps.inputs import latest_eval_set_version, latest_index_version, load_eval_set, load_index
from ragwatch_zenml.steps.labels import attach_human_labels
from ragwatch_zenml.steps.logged import answer_without_index, not_measured
from ragwatch_zenml.steps.track import build_report_step, track_evaluation


@pipeline(enable_cache=True)
def evaluate(config: FullConfig, e2e_tables: E2ETables, system_fingerprint: str, index=None, eval_set=None):
    """`index` and `eval_set` default to the latest `rag_index` and the latest `eval_set` of this config's job
    (`ragwatch.evalset.job`), looked up when the run runs and loaded by steps (so the dashboard draws them
    and the cache keys on them).
    With `config.logs` and a system of its own (`logged`, callable, HTTP) no index is read: the log's
    system had its own retriever, and a log has no keyword tests."""
    evaluation = config.evaluate
    embedding = config.ingest.embedding
    if eval_set is None:  # the newest set of this config's job (several jobs may share the store)
        fingerprint = evalset_fingerprint(config)
        job = evalset_job(evaluation.system.model_name, fingerprint)
        eval_set = load_eval_set(latest_eval_set_version(job, fingerprint["config"]))
    # a system of the user's own is asked on every run unless its rag.cache_key names its version
    live = {"enable_cache": False} if evaluation.system.rag.asked_every_run else {}
    if config.logs is not None and evaluation.system.rag.kind != "builtin":
        retrieval = not_measured("retrieval", id="retrieval_not_measured")
        e2e = not_measured("e2e", id="e2e_not_measured")
        answers = asked = answer_without_index.with_options(**live)(eval_set, evaluation.system)
    else:
        if index is None:
            index = load_index(latest_index_version(index_key(config.ingest)))
        if config.retrieval_only:  # no LLM at all: nothing is answered or judged
            eval_set = retrieval_only_set(eval_set, "all")
        elif evaluation.without_reference == "retrieval_only":  # questions without a reference: not asked
            eval_set = retrieval_only_set(eval_set, "retrieval_only")
        # each step gets only its part of the config: a judge setting never re-runs retrieval or answers
        retrieval, _per_question = evaluate_retrieval_step(index, eval_set, evaluation.retrieval, embedding)
        answers = generate_answers.with_options(**live)(index, eval_set, evaluation.system, embedding)
        e2e, _e2e_results = run_e2e_tests_step.with_options(**live)(
            index, e2e_tables, evaluation.system, evaluation.e2e, embedding
        )
        asked = with_keyword_test_calls(answers, e2e)  # the keyword tests' requests count as the answers' do
    judges, agreement = judge_answers_step(
        eval_set, answers, evaluation.judges, evaluation.judge_panel, generator_settings(evaluation.system),
        embedding, code_version(),
    )
    judges = attach_human_labels(judges, evaluation.system.model_name)  # PPI++ where people labelled items
    results = collect_results(eval_set, answers, judges)
    metrics, comparisons, gate = track_evaluation(
        retrieval, e2e, judges, eval_set, asked, evaluation, system_fingerprint
    )
    build_report_step(metrics, comparisons, gate, results, agreement, eval_set, evaluation, system_fingerprint)
