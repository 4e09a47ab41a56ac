"""`budget_usd`: the LLM layer stops before the projected spend passes the cap; the items it could
not judge fail with the reason, the judged ones keep their scores, a re-run with more budget resumes
from the cache."""

from __future__ import annotations

import re

import pytest
from test_llm_batch import items as batch_items

from ragwatch.judges import JudgesConfig, build_judges, run_judges
from ragwatch.llm import LLMClient, LLMSettings
from ragwatch.llm.budget import Budget
from ragwatch.llm.pricing import call_cost, count_tokens
from ragwatch.types import EvalSample, RagAnswer
from tests.fake_llm_server import FakeLLMServer, schema_reply

N = 10


pytestmark = pytest.mark.usefixtures("isolated_cache")  # a fresh LLM cache per test


def items() -> tuple[list[EvalSample], list[RagAnswer]]:
    return batch_items(N)


def judge(server: FakeLLMServer, budget: float | None) -> tuple[dict, LLMClient]:
    settings = LLMSettings(model="openai/gpt-4o-mini", api_base=server.base_url, concurrency=2,
                           max_tokens=300, budget_usd=budget)
    llm = LLMClient(settings)
    config = JudgesConfig(enabled=["correctness"], llm=settings)
    return run_judges(build_judges(config, llm), *items())["correctness"], llm


def test_budget_holds_reservations_until_settled():
    budget = Budget(1.0)
    first = budget.reserve(0.6)
    assert budget.reserve(0.5) is None and budget.stopped  # 0.6 in flight + 0.5 > 1.0
    budget.settle(first, 0.1)
    assert budget.reserve(0.1) is None  # stopped stays stopped: later items fail alike
    assert budget.spent_usd == pytest.approx(0.1)


def test_judging_stops_at_the_budget_and_resumes_from_the_cache():
    with FakeLLMServer(responder=schema_reply, lifetime_s=120) as server:
        per_call = call_cost("gpt-4o-mini", count_tokens("gpt-4o-mini", [{"role": "user", "content": "x" * 2000}]),
                             300)
        budget = 3.5 * per_call
        result, llm = judge(server, budget)
        scored = [it for it in result.items if it.ok]
        failed = [it for it in result.items if not it.ok]
        assert scored and failed and len(scored) + len(failed) == N
        assert result.n_failed == len(failed)
        for item in failed:
            assert re.search(rf"budget of \${budget:g} reached after \d+ items", item.error)
        assert llm.usage.cost_usd <= budget  # never passed
        assert llm.usage.cost_usd > 0
        assert server.calls == len(scored)  # refused calls were never sent

        server.reset_counts()
        resumed, llm2 = judge(server, budget * 100)
        assert all(it.ok for it in resumed.items)
        assert server.calls == len(failed)  # the judged items came from the cache
        before = {it.item_id: it.score for it in scored}
        assert {it.item_id: it.score for it in resumed.items if it.item_id in before} == before
        assert llm2.usage.cache_hits == len(scored)
