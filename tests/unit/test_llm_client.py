"""LLMClient logic with litellm's mock_response: structured output, repair, cache, usage, secrets."""

from __future__ import annotations

import math
from typing import Literal

import litellm
import pytest
from pydantic import BaseModel

from ragwatch.llm import LLMClient, LLMSettings


class Verdict(BaseModel):
    verdict: Literal["yes", "no"]


pytestmark = pytest.mark.usefixtures("isolated_cache")  # a fresh LLM cache per test


def client(**kw) -> LLMClient:
    kw.setdefault("model", "gpt-4o-mini")
    kw.setdefault("retry_base_s", 0.001)
    return LLMClient(LLMSettings(**kw))


def test_text_generation_and_usage():
    c = client(cache=False)
    gen = c.generate("Say hi", mock_response="hello there")
    assert gen.ok and gen.text == "hello there" and gen.parsed is None
    assert gen.attempts == 1 and gen.repairs == 0 and not gen.cached
    assert c.usage.requests == 1 and c.usage.calls == 1 and c.usage.failures == 0
    assert c.usage.completion_tokens > 0 and math.isfinite(c.usage.cost_usd)


def test_structured_output_tolerates_code_fences():
    gen = client(cache=False).generate("q", schema=Verdict, mock_response='```json\n{"verdict": "no"}\n```')
    assert gen.ok and gen.parsed == Verdict(verdict="no")


def test_invalid_reply_is_repaired_then_fails_explicitly_with_raw():
    c = client(cache=False, max_repairs=2)
    gen = c.generate("q", schema=Verdict, mock_response='{"verdict": "maybe"}')
    assert not gen.ok and gen.parsed is None
    assert "after 2 repair(s)" in gen.error and "verdict" in gen.error
    assert gen.raw == '{"verdict": "maybe"}' and gen.repairs == 2
    assert c.usage.failures == 1 and c.usage.repairs == 2


def test_generate_many_keeps_order_and_never_raises():
    c = client(cache=False)
    mocks = ['{"verdict": "yes"}', "not json"]
    gens = [c.generate_many(["a", "b", "c"], schema=Verdict, mock_response=m) for m in mocks]
    assert [g.parsed.verdict for g in gens[0]] == ["yes"] * 3
    assert all(not g.ok and g.error for g in gens[1])
    assert c.usage.requests == 6 and c.usage.failures == 3


def test_cache_serves_second_call_and_counts_hits(tmp_path):
    c = client(cache_dir=str(tmp_path / "c"))
    first = c.generate("q", schema=Verdict, mock_response='{"verdict": "yes"}')
    second = c.generate("q", schema=Verdict, mock_response='{"verdict": "yes"}')
    assert not first.cached and second.cached and second.parsed == first.parsed
    assert c.usage.calls == 1 and c.usage.cache_hits == 1 and c.usage.requests == 2
    # a new client (another process, same directory) hits the same cache
    again = client(cache_dir=str(tmp_path / "c")).generate("q", schema=Verdict, mock_response='{"verdict": "yes"}')
    assert again.cached


def test_cache_key_covers_params_and_failures_are_not_cached(tmp_path):
    c = client(cache_dir=str(tmp_path / "c"))
    c.generate("q", mock_response="a")
    assert not c.generate("q", mock_response="a", temperature=0.7).cached
    assert not c.generate("q", mock_response="a", system="be brief").cached
    bad = c.generate("q2", schema=Verdict, mock_response="nope")
    assert not bad.ok
    assert not c.generate("q2", schema=Verdict, mock_response="nope").cached


def test_cache_off_flag(tmp_path):
    c = client(cache=False, cache_dir=str(tmp_path / "c"))
    c.generate("q", mock_response="a")
    assert not c.generate("q", mock_response="a").cached
    assert not (tmp_path / "c").exists()


def test_usage_since_gives_a_batch_record():
    c = client(cache=False)
    c.generate("warm", mock_response="x")
    mark = c.usage.model_copy()
    c.generate_many(["a", "b"], mock_response="y")
    batch = c.usage_since(mark)
    assert batch.requests == 2 and batch.calls == 2 and c.usage.requests == 3


def test_bad_arguments_raise_clear_errors():
    c = client(cache=False)
    with pytest.raises(TypeError, match="unknown generation option"):
        c.generate("q", temprature=0.1)
    with pytest.raises(TypeError, match="pydantic BaseModel"):
        c.generate("q", schema=dict)
    with pytest.raises(ValueError, match="prompt is empty"):
        c.generate("  ")
    with pytest.raises(ValueError, match="chat messages"):
        c.generate([{"content": "no role"}])
    with pytest.raises(TypeError, match="list of prompts"):
        c.generate_many("one prompt")


def test_auth_error_fails_fast_without_retry_and_hides_the_key(monkeypatch):
    secret = "sk-test-SECRET-0123456789abcdef"
    monkeypatch.setenv("MY_KEY", secret)
    c = client(cache=False, api_key_env="MY_KEY", max_retries=3)
    exc = litellm.AuthenticationError(f"Incorrect API key provided: {secret}", llm_provider="openai", model="x")
    gen = c.generate("q", mock_response=exc)
    assert not gen.ok and gen.attempts == 1 and c.usage.retries == 0
    assert "MY_KEY" in gen.error and "api_key_env" in gen.error
    assert secret not in gen.error and secret not in repr(gen) and secret not in c.usage.model_dump_json()


def test_missing_key_names_the_environment_variable(monkeypatch):
    monkeypatch.delenv("ABSENT_KEY", raising=False)
    gens = client(cache=False, api_key_env="ABSENT_KEY").generate_many(["a", "b", "c"])
    assert all(not g.ok for g in gens)
    assert "ABSENT_KEY" in gens[0].error
    assert all(g.attempts == 0 for g in gens)  # fail fast: nothing was sent


def test_transient_mock_error_is_retried_then_reported():
    c = client(cache=False, max_retries=2)
    exc = litellm.InternalServerError("boom", llm_provider="openai", model="x")
    gen = c.generate("q", mock_response=exc)
    assert not gen.ok and "gave up after 3 attempt(s)" in gen.error and gen.attempts == 3
    assert c.usage.retries == 2


def test_perplexity_needs_a_local_model():
    with pytest.raises(NotImplementedError, match="local model"):
        client(cache=False).perplexity("some text")


def test_local_model_string_accepts_mock_without_loading_a_model():
    from ragwatch.llm import local

    before = set(local.loaded())
    c = LLMClient(LLMSettings(model="local/smollm2-135m-instruct", cache=False, concurrency=3))
    assert c.max_concurrency == 3  # the batch engine decodes that many calls together
    assert local.slots_for("smollm2-135m-instruct") >= 3
    gen = c.generate("q", schema=Verdict, mock_response='{"verdict": "yes"}')
    assert gen.ok and gen.parsed.verdict == "yes" and gen.cost_usd == 0.0
    assert set(local.loaded()) == before


def test_unknown_local_model_fails_at_construction():
    with pytest.raises(ValueError, match=r"qwen2\.5-0\.5b-instruct"):
        LLMClient(LLMSettings(model="local/qwen-typo"))


def test_sync_and_async_apis_work_inside_a_running_event_loop():
    import asyncio

    c = client(cache=False)

    async def main():
        sync = c.generate("q", mock_response="from sync")  # e.g. a notebook cell
        many = await c.agenerate_many(["a", "b"], schema=Verdict, mock_response='{"verdict": "no"}')
        return sync, many

    sync, many = asyncio.run(main())
    assert sync.text == "from sync" and [g.parsed.verdict for g in many] == ["no", "no"]


def test_rpm_quota_paces_sends():
    import time

    c = client(cache=False, rpm=600, concurrency=50)  # 10 per second, a second's worth at once
    started = time.perf_counter()
    gens = c.generate_many([f"q{i}" for i in range(14)], mock_response="ok")
    assert all(g.ok for g in gens)
    assert time.perf_counter() - started >= 0.35  # the 4 past the first 10 waited for the bucket
    with pytest.raises(ValueError, match="greater than 0"):
        LLMSettings(rpm=0)
