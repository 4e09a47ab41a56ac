"""Could the run evaluate the system? Budget, unreachable system and failed judges are "not evaluated"."""

from __future__ import annotations

import pytest

from ragwatch.decision.gate import GateDecision, not_evaluated
from ragwatch.decision.outcome import could_not_evaluate
from ragwatch.decision.thresholds import GateThresholds
from ragwatch.llm.budget import Budget
from ragwatch.rag import SystemCalls
from ragwatch.report.verdicts import reason_lines
from ragwatch.results import ItemScore, MetricInfo, MetricResult
from ragwatch.types import RagAnswer

IDS = [f"q{i}" for i in range(20)]
URL = "http://127.0.0.1:8000/ask"


def answers(failed: int, error: str = "http: down") -> list[RagAnswer]:
    return [RagAnswer(question=i, error=error if n < failed else None, answer="" if n < failed else "yes")
            for n, i in enumerate(IDS)]


def calls(unreachable: int, errors: int = 0) -> SystemCalls:
    failed = unreachable + errors
    return SystemCalls(target=f"http {URL}", questions=20, calls=20 + 3 * failed, answered=20 - failed, failed=failed,
                       failures={k: v for k, v in (("unreachable", unreachable), ("error", errors)) if v},
                       reasons={"connection failed: ConnectError: [Errno 111] Connection refused": unreachable}
                       if unreachable else {"HTTP 500: boom": errors})


def judge(failed_ids: set[str], error: str = "judge error: APIConnectionError: refused") -> dict[str, MetricResult]:
    items = [ItemScore(item_id=i, error=error) if i in failed_ids else ItemScore(item_id=i, score=1.0) for i in IDS]
    return {"correctness": MetricResult.from_items("correctness", items, info=MetricInfo(family="judge"))}


def check(answer_list, call_stats, metrics, **gate):
    return could_not_evaluate(answer_list, IDS, call_stats, metrics, GateThresholds(**gate))


def test_an_unreachable_system_could_not_be_evaluated_and_says_what_to_do():
    cause, action = check(answers(20), calls(20), {})
    assert cause == f"the system under test at {URL} was unreachable (20 of 20 questions: Connection refused)"
    assert action == "start it or fix evaluate.system.rag.http.url, then run again"
    assert check(answers(11), calls(11), {}) is not None
    # up to the threshold it is measured (system/availability), not excused
    assert check(answers(10), calls(10), {}) is None
    assert check(answers(10), calls(10), {}, max_unreachable=0.25) is not None
    # a system that answers with errors is reachable: its failures are a regression to measure
    assert check(answers(20), calls(0, errors=20), {}) is None


def test_a_budget_stop_anywhere_could_not_evaluate():
    budget = Budget(0.01)
    budget.reserve(1.0)
    cause, action = check(answers(0), calls(0), judge(set(IDS[5:]), f"judge error: {budget.reason()}"))
    assert cause == ("the LLM budget stopped the run (the judges: budget of $0.01 reached after 0 items; "
                     "correctness 15 of 20 items not scored)")
    assert "raise budget_usd in evaluate.judges.llm" in action
    cause, action = check(answers(3, f"generation failed: {budget.reason()}"), calls(0), {})
    assert "the generator" in cause and "3 of 20 questions not answered" in cause
    assert "evaluate.system.generator" in action


def test_judges_failing_beyond_the_threshold_could_not_evaluate():
    cause, action = check(answers(0), calls(0), judge(set(IDS[:15])))
    assert cause.startswith("the judges failed on 15 of 20 answered items (correctness: 15 of 20, most often: "
                            "judge error: APIConnectionError: refused)")
    assert "evaluate.judges.llm" in action
    assert check(answers(0), calls(0), judge(set(IDS[:10]))) is None
    # items the system did not answer are the system's failures, not the judge's
    assert check(answers(15, "http: HTTP 500"), calls(0, errors=15), judge(set(IDS[:15]))) is None


def test_not_evaluated_is_its_own_gate_status():
    decision = not_evaluated("the system was unreachable", "start it")
    assert (decision.status, decision.promote, decision.evaluated) == ("not_evaluated", False, False)
    assert reason_lines(decision) == ["the system was unreachable", "start it"]
    with pytest.raises(ValueError, match="contradicts"):
        GateDecision(promote=True, status="not_evaluated")
    assert GateDecision(promote=True).evaluated
