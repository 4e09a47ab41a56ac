"""A run with a judge budget stops at it with explicit failures; a re-run with more budget resumes
from the cache (the judge is the fake OpenAI-compatible server at gpt-4o-mini prices)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragwatch.judges.likert import REASONING_CHARS
from ragwatch.llm.pricing import call_cost, count_tokens
from ragwatch_zenml.commands.runner import run_pipeline
from tests.fake_llm_server import FakeLLMServer, schema_reply
from tests.integration.conftest import write_config

pytestmark = [pytest.mark.integration, pytest.mark.slow]
SYSTEM = {"model_name": "ragwatch-budget-rag", "rag": {"kind": "callable", "callable": "fixed_rag:answer"}}
MAX_TOKENS = 160


def long_reasoning(body: dict) -> str:
    """A verdict whose reasoning fills its bound: each call costs about its projection."""
    reply = json.loads(schema_reply(body))
    reply["reasoning"] = ("The answer states the same fact as the reference answer. " * 20)[:REASONING_CHARS]
    return json.dumps(reply)


def _config(directory: Path, corpus: Path, base_url: str, budget: float) -> Path:
    judge = {"model": "openai/gpt-4o-mini", "api_base": base_url, "max_tokens": MAX_TOKENS, "concurrency": 1,
             "budget_usd": budget}
    judges = {"llm": judge, "enabled": ["correctness"]}
    return write_config(directory, corpus, synthetic=False, system=SYSTEM, judges=judges, e2e={"enabled": False},
                        gate={"gated_metrics": ["correctness"]})


def test_a_budget_stops_the_judge_and_a_higher_one_resumes(tmp_path: Path, tiny_corpus: Path, oracle_module) -> None:
    oracle_module({"*": "The local orchestrator is the default orchestrator of ZenML."})
    # about one call's projection (a judge prompt of ~2000 characters, max_tokens of reply); a call
    # costs about as much, so 1.5 of them lets the first item through and stops before the third
    prompt = count_tokens("gpt-4o-mini", [{"role": "user", "content": "The judge reads this. " * 90}])
    per_call = call_cost("gpt-4o-mini", prompt, MAX_TOKENS)
    with FakeLLMServer(responder=long_reasoning, lifetime_s=600) as server:
        first = run_pipeline("full", _config(tmp_path, tiny_corpus, server.base_url, 1.5 * per_call))
        correctness = first.metrics.metrics["correctness"]
        failed = [it for it in correctness.items if not it.ok]
        assert correctness.n_scored >= 1 and failed
        assert all("budget of $" in it.error and "reached after" in it.error for it in failed)
        sent = server.calls
        assert sent == correctness.n_scored

        second = run_pipeline("full", _config(tmp_path, tiny_corpus, server.base_url, 1.0))
        resumed = second.metrics.metrics["correctness"]
        assert resumed.n_failed == 0 and resumed.n_scored == len(correctness.items)
        assert server.calls - sent == len(failed)  # the judged items came from the cache
        before = {it.item_id: it.score for it in correctness.items if it.ok}
        assert {it.item_id: it.score for it in resumed.items if it.item_id in before} == before
