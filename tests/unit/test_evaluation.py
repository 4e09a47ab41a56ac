"""The evaluation stages that steps call, without ZenML: judge panel and the per-item table."""

from __future__ import annotations

import json

import pytest

from ragwatch.evaluation import judge_answers, judge_panel, results_frame
from ragwatch.judges import JudgesConfig
from ragwatch.llm.types import LLMSettings
from ragwatch.types import EvalSample, RagAnswer, RetrievedContext


def _judge(model: str, score: int) -> LLMSettings:
    """A mock judge model that gives every item `score`."""
    verdict = json.dumps({"reasoning": "checked against the reference", "score": score})
    return LLMSettings(model=model, extra={"mock_response": verdict}, cache=False)


@pytest.fixture
def items(tmp_path, monkeypatch) -> tuple[list[EvalSample], list[RagAnswer]]:
    monkeypatch.setenv("RAGWATCH_CACHE_DIR", str(tmp_path))
    samples = [EvalSample(id=f"q{i}", question=f"Question {i}?", reference_answer=f"Answer {i}.") for i in range(4)]
    answers = [RagAnswer(question=s.question, answer=f"Answer {i}.", contexts=[RetrievedContext(text="ctx")])
               for i, s in enumerate(samples)]
    return samples, answers


def test_judge_panel_compares_models_in_one_table(items) -> None:
    samples, answers = items
    config = JudgesConfig(llm=_judge("openai/judge-a", 5), enabled=["correctness"])
    judged = judge_answers(samples, answers, config)
    primary = judged.metrics
    assert primary["correctness"].score == 5.0 and judged.details["usage"]["calls"] == 4 and not judged.unavailable
    panel = [_judge("openai/judge-b", 2)]

    table = judge_panel(samples, answers, config, panel, primary)

    rows = table[table["metric"] == "correctness"].set_index("judge")
    assert set(rows.index) == {"openai/judge-a", "openai/judge-b"}
    assert rows.loc["openai/judge-b", "mean"] == pytest.approx(2.0)
    # every item passes for judge a (5 >= 4) and fails for judge b: they disagree on all four
    assert rows.loc["openai/judge-b", "hamming_pass"] == pytest.approx(1.0)


def test_results_frame_has_a_row_per_sample_with_scores_and_reasons(items) -> None:
    samples, answers = items
    config = JudgesConfig(llm=_judge("openai/judge-a", 3), enabled=["correctness"])
    metrics = judge_answers(samples, answers, config).metrics
    frame = results_frame(samples, answers, metrics)
    assert list(frame["item_id"]) == ["q0", "q1", "q2", "q3"]
    assert (frame["correctness"] == 3.0).all()
    assert (frame["correctness__reason"] != "").all()
    assert list(results_frame([], [], {}).columns)[:2] == ["item_id", "question"]
