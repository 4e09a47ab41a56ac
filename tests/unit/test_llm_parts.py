"""Pure helpers of the LLM layer: structured output, retry policy, the limiter gate, logprob verdicts."""

from __future__ import annotations

import asyncio
import email.utils
import math
import time
from typing import Literal

import httpx
import litellm
import pytest
from pydantic import BaseModel, Field

from ragwatch.llm import Generation, TokenLogprob
from ragwatch.llm.limiter import Limiter
from ragwatch.llm.logprobs import expected_score, mean_logprob, yes_probability
from ragwatch.llm.retry import backoff_s, classify, retry_after_s, scrub
from ragwatch.llm.structured import parse_reply, response_format, strict_schema, strip_fences


class Inner(BaseModel):
    note: str = Field(default="", max_length=50)


class Judged(BaseModel):
    verdict: Literal["yes", "no"]
    inner: Inner
    reasons: list[str] = Field(default_factory=list, max_length=3)


# ------------------------------------------------------------------------------------ structured
@pytest.mark.parametrize("text", ['{"a": 1}', '```json\n{"a": 1}\n```', '```\n{"a": 1}```', '  ```JSON {"a": 1} ```'])
def test_strip_fences(text):
    assert strip_fences(text) == '{"a": 1}'


def test_parse_reply_reports_field_errors():
    ok, problem = parse_reply('{"verdict": "no", "inner": {}}', Judged)
    assert problem is None and ok.verdict == "no"
    bad, problem = parse_reply('{"verdict": "perhaps", "inner": {}}', Judged)
    assert bad is None and "verdict" in problem
    assert parse_reply("", Judged)[1] == "the reply is empty"
    assert "schema" in parse_reply('{"verdict": "yes", "inner": {', Judged)[1]


def test_response_format_per_mode():
    grammar = response_format(Judged, "grammar")
    assert grammar["type"] == "json_object" and grammar["schema"]["properties"]["verdict"]["enum"] == [
        "yes",
        "no",
    ]
    assert response_format(Judged, "json_object") == {"type": "json_object"}
    strict = response_format(Judged, "json_schema")["json_schema"]
    assert strict["strict"] is True and strict["name"] == "Judged"
    schema = strict["schema"]
    assert schema["additionalProperties"] is False and set(schema["required"]) == {
        "verdict",
        "inner",
        "reasons",
    }
    assert schema["$defs"]["Inner"]["additionalProperties"] is False
    assert "default" not in str(strict_schema(Judged.model_json_schema()))


# ------------------------------------------------------------------------------------- retries
def _status_error(cls, **kw):
    return cls("x", llm_provider="openai", model="m", **kw)


def test_classify():
    assert classify(_status_error(litellm.RateLimitError)) == "rate_limit"
    assert classify(_status_error(litellm.InternalServerError)) == "transient"
    assert classify(_status_error(litellm.ServiceUnavailableError)) == "transient"
    assert classify(litellm.Timeout("t", model="m", llm_provider="openai")) == "transient"
    assert classify(_status_error(litellm.APIConnectionError)) == "transient"
    assert classify(TimeoutError()) == "transient"
    assert classify(_status_error(litellm.AuthenticationError)) == "fatal"
    assert classify(_status_error(litellm.BadRequestError)) == "fatal"
    assert classify(_status_error(litellm.NotFoundError)) == "fatal"
    assert classify(RuntimeError("a bug")) == "fatal"


def test_retry_after_seconds_and_http_date():
    def with_header(value):
        response = httpx.Response(429, headers={"Retry-After": value}, request=httpx.Request("POST", "http://x"))
        return litellm.RateLimitError("slow down", llm_provider="openai", model="m", response=response)

    assert retry_after_s(with_header("3")) == 3.0
    assert retry_after_s(with_header("0.5")) == 0.5
    date = email.utils.formatdate(time.time() + 10, usegmt=True)
    assert 7.0 <= retry_after_s(with_header(date)) <= 10.5
    assert retry_after_s(_status_error(litellm.InternalServerError)) is None


def test_backoff_grows_is_capped_and_jittered():
    samples = [[backoff_s(i, 0.1, 1.0) for _ in range(200)] for i in range(6)]
    assert all(0.05 <= s <= 0.1 for s in samples[0])
    assert all(s <= 1.0 for row in samples for s in row)
    assert max(samples[3]) > 0.5 and len(set(samples[3])) > 100  # grown and jittered


def test_scrub_removes_keys():
    text = "Incorrect API key provided: sk-abc123XYZ. api_key=sk-abc123XYZ Bearer tok_987"
    out = scrub(text, "sk-abc123XYZ")
    assert "sk-abc123XYZ" not in out and "tok_987" not in out and "[redacted]" in out


def test_limiter_bounds_in_flight():
    limiter = Limiter(4)
    peak = 0

    async def work():
        nonlocal peak
        ticket = await limiter.acquire()
        peak = max(peak, limiter.flow.in_flight)
        await asyncio.sleep(0.01)
        limiter.release(ticket, "ok")

    async def main():
        await asyncio.gather(*(work() for _ in range(20)))

    asyncio.run(main())
    assert peak == 4 and limiter.flow.in_flight == 0  # the rate-limit logic: test_llm_limiter.py


# ------------------------------------------------------------------------------------ logprobs
def _gen(*positions):
    return Generation(
        model="m", text="", logprobs=[TokenLogprob(token=t, logprob=lp, top=top) for t, lp, top in positions]
    )


def test_yes_probability_reads_the_first_verdict_token():
    gen = _gen(
        ('{"', -0.01, {}),
        ("verdict", -0.01, {}),
        ('":"', -0.1, {}),
        ("Yes", math.log(0.6), {"Yes": math.log(0.6), " no": math.log(0.3), "maybe": math.log(0.1)}),
    )
    assert yes_probability(gen) == pytest.approx(0.6 / 0.9)
    assert yes_probability(_gen(("NO", 0.0, {}))) == 0.0
    assert yes_probability(_gen(("hello", 0.0, {}))) is None
    assert yes_probability(Generation(model="m")) is None


def test_expected_score_weights_choices():
    gen = _gen(
        ("Score", -0.1, {}),
        (":", -0.1, {}),
        ("4", math.log(0.6), {"4": math.log(0.6), "5": math.log(0.3), "x": math.log(0.1)}),
    )
    assert expected_score(gen) == pytest.approx((4 * 0.6 + 5 * 0.3) / 0.9)
    assert expected_score(gen, choices=("1", "2")) is None


def test_mean_logprob():
    assert mean_logprob(_gen(("a", -1.0, {}), ("b", -3.0, {}))) == -2.0
    assert mean_logprob(Generation(model="m")) is None
