"""LLMClient against a fake OpenAI-compatible server that injects faults (429, 5xx, hangs, bad JSON)."""

from __future__ import annotations

import json
import math
import socket
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root, for tests.fake_llm_server

from ragwatch.decision.outcome import could_not_evaluate
from ragwatch.decision.thresholds import GateThresholds
from ragwatch.llm import LLMClient, LLMSettings
from ragwatch.llm.errors import is_unreachable
from ragwatch.llm.logprobs import yes_probability
from ragwatch.results import ItemScore, MetricInfo, MetricResult
from ragwatch.types import RagAnswer
from tests.fake_llm_server import FakeLLMServer, first_user_text


class Answer(BaseModel):
    answer: str


PROMPTS = [f"question {i:02d}" for i in range(16)]
FAULTS = {
    "question 01": ["429"],
    "question 02": ["500"],
    "question 03": ["malformed"],
    "question 04": ["truncated"],
    "question 05": ["hang"],
    "question 06": ["invalid"],
    "question 07": ["prose"],
    "question 10": ["503", "429"],
    "question 08": ["500"] * 5,  # more than max_retries: must fail explicitly
    "question 09": ["invalid"] * 5,  # more than max_repairs: must fail explicitly
}


pytestmark = pytest.mark.usefixtures("isolated_cache")  # a fresh LLM cache per test


@pytest.fixture
def server():
    with FakeLLMServer(latency_s=0.01, retry_after="0", hang_s=5.0, lifetime_s=120) as srv:
        yield srv


def settings(srv: FakeLLMServer, **kw) -> LLMSettings:
    base = {
        "model": "openai/fake-model",
        "api_base": srv.base_url,
        "retry_base_s": 0.001,
        "retry_max_s": 0.01,
        "timeout_s": 0.5,
        "max_retries": 2,
        "max_repairs": 2,
        "concurrency": 4,
    }
    return LLMSettings(**(base | kw))


def test_faults_end_scored_or_failed_and_match_a_clean_run(server, tmp_path):
    clean = LLMClient(settings(server, cache=False)).generate_many(PROMPTS, schema=Answer)
    assert all(g.ok for g in clean) and server.calls == len(PROMPTS)

    server.reset_counts()
    for key, behaviours in FAULTS.items():
        server.add_script(key, behaviours)
    client = LLMClient(settings(server, cache=False))
    faulty = client.generate_many(PROMPTS, schema=Answer, desc="faults")

    assert len(faulty) == len(PROMPTS)
    failed = {p for p, g in zip(PROMPTS, faulty, strict=True) if not g.ok}
    assert failed == {"question 08", "question 09"}
    for prompt, good, got in zip(PROMPTS, clean, faulty, strict=True):
        if got.ok:
            assert got.parsed == good.parsed and got.parsed.answer == prompt
        else:
            assert got.error and got.parsed is None
    assert "gave up after 3 attempt(s)" in faulty[8].error
    assert "after 2 repair(s)" in faulty[9].error and json.loads(faulty[9].raw) == {"unexpected": True}
    assert faulty[1].attempts == 2 and faulty[5].attempts == 2 and faulty[10].attempts == 3
    assert faulty[4].repairs == 1 and faulty[6].repairs == 1 and faulty[7].repairs == 1
    assert server.behaviours["hang"] == 1 and server.behaviours["malformed"] == 1

    items = [
        ItemScore(item_id=p, score=1.0) if g.ok else ItemScore(item_id=p, error=g.error)
        for p, g in zip(PROMPTS, faulty, strict=True)
    ]
    result = MetricResult.from_items("answered", items)
    assert (result.n_scored, result.n_failed) == (14, 2)
    usage = client.usage.model_dump()
    assert usage["failures"] == 2 and usage["repairs"] >= 3 + 2 and usage["retries"] >= 6
    assert all(math.isfinite(v) for v in usage.values() if isinstance(v, float))


def test_second_run_is_served_from_the_cache_with_zero_provider_calls(server):
    first = LLMClient(settings(server)).generate_many(PROMPTS, schema=Answer)
    assert server.calls == len(PROMPTS)
    server.reset_counts()
    client = LLMClient(settings(server))
    second = client.generate_many(PROMPTS, schema=Answer)
    assert server.calls == 0
    assert [g.parsed for g in second] == [g.parsed for g in first] and all(g.cached for g in second)
    assert client.usage.calls == 0 and client.usage.cache_hits == len(PROMPTS)


def test_failures_are_not_cached(server):
    server.add_script("question 00", ["invalid"] * 3)
    assert not LLMClient(settings(server)).generate("question 00", schema=Answer).ok
    server.reset_counts()
    assert LLMClient(settings(server)).generate("question 00", schema=Answer).ok
    assert server.calls == 1


def test_auth_error_fails_fast_with_no_retry(server, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", "sk-fake-secret-123456")
    server.default = "401"
    client = LLMClient(settings(server, api_key_env="FAKE_KEY", concurrency=1, max_retries=4))
    gens = client.generate_many(PROMPTS[:5], schema=Answer)
    assert server.calls == 1  # no retry, and the rest of the batch is not sent
    assert all(not g.ok for g in gens)
    sent = [g for g in gens if g.attempts == 1]
    assert len(sent) == 1 and "FAKE_KEY" in sent[0].error and "api_key_env" in sent[0].error
    assert sum("not attempted" in g.error for g in gens) == 4
    assert all("sk-fake-secret-123456" not in g.model_dump_json() for g in gens)
    assert server.auth_headers == ["Bearer sk-fake-secret-123456"]


def test_retry_after_is_honoured(server):
    server.retry_after = "1"
    server.add_script("question 00", ["429"])
    gen = LLMClient(settings(server, cache=False)).generate("question 00", schema=Answer)
    assert gen.ok and gen.attempts == 2
    first, second = server.request_times["question 00"]
    assert second - first >= 0.95  # the backoff alone would have waited <= 0.01 s


def test_provider_level_retries_are_off(server):
    server.default = "500"
    gen = LLMClient(settings(server, cache=False, max_retries=0)).generate("question 00")
    assert not gen.ok and server.calls == 1


def test_concurrency_is_bounded_and_lowered_on_rate_limits(server):
    server.latency_s = 0.05
    client = LLMClient(settings(server, cache=False, concurrency=4))
    client.generate_many(PROMPTS, schema=Answer)
    assert server.peak_in_flight == 4
    server.reset_counts()
    for prompt in PROMPTS[:6]:
        server.add_script(prompt, ["429"])
    gens = client.generate_many(PROMPTS, schema=Answer)
    assert all(g.ok for g in gens)
    assert client.last_limiter.stats.lowest < 4  # backed off on the round of 429s, then regrew


def test_api_logprobs_reach_the_generation(server):
    def responder(body):
        top = [{"token": "yes", "logprob": math.log(0.7)}, {"token": "no", "logprob": math.log(0.3)}]
        return {
            "content": "yes",
            "logprobs": {"content": [{"token": "yes", "logprob": math.log(0.7), "top_logprobs": top}]},
        }

    server.responder = responder
    gen = LLMClient(settings(server, cache=False)).generate("Is it?", logprobs=True, top_logprobs=2)
    assert gen.ok and gen.logprobs[0].token == "yes"
    assert yes_probability(gen) == pytest.approx(0.7)
    assert server.bodies[0]["logprobs"] is True and server.bodies[0]["top_logprobs"] == 2


def test_messages_and_system_prompt_reach_the_server(server):
    client = LLMClient(settings(server, cache=False))
    gen = client.generate([{"role": "user", "content": "question 00"}], system="You are terse.", schema=Answer)
    assert gen.ok
    messages = server.bodies[0]["messages"]
    assert messages[0]["role"] == "system" and messages[0]["content"].startswith("You are terse.")
    assert '"answer"' in messages[0]["content"]  # JSON mode: the schema is spelled out for the model
    assert first_user_text(server.bodies[0]) == "question 00"


SECRET = "sk-fake-secret-abcdef123456"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed on return: nothing listens there


def test_errors_name_the_kind_and_the_address_never_the_key(server, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", SECRET)
    base = server.base_url
    for key, behaviour in [("q-500", "500"), ("q-503", "503"), ("q-hang", "hang"), ("q-bad", "malformed"),
                           ("q-400", "400")]:
        server.add_script(key, [behaviour] * 3)
    client = LLMClient(settings(server, api_key_env="FAKE_KEY", cache=False, max_retries=2, timeout_s=0.5))
    expected = {
        "q-500": f"gave up after 3 attempt(s): HTTP 500 Internal Server Error: {base} (the server had an error)",
        "q-503": f"gave up after 3 attempt(s): HTTP 503 Service Unavailable: {base} (the server had an error)",
        "q-hang": f"gave up after 3 attempt(s): timed out after 0.5 s: {base}",
        "q-bad": f"gave up after 3 attempt(s): the reply is not JSON: {base} (Unterminated string",
        "q-400": f"failed without retry: HTTP 400 Bad Request: {base} (bad request)",
    }
    gens = {prompt: client.generate(prompt) for prompt in expected}
    for prompt, error in expected.items():
        assert not gens[prompt].ok and gens[prompt].error.startswith(error), (prompt, gens[prompt].error)
        assert SECRET not in gens[prompt].error
    assert is_unreachable(gens["q-hang"].error) and not is_unreachable(gens["q-500"].error)


def test_a_port_nothing_listens_on_is_connection_refused_at_its_address(monkeypatch):
    monkeypatch.setenv("FAKE_KEY", SECRET)
    base = f"http://127.0.0.1:{_free_port()}/v1"
    client = LLMClient(LLMSettings(model="openai/judge", api_base=base, api_key_env="FAKE_KEY", cache=False,
                                   max_retries=4, retry_base_s=0.001, retry_max_s=0.01))
    gen = client.generate("question 00")
    assert gen.error == f"gave up after 5 attempt(s): connection refused: {base}"
    assert is_unreachable(gen.error)
    # what the run says on exit 3: the judge's reason whole, behind the item's own words
    item_error = f"statement 1 ({'a long statement of the answer ' * 3!r}) could not be verified: judge call failed: "
    items = [ItemScore(item_id=f"q{i}", error=item_error + gen.error) for i in range(4)]
    judged = {"faithfulness": MetricResult.from_items("faithfulness", items, info=MetricInfo(family="judge"))}
    answers = [RagAnswer(question=f"q{i}", answer="yes") for i in range(4)]
    cause, _ = could_not_evaluate(answers, [f"q{i}" for i in range(4)], None, judged, GateThresholds())
    assert cause == ("the judges failed on 4 of 4 answered items (faithfulness: 4 of 4, most often: "
                     f"gave up after 5 attempt(s): connection refused: {base})")
    assert SECRET not in cause


def test_an_address_is_shown_without_its_query_or_user_info(monkeypatch):
    port = _free_port()
    base = f"http://user:pw@127.0.0.1:{port}/v1?api-key={SECRET}"
    gen = LLMClient(LLMSettings(model="openai/judge", api_base=base, cache=False, max_retries=0)).generate("q")
    assert SECRET not in gen.error and "pw@" not in gen.error
    assert gen.error.startswith(f"gave up after 1 attempt(s): connection failed: http://127.0.0.1:{port}/v1 (")
