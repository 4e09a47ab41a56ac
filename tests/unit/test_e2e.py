"""Keyword end-to-end tests on crafted answers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ragwatch.checks.e2e import (
    DEFAULT_TABLES_PATH,
    E2ETables,
    KeywordCase,
    KeywordTable,
    check_answer,
    load_e2e_tables,
    run_e2e_tests,
)
from ragwatch.types import RagAnswer

HANDWRITTEN = Path("/work/shared/data/zenml_qa/handwritten_eval_cases.json")


def _check(table: str, words: list[str], answer: str, **options) -> list[str]:
    key = "good_words" if table == "good_responses" else "bad_words"
    case = KeywordCase(question="q?", **{key: words}, **options)
    return check_answer(table, KeywordTable(), case, answer)


def _fixed(answers: dict[str, str]):
    def answer_fn(questions: list[str]) -> list[RagAnswer]:
        return [RagAnswer(question=q, answer=answers[q]) for q in questions]

    return answer_fn


def test_shipped_defaults_are_the_guides_cases():
    tables = load_e2e_tables(DEFAULT_TABLES_PATH)
    assert tables.n_cases == 5
    if HANDWRITTEN.is_file():  # the guide's cases as data, where the shared snapshot exists
        guide = json.loads(HANDWRITTEN.read_text())
        for name in ("bad_answers", "bad_immediate_responses", "good_responses"):
            ours = [(c.question, c.words) for c in getattr(tables, name).cases]
            key = "good_words" if name == "good_responses" else "bad_words"
            assert ours == [(c["question"], c[key]) for c in guide[name]]


@pytest.mark.parametrize(
    ("table", "words", "answer", "options", "failing"),
    [
        ("bad_answers", ["Flyte", "Prefect"], "ZenML supports Kubeflow and flyte.", {}, ["Flyte"]),
        ("bad_answers", ["Flyte"], "ZenML supports Kubeflow and flyte.", {"case_sensitive": True}, []),
        ("bad_answers", ["Flyte"], "Flyteish is not a word", {}, []),
        ("bad_answers", ["Flyte"], "Flyteish is not a word", {"whole_word": False}, ["Flyte"]),
        ("bad_answers", ["AWS Step Functions"], "Try AWS  Step Functions", {}, []),
        ("bad_answers", [r"AWS\s+Step\s+Functions"], "Try AWS  Step Functions", {"regex": True},
         [r"AWS\s+Step\s+Functions"]),
        ("bad_answers", ["Flyte", "Prefect"], "Only Flyte here", {"mode": "all"}, []),
        ("bad_answers", ["Flyte", "Prefect"], "Flyte and Prefect", {"mode": "all"}, ["Flyte", "Prefect"]),
        ("good_responses", ["Kubeflow", "Airflow"], "Kubeflow, Airflow and more", {}, []),
        ("good_responses", ["Kubeflow", "Airflow"], "Only kubeflow.", {}, ["Airflow"]),
        ("good_responses", ["Kubeflow", "Airflow"], "Only kubeflow.", {"mode": "any"}, []),
        ("good_responses", ["local"], "It runs locally.", {}, ["local"]),
        ("good_responses", ["local"], "The local orchestrator.", {}, []),
        ("bad_immediate_responses", ["Yes"], '  "**Yes**, out of the box."', {}, ["Yes"]),
        ("bad_immediate_responses", ["Yes"], "yes.", {}, ["Yes"]),
        ("bad_immediate_responses", ["Yes"], "Yesterday it did not.", {}, []),
        ("bad_immediate_responses", ["Yes"], "No. Yes, you could build one.", {}, []),
        ("bad_immediate_responses", ["Yes"], "", {}, []),
    ],
)
def test_matching_options(table, words, answer, options, failing):
    assert _check(table, words, answer, **options) == failing


def test_run_reports_per_table_and_overall_failure_rates():
    tables = load_e2e_tables(DEFAULT_TABLES_PATH)
    answers = {
        "What orchestrators does ZenML support?": "ZenML supports Kubeflow, Airflow and Prefect.",
        "What is the default orchestrator in ZenML?": "The default is the local orchestrator.",
        "Does ZenML support the Flyte orchestrator out of the box?": "No, Flyte is not supported.",
        "What are the supported orchestrators in ZenML? Please list as many of the supported ones as "
        "possible.": "Kubeflow, Airflow, Kubernetes.",
    }
    asked: list[list[str]] = []

    def answer_fn(questions):
        asked.append(questions)
        return _fixed(answers)(questions)

    report = run_e2e_tests(tables, answer_fn)
    assert len(asked) == 1 and len(asked[0]) == 4  # the shared question is asked once
    failed = [r for r in report.results if not r.passed]
    assert [(r.table, r.failing_keywords) for r in failed] == [("bad_answers", ["Prefect"])]
    assert failed[0].answer == answers["What orchestrators does ZenML support?"]
    assert report.metrics["e2e_failure_rate/bad_answers"].score == 0.5
    assert report.metrics["e2e_failure_rate/good_responses"].score == 0.0
    overall = report.metrics["e2e_failure_rate"]
    assert (overall.score, overall.n_scored, overall.n_failed) == (0.2, 5, 0)
    assert report.failure_rate == 0.2
    assert "Prefect" in report.to_markdown()


def test_system_failure_is_an_explicit_failed_item():
    tables = E2ETables(good_responses=[{"question": "a?", "good_words": ["x"]},
                                       {"question": "b?", "good_words": ["y"]}])

    def answer_fn(questions):
        return [RagAnswer(question="a?", answer="x"), RagAnswer(question="b?", error="HTTP 503")]

    report = run_e2e_tests(tables, answer_fn)
    bad = report.results[1]
    assert not bad.passed and "HTTP 503" in bad.error
    metric = report.metrics["e2e_failure_rate"]
    assert (metric.score, metric.n_scored, metric.n_failed) == (0.0, 1, 1)
    assert metric.details["failure_rate_counting_errors"] == 0.5
    assert all(math.isfinite(it.score) for it in metric.items if it.ok)


def test_answer_fn_that_raises_fails_every_test_with_its_reason():
    tables = E2ETables(bad_answers=[{"question": "a?", "bad_words": ["x"]}])

    def broken(questions):
        raise ConnectionError("refused")

    report = run_e2e_tests(tables, broken)
    assert report.results[0].error == "the system under test failed: ConnectionError: refused"
    assert report.metrics["e2e_failure_rate"].score is None


def test_wrong_answer_count_is_a_clear_error():
    tables = E2ETables(bad_answers=[{"question": "a?", "bad_words": ["x"]}])
    with pytest.raises(ValueError, match="one RagAnswer per question"):
        run_e2e_tests(tables, lambda qs: [])


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        ("bad_answers:\n  cases:\n    - question: q\n      bad_words: [Yes]\n", "quote the word"),
        ("bad_answers:\n  cases:\n    - question: q\n      good_words: [x]\n", "takes `bad_words`"),
        ("good_responses:\n  cases:\n    - question: q\n      good_words: []\n", "non-empty"),
        ("good_answers:\n  cases: []\n", "good_answers"),
        ("bad_answers:\n  regex: true\n  cases:\n    - question: q\n      bad_words: ['(']\n", "regular"),
        ("bad_immediate_responses:\n  mode: all\n  cases:\n    - {question: q, bad_words: [x]}\n", "mode"),
        ("bad_answers:\n  case_sensitiv: true\n", "case_sensitiv"),
    ],
)
def test_bad_tables_get_errors_that_name_the_problem(tmp_path, yaml_text, message):
    path = tmp_path / "t.yaml"
    path.write_text(yaml_text)
    with pytest.raises(ValueError, match=message):
        load_e2e_tables(path)


def test_missing_file_and_empty_tables():
    with pytest.raises(FileNotFoundError, match="YAML"):
        load_e2e_tables("/nonexistent/e2e.yaml")
    with pytest.raises(ValueError, match="no e2e tests"):
        run_e2e_tests(E2ETables(), lambda qs: [])


def test_results_frame_has_its_columns_even_without_tests():
    from ragwatch.checks.e2e import E2ETestResult, e2e_results_frame

    empty = e2e_results_frame([])
    assert list(empty.columns) == list(E2ETestResult.model_fields) and len(empty) == 0
    empty.describe(include="all")  # what ZenML's visualization calls: fails on a frame without columns
    one = e2e_results_frame([E2ETestResult(table="good_responses", case_id="c1", question="q", answer="a",
                                           passed=False, failing_keywords=["zenml"])])
    assert one.loc[0, "failing_keywords"] == ["zenml"] and one.loc[0, "table"] == "good_responses"
