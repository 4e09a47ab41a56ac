"""`batch: true`: a stage's calls as one provider batch through litellm's file and batch functions,
against the fake server's /v1/files and /v1/batches: same scores as online at half the recorded
cost, failed lines retried online, and a killed run resumes its batch instead of paying twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ragwatch.judges import JudgesConfig, build_judges, run_judges
from ragwatch.llm import LLMClient, LLMSettings
from ragwatch.llm.history import read_history
from ragwatch.types import EvalSample, RagAnswer, RetrievedContext
from tests.fake_llm_server import FakeLLMServer, schema_reply

ROOT = Path(__file__).resolve().parents[2]
N = 8


def tokens(text: str) -> int:
    """gpt-4o-mini's tokens (litellm's bundled tokenizer: no download)."""
    import litellm

    return litellm.token_counter(model="gpt-4o-mini", text=text)


def items(n: int = N) -> tuple[list[EvalSample], list[RagAnswer]]:
    """`n` questions about pipeline steps and their answers (the budget tests judge them too)."""
    samples = [EvalSample(id=f"s{i}", question=f"What does step {i} of the pipeline do?",
                          reference_answer=f"Step {i} loads the data and trains the model.") for i in range(n)]
    answers = [RagAnswer(question=s.question, answer=f"Step {i} trains the model on the loaded data.",
                         contexts=[RetrievedContext(text=f"Step {i} loads data, then trains a model.")])
               for i, s in enumerate(samples)]
    return samples, answers


def settings(server: FakeLLMServer, cache: Path, **kw) -> LLMSettings:
    return LLMSettings(model="openai/gpt-4o-mini", api_base=server.base_url, cache_dir=str(cache),
                       max_tokens=300, batch_poll_s=0.05, **kw)


def judge(llm_settings: LLMSettings) -> tuple[dict, LLMClient]:
    llm = LLMClient(llm_settings)
    config = JudgesConfig(enabled=["correctness"], llm=llm_settings)
    return run_judges(build_judges(config, llm), *items())["correctness"], llm


@pytest.fixture
def server():
    with FakeLLMServer(responder=schema_reply, token_counter=tokens, batch_delay_s=0.3, lifetime_s=120) as srv:
        yield srv


def test_batch_gives_the_online_scores_at_half_the_cost(server, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGWATCH_CACHE_DIR", str(tmp_path / "history"))
    online, online_llm = judge(settings(server, tmp_path / "online"))
    assert server.calls == N and not server.batches
    server.reset_counts()
    batched, batch_llm = judge(settings(server, tmp_path / "batch", batch=True))
    assert server.calls == 0 and len(server.batches) == 1 and server.batch_lines == N  # one file, no chat call
    assert [(it.item_id, it.score) for it in batched.items] == [(it.item_id, it.score) for it in online.items]
    assert all(it.ok for it in batched.items)
    a, b = online_llm.usage, batch_llm.usage
    assert (b.prompt_tokens, b.completion_tokens) == (a.prompt_tokens, a.completion_tokens)
    assert b.cost_usd == pytest.approx(a.cost_usd / 2, rel=1e-6)
    assert not list((tmp_path / "batch" / "batches").glob("*.json"))  # the job record is dropped once read
    record = [r for r in read_history() if r.batch][-1]
    assert record.stage == "judge correctness stage 1" and record.calls == N


def test_failed_lines_are_retried_online(server, tmp_path):
    server.batch_failures = ["step 3 ", "step 5 "]
    result, _ = judge(settings(server, tmp_path / "cache", batch=True))
    assert all(it.ok for it in result.items)
    assert server.calls == 2 and server.batch_lines == N - 2  # the two failed lines went online


def test_a_batch_still_running_is_picked_up_by_the_next_run(server, tmp_path):
    server.batch_delay_s = 2.0
    first, _ = judge(settings(server, tmp_path / "cache", batch=True, batch_timeout_s=0.2))
    assert all(not it.ok and "a re-run picks it up" in it.error for it in first.items)
    assert server.calls == 0 and len(server.batches) == 1
    second, _ = judge(settings(server, tmp_path / "cache", batch=True))
    assert all(it.ok for it in second.items)
    assert len(server.batches) == 1 and server.calls == 0  # resumed: nothing paid twice


def test_a_killed_batch_run_resumes_without_resubmitting(server, tmp_path):
    """A process killed while it waits for its batch: the next run collects that batch."""
    server.batch_delay_s = 4.0
    llm_settings = settings(server, tmp_path / "cache", batch=True)
    child = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(ROOT)!r})
        from ragwatch.llm import LLMSettings
        from tests.unit.test_llm_batch import judge
        judge(LLMSettings.model_validate(json.loads({llm_settings.model_dump_json()!r})))
    """)
    process = subprocess.Popen([sys.executable, "-c", child], env={**os.environ},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        records = tmp_path / "cache" / "batches"
        while not list(records.glob("*.json")) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)  # killed once the batch is submitted and its id stored, while it waits
        assert server.batches, "the child never submitted its batch"
    finally:
        process.kill()
        process.wait()
    records = list((tmp_path / "cache" / "batches").glob("*.json"))
    assert len(records) == 1 and json.loads(records[0].read_text())["batch_id"] in server.batches
    result, llm = judge(llm_settings)
    assert all(it.ok for it in result.items)
    assert len(server.batches) == 1 and server.calls == 0
    assert llm.usage.cost_usd > 0  # recorded at the batch price when collected


def test_batch_is_refused_for_a_local_model():
    with pytest.raises(ValueError, match="batch: true needs a provider with a batch API"):
        LLMSettings(model="local/smollm2-135m-instruct", batch=True)


def test_a_judge_stage_with_several_schemas_is_one_batch(server, tmp_path):
    """Faithfulness verifies 1, 2 or 3 statements per item (three reply schemas): one batch file."""
    samples, answers = items()
    text = [" ".join(f"Step {i} does part {j} of the work." for j in range(1 + i % 3)) for i in range(N)]
    answers = [a.model_copy(update={"answer": text[i]}) for i, a in enumerate(answers)]
    results = {}
    for name, batch in (("online", False), ("batch", True)):
        llm_settings = settings(server, tmp_path / name, batch=batch)
        config = JudgesConfig(enabled=["faithfulness"], llm=llm_settings,
                              faithfulness={"statements": "sentences"})
        results[name] = run_judges(build_judges(config, LLMClient(llm_settings)), samples, answers)["faithfulness"]
    assert len(server.batches) == 1 and server.batch_lines == N
    assert [it.score for it in results["batch"].items] == [it.score for it in results["online"].items]
    assert all(it.ok for it in results["batch"].items)


def test_the_fake_batch_api_through_litellm(server):
    """create_file, create_batch, retrieve_batch, cancel_batch and file_content against the fake server."""
    import litellm

    server.batch_delay_s = 30.0
    auth = {"custom_llm_provider": "openai", "api_base": server.base_url, "api_key": "x"}
    line = {"custom_id": "k0", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hello"}]}}
    uploaded = litellm.create_file(file=("b.jsonl", (json.dumps(line) + "\n").encode()), purpose="batch", **auth)
    batch = litellm.create_batch(completion_window="24h", endpoint="/v1/chat/completions",
                                 input_file_id=uploaded.id, **auth)
    assert litellm.retrieve_batch(batch_id=batch.id, **auth).status == "in_progress"
    assert litellm.cancel_batch(batch_id=batch.id, **auth).status == "cancelled"
    server.batch_delay_s = 0.0
    quick = litellm.create_batch(completion_window="24h", endpoint="/v1/chat/completions",
                                 input_file_id=uploaded.id, **auth)
    done = litellm.retrieve_batch(batch_id=quick.id, **auth)
    assert done.status == "completed" and done.request_counts.completed == 1
    reply = json.loads(litellm.file_content(file_id=done.output_file_id, **auth).content)
    assert reply["custom_id"] == "k0" and reply["response"]["status_code"] == 200


def test_a_cancelled_batch_is_submitted_anew(server, tmp_path):
    import litellm

    server.batch_delay_s = 30.0
    first, _ = judge(settings(server, tmp_path / "cache", batch=True, batch_timeout_s=0.2))
    assert not any(it.ok for it in first.items)
    (batch_id,) = server.batches
    litellm.cancel_batch(batch_id=batch_id, custom_llm_provider="openai", api_base=server.base_url, api_key="x")
    server.batch_delay_s = 0.0
    second, _ = judge(settings(server, tmp_path / "cache", batch=True))
    assert all(it.ok for it in second.items) and len(server.batches) == 2


def test_a_budget_limits_what_goes_into_the_batch(server, tmp_path):
    from ragwatch.llm.pricing import call_cost, count_tokens

    prompt = count_tokens("gpt-4o-mini", [{"role": "user", "content": "The judge reads this. " * 40}])
    budget = 3.5 * call_cost("gpt-4o-mini", prompt, 300, batch=True)  # about three projections at batch prices
    result, llm = judge(settings(server, tmp_path / "cache", batch=True, budget_usd=budget))
    failed = [it for it in result.items if not it.ok]
    assert failed and len(failed) < N
    assert all("budget of $" in it.error for it in failed)
    assert server.batch_lines == N - len(failed) and llm.usage.cost_usd <= budget


def test_a_job_the_batch_api_refuses_goes_online(server, tmp_path, monkeypatch):
    """The sender never raises for its job: every line gets the reason, and the client sends it online."""
    from ragwatch.llm.provider_batch import ProviderBatch

    async def refused(self, lines, progress):
        raise RuntimeError("upload refused")

    monkeypatch.setattr(ProviderBatch, "_run", refused)
    result, llm = judge(settings(server, tmp_path / "cache", batch=True))
    assert all(it.ok for it in result.items)
    assert server.calls == N and not server.batches  # all online, none as a batch
    assert llm.usage.calls == N


def test_the_sender_gives_each_request_a_generation_or_a_reason(server, tmp_path):
    """`ProviderBatch.send`: a priced generation per answered line, the reason for a failed one."""
    from ragwatch.llm.provider_batch import ProviderBatch
    from ragwatch.llm.request import build_request
    from ragwatch.llm.sync import run_sync

    server.batch_failures = ["second"]
    llm_settings = settings(server, tmp_path / "cache", batch=True)
    requests = [build_request(llm_settings, f"The {word} question.", None, None, {}) for word in ("first", "second")]
    sender = ProviderBatch(llm_settings, tmp_path / "cache", "a stage")
    outcome = run_sync(sender.send(requests))
    first, second = (outcome.replies[r.key] for r in requests)
    assert not outcome.pending and len(server.batches) == 1
    assert first.ok and first.cost_usd > 0 and "batch line failed (500)" in second
    assert list((tmp_path / "cache" / "batches").glob("*.json"))  # kept until the client has cached the replies
    sender.forget()
    assert not list((tmp_path / "cache" / "batches").glob("*.json"))
