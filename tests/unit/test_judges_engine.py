"""The judge engine and registry: a new judge declared here (this file only) registers, configures and runs.

The judge below is the whole of what a new judge costs: options, a prompt, a pydantic output model,
how a reply becomes a score, typed metric information, and one registration line.
"""

from __future__ import annotations

import json
from typing import Literal

import pytest
from pydantic import BaseModel, ValidationError
from test_judges_support import MockLLM, answer, fake_server, last_user, no_nan, sample

from ragwatch.judges import (
    Call,
    JudgeDeps,
    JudgeOptions,
    JudgesConfig,
    LLMJudge,
    Score,
    build_judges,
    fence,
    register_judge,
    run_judges,
)
from ragwatch.judges.engine import gather, run_judge
from ragwatch.results import MetricInfo

__all__ = ["fake_server"]


pytestmark = pytest.mark.usefixtures("isolated_cache")  # a fresh LLM cache per test


# ----------------------------------------------------------------- a judge declared in this file
class PolitenessOptions(JudgeOptions):
    threshold: float | None = 0.5


class PolitenessVerdict(BaseModel):
    reason: str
    polite: Literal["yes", "no"]


class PolitenessJudge(LLMJudge):
    """Is the answer polite? 1 or 0, with the judge's reason."""

    def __init__(self, llm, *, model: str | None = None, threshold: float | None = 0.5) -> None:
        self.model = model
        self.llm = llm
        self.metrics = {"politeness": MetricInfo(binary=True, threshold=threshold, prompt_version="polite-v1")}

    def plan(self, sample, answer):
        if not answer.answer.strip():
            return Score(error="empty answer")
        (gen,) = yield [Call([{"role": "user", "content": fence("ANSWER", answer.answer)}], PolitenessVerdict,
                             "Is the ANSWER polite? Reply with JSON.")]
        if not gen.ok:
            return Score(error=gen.error)
        return Score(score=float(gen.parsed.polite == "yes"), details={"reason": gen.parsed.reason})


@register_judge("politeness", options=PolitenessOptions)
def build_politeness(options: PolitenessOptions, deps: JudgeDeps) -> PolitenessJudge:
    return PolitenessJudge(deps.llm, model=deps.model, threshold=options.threshold)


# ---------------------------------------------------------------------------------------- tests
def test_a_judge_declared_in_a_test_registers_configures_and_runs():
    config = JudgesConfig.model_validate({"llm": {"model": "openai/mock-judge"}, "enabled": ["politeness"],
                                          "politeness": {"threshold": 1.0}})
    llm = MockLLM(json.dumps({"reason": "Says please.", "polite": "yes"}))
    results = run_judges(build_judges(config, llm), [sample(1), sample(2)], [answer("Please see Paris."), answer("")])
    result = results["politeness"]
    no_nan(result)
    assert result.score == 1.0 and result.n_scored == 1 and result.items[1].error == "empty answer"
    assert result.info.threshold == 1.0 and result.info.binary and result.info.prompt_version == "polite-v1"
    assert result.items[0].passed is True and result.details["pass_rate"] == 1.0
    assert result.details["usage"]["calls"] == 1 and result.items[0].details["reason"] == "Says please."
    assert "higher_is_better" not in result.details and "threshold" not in result.details
    # the engine stamps the identity of every judge's metric: who made it and with the configured model
    assert result.info.is_judge and result.info.judge_model == config.llm.model
    assert result.details["usage"]["model"] == config.llm.model
    with pytest.raises(ValidationError, match="tresh"):
        JudgesConfig.model_validate({"politeness": {"treshold": 1}})


def test_a_stage_is_one_batch_across_items(fake_server):
    server = fake_server(lambda messages: json.dumps({"reason": "r", "polite": "no"}))
    result = PolitenessJudge(server.client()).evaluate([sample(i) for i in range(5)], [answer()] * 5)
    assert result.score == 0.0 and len(server.requests) == 5
    assert all("<<<BEGIN ANSWER>>>" in last_user(r["messages"]) for r in server.requests)


class _TwoStages(LLMJudge):
    """A judge whose second stage depends on the first; one item raises inside its plan."""

    def __init__(self, llm) -> None:
        self.llm = llm
        self.metrics = {"first": MetricInfo(), "second": MetricInfo(direction="lower", scale=(1.0, 5.0))}

    def plan(self, sample, answer):
        if "boom" in answer.answer:
            raise RuntimeError("a bug in the judge")
        (a,) = yield [Call([{"role": "user", "content": "stage one"}])]
        both = yield [Call([{"role": "user", "content": f"stage two after {a.text}"}])] * 2
        return {"first": Score(score=1.0), "second": Score(score=float(len(both)))}


def test_multi_stage_plans_multi_metric_results_and_explicit_failures():
    results = run_judge(_TwoStages(MockLLM("ok")), [sample(1), sample(2)], [answer(), answer("boom")])
    assert results["first"].score == 1.0 and results["second"].score == 2.0
    assert results["second"].info.direction == "lower"
    assert results["first"].items[1].error == "judge error: RuntimeError: a bug in the judge"
    assert results["first"].details["usage"]["calls"] == 3  # 1 + 2 for the item that ran
    assert results["first"].details["usage_shared_by"] == ["first", "second"]


def test_gather_merges_stages_of_several_plans():
    def plan(n):
        for _ in range(n):
            yield [Call([{"role": "user", "content": "x"}])]
        return Score(score=float(n))

    driver = gather({"a": plan(1), "b": plan(2), "c": Score(error="decided")})
    assert len(next(driver)) == 2  # stage 1: both plans
    from ragwatch.llm.types import Generation

    gens = [Generation(model="m", text="t")] * 2
    assert len(driver.send(gens)) == 1  # stage 2: only b
    with pytest.raises(StopIteration) as stop:
        driver.send(gens[:1])
    assert {k: v.score for k, v in stop.value.value.items()} == {"a": 1.0, "b": 2.0, "c": None}
