"""Every question is asked (issue 45): which samples are answered, "no reference answer" as a skipped item
(not a judge failure), the keyword tests' calls counted with the answers', and the job an evaluation
set belongs to."""

from __future__ import annotations

import pytest

from ragwatch.checks.e2e import E2ETables, run_e2e_tests
from ragwatch.decision.outcome import could_not_evaluate
from ragwatch.decision.thresholds import GateThresholds
from ragwatch.evalset.assemble import generation_samples, mark_retrieval_only
from ragwatch.evalset.job import evalset_job, job_tag, model_of
from ragwatch.evaluation import all_calls
from ragwatch.rag.base import CallLog, SystemCalls
from ragwatch.results import NO_REFERENCE, ItemScore, MetricInfo, MetricResult
from ragwatch.types import EvalSample, RagAnswer

WITH = EvalSample(id="a", question="Which orchestrator is the default?", reference_answer="The local one.")
WITHOUT = EvalSample(id="b", question="How do I add a stack component?")
BLANK = EvalSample(id="c", question="What is a step?", reference_answer="  ")
LOGGED = EvalSample(id="d", question="What is ZenML?", kind="logged")


def test_every_question_is_answered_unless_marked_retrieval_only():
    samples = [WITH, WITHOUT, BLANK, LOGGED]
    assert [s.id for s in generation_samples(samples)] == ["a", "b", "c", "d"]
    marked = mark_retrieval_only(samples, "retrieval_only")  # evaluate.without_reference: retrieval_only
    assert [s.id for s in generation_samples(marked)] == ["a", "d"]  # a logged question is always answered
    assert [s.id for s in generation_samples(mark_retrieval_only(samples, "all"))] == ["d"]
    assert mark_retrieval_only(samples, "answer") == samples
    assert not WITHOUT.metadata  # marking copies: the stored set is unchanged
    with pytest.raises(ValueError, match="all, answer or retrieval_only"):
        mark_retrieval_only(samples, "some")  # type: ignore[arg-type]


def test_a_skipped_item_is_counted_apart_from_failures():
    items = [ItemScore(item_id="a", score=1.0), ItemScore(item_id="b", error=NO_REFERENCE, skipped=True),
             ItemScore(item_id="c", error="judge reply unparsable")]
    result = MetricResult.from_items("correctness", items, info=MetricInfo(family="judge"))
    assert (result.score, result.n_scored, result.n_failed, result.n_skipped) == (1.0, 1, 1, 1)
    assert result.summary()["n_skipped"] == 1
    with pytest.raises(ValueError, match="says why"):
        ItemScore(item_id="x", skipped=True)


def test_no_reference_answer_is_not_the_judges_failing():
    """Every question without a reference: correctness skips all of them, faithfulness scores them; the
    run evaluated (no "the judges failed"), while a judge that failed on the same share still stops it."""
    ids = [f"q{i}" for i in range(6)]
    answers = [RagAnswer(question=i, answer="The local orchestrator.") for i in ids]
    judge = MetricInfo(family="judge")
    correctness = MetricResult.from_items(
        "correctness", [ItemScore(item_id=i, error=NO_REFERENCE, skipped=True) for i in ids], info=judge)
    faithfulness = MetricResult.from_items("faithfulness", [ItemScore(item_id=i, score=0.8) for i in ids], info=judge)
    metrics = {"correctness": correctness, "faithfulness": faithfulness}
    assert could_not_evaluate(answers, ids, None, metrics, GateThresholds()) is None
    broken = MetricResult.from_items(
        "correctness", [ItemScore(item_id=i, error="judge error: Timeout") for i in ids], info=judge)
    cause = could_not_evaluate(answers, ids, None, {"correctness": broken}, GateThresholds())
    assert cause is not None and "the judges failed on 6 of 6" in cause[0]


def _calls(target: str, answered: int, unreachable: int) -> SystemCalls:
    log = CallLog(target)
    for _ in range(answered):
        log.count("calls")
        log.question()
    for _ in range(unreachable):
        log.count("calls", 3)
        log.count("errors", 3)
        log.question("unreachable", "connection failed: ConnectError: [Errno 111] Connection refused")
    return log.snapshot()


def test_the_keyword_tests_calls_count_with_the_answers():
    target = "http http://127.0.0.1:9/ask"
    answers, tests = _calls(target, 4, 0), _calls(target, 0, 2)
    both = all_calls(answers, tests.model_dump())
    assert (both.questions, both.calls, both.answered, both.failed, both.keyword_tests) == (6, 10, 4, 2, 2)
    assert both.failures == {"unreachable": 2} and both.line().startswith("10 requests for 6 questions (2 of them")
    assert all_calls(answers, None) is answers and all_calls(None, None) is None
    assert all_calls(answers, SystemCalls(target=target)) is answers  # keyword tests off: nothing asked

    # nothing answered (every question retrieval-only), the keyword tests found the system down: exit 3
    alone = all_calls(SystemCalls(target=target), tests)
    cause = could_not_evaluate([], [], alone, {}, GateThresholds())
    assert cause is not None
    assert cause[0] == ("the system under test at http://127.0.0.1:9/ask was unreachable "
                        "(2 of 2 questions: Connection refused)")


def test_keyword_tests_failing_to_reach_the_system_fail_with_the_reason():
    case = {"question": "Which orchestrator?", "good_words": ["local"]}
    tables = E2ETables.model_validate({"good_responses": [case]})
    down = [RagAnswer(question="Which orchestrator?", error="connection failed: Connection refused")]
    report = run_e2e_tests(tables, lambda questions: down)
    metric = report.metrics["e2e_failure_rate"]
    assert (metric.n_failed, metric.n_skipped) == (1, 0) and "Connection refused" in metric.items[0].error


def test_an_evaluation_set_belongs_to_its_job():
    fingerprint = {"config": "3fa2c1d9e0ab77f1", "inputs": "i", "testset": "t"}
    job = evalset_job("ragwatch-rag", fingerprint)
    assert job == "ragwatch-rag@3fa2c1d9e0ab" and model_of(job) == "ragwatch-rag"
    assert job_tag(job) == "evalset-job:ragwatch-rag@3fa2c1d9e0ab"
    # another testset block, or another model, is another job; the content of the files is not the job
    assert evalset_job("ragwatch-rag", {**fingerprint, "config": "ffff"}) != job
    assert evalset_job("ragwatch-logged", fingerprint) != job
    assert evalset_job("ragwatch-rag", {**fingerprint, "inputs": "other"}) == job


def test_a_quick_look_asks_the_users_questions_and_measures_the_rest_by_retrieval():
    from ragwatch.config import FullConfig
    from ragwatch.quick import quick_config

    assert FullConfig().evaluate.without_reference == "answer"  # every question asked by default
    assert quick_config(FullConfig()).evaluate.without_reference == "retrieval_only"  # the synthetic pairs only
    own = FullConfig.model_validate({"testset": {"imports": [{"format": "jsonl", "path": "questions.jsonl"}]}})
    assert quick_config(own).evaluate.without_reference == "answer"  # a sample of the user's own questions


def test_the_printout_says_why_items_were_skipped():
    from ragwatch.report.summary import metrics_text

    items = [ItemScore(item_id="a", error=NO_REFERENCE, skipped=True), ItemScore(item_id="b", error=NO_REFERENCE,
                                                                                 skipped=True)]
    line = metrics_text({"correctness": MetricResult.from_items("correctness", items)}).splitlines()[1]
    assert line.split()[:4] == ["correctness", "-", "0", "0"] and line.endswith("2 skipped: no reference answer")
