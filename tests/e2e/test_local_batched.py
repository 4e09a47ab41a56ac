"""The decode engine of the local runtime (ragwatch/llm/local/decode_engine.py) with the tiny packaged model.

The reference is the serial path (`local.SERIAL = True`: llama-cpp-python's own chat completion, one
call at a time), on calls shaped like the product's: the faithfulness verification (JSON schema,
verdict-first, logprobs), the RAG answer prompt (free text, logprobs) and question generation.
With SmolLM2 (Q4_1 weights) a decode step gives each sequence the same floats whether it holds one
sequence or four, so when both paths reuse the same prompt prefixes, replies and logprobs are
identical bit for bit. The Qwen models' repacked Q4_K kernels multiply 4 rows differently from 1,
so batched logprobs move a little: benchmarks/local_throughput.py measures how far on real calls.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ragwatch.llm import LLMClient, LLMSettings, local

pytestmark = pytest.mark.e2e
MODEL = "local/smollm2-135m-instruct"
NAME = MODEL.removeprefix("local/")
ROOT = Path(__file__).resolve().parents[2]

CONTEXT = (
    "ZenML pipelines are made of steps. A step is a Python function decorated with @step; its outputs "
    "are stored as versioned artifacts in the artifact store. Caching skips a step when its code and "
    "inputs did not change. The local orchestrator runs pipelines on your machine."
)


@pytest.fixture(autouse=True)
def _serial_flag_restored():
    pytest.importorskip("llama_cpp")
    yield
    local.SERIAL = False


def _judge_calls() -> list[tuple[list[dict[str, str]], dict]]:
    from ragwatch.judges.faithfulness.verify import VERIFY_BATCH_SYSTEM, verdicts_schema, verify_batch_prompt
    from ragwatch.rag import DEFAULT_PROMPT_TEMPLATE, build_prompt

    statements = [["Steps are Python functions decorated with @step.", "Caching never skips a step."],
                  ["The local orchestrator runs pipelines in the cloud."],
                  ["Artifacts are versioned.", "Steps produce artifacts.", "ZenML was founded in 1999."]]
    calls = []
    for group in statements:
        prompt = verify_batch_prompt(group, [CONTEXT], 0, 1, question="What are ZenML steps?")
        calls.append(([{"role": "system", "content": VERIFY_BATCH_SYSTEM}, {"role": "user", "content": prompt}],
                      {"schema": verdicts_schema(len(group)), "logprobs": True, "top_logprobs": 5}))
    for question in ("What does caching do?", "Where do step outputs go?", "Which orchestrator is local?"):
        text = build_prompt(DEFAULT_PROMPT_TEMPLATE, question, CONTEXT)
        calls.append(([{"role": "user", "content": text}], {"logprobs": True, "max_tokens": 48}))
    return calls


def _run(serial: bool, concurrency: int) -> list:
    local.SERIAL = serial
    client = LLMClient(LLMSettings(model=MODEL, cache=False, max_tokens=96, concurrency=concurrency))
    out = []
    # one generate_many per call shape, all items of a shape in flight together (as the judge engine does)
    calls = _judge_calls()
    for lo, hi in ((0, 3), (3, 6)):
        shape = calls[lo][1]
        overrides = {k: v for k, v in shape.items() if k != "schema"}
        out += client.generate_many([c[0] for c in calls[lo:hi]], schema=shape.get("schema"), **overrides)
    return out


def test_batched_replies_and_logprobs_equal_the_serial_path():
    serial = _run(True, 1)
    batched = _run(False, 4)
    stats = local.engine_stats(NAME)
    assert stats is not None and stats.decode_step_seqs > stats.decode_steps  # several sequences per step
    for a, b in zip(serial, batched, strict=True):
        assert a.ok and b.ok, (a.error, b.error)
        assert b.text == a.text
        assert (b.prompt_tokens, b.completion_tokens) == (a.prompt_tokens, a.completion_tokens)
        assert [t.token for t in b.logprobs] == [t.token for t in a.logprobs]
        assert max(abs(x.logprob - y.logprob) for x, y in zip(a.logprobs, b.logprobs, strict=True)) < 1e-6
        assert [sorted(t.top) for t in b.logprobs] == [sorted(t.top) for t in a.logprobs]


def test_length_limit_and_sampling_match_the_serial_path():
    prompts = ["Count from one to fifty in words.", "List ten fruits, one per line."]
    outs = {}
    for serial in (True, False):
        local.close_all()  # both paths from an empty cache: the same prefixes are reused (see below)
        local.SERIAL = serial
        client = LLMClient(LLMSettings(model=MODEL, cache=False, concurrency=4))
        greedy = client.generate_many(prompts, max_tokens=12)
        local.close_all()
        sampled = client.generate_many(prompts, max_tokens=12, temperature=0.8, seed=3)
        outs[serial] = [(g.text, g.completion_tokens) for g in greedy + sampled]
    assert outs[False] == outs[True]
    assert all(n == 12 for _, n in outs[True])  # cut at max_tokens: finish "length"


def test_reused_prefix_changes_the_floats_on_the_serial_path_too():
    """Why equality needs equal histories: llama.cpp's kernels depend on how many tokens one decode
    holds, so a prompt read from a reused prefix (of the previous call on the serial path, of the
    slot's own or another slot's on the decode engine) gives slightly different logits than the same
    prompt read whole. The serial path alone shows it: the exact prompt cached (its last token read
    again) vs read from the shared system prefix."""
    local.close_all()
    local.SERIAL = True
    client = LLMClient(LLMSettings(model=MODEL, cache=False, concurrency=1))
    prompt = "List ten fruits, one per line."
    client.generate(prompt, max_tokens=12)
    cached = client.generate(prompt, max_tokens=12, logprobs=True)
    client.generate("Count from one to fifty in words.", max_tokens=12)
    reread = client.generate(prompt, max_tokens=12, logprobs=True)
    first = abs(cached.logprobs[0].logprob - reread.logprobs[0].logprob)
    assert 0.0 < first < 0.5  # a real difference (0.1 nats measured), not a bug: both are valid reads


def test_too_long_prompt_fails_clearly_and_the_engine_keeps_serving():
    client = LLMClient(LLMSettings(model=MODEL, cache=False, concurrency=4, max_retries=0))
    gens = client.generate_many(["word " * 3000, "Say hello."], max_tokens=8)
    assert not gens[0].ok and "context window" in gens[0].error
    assert gens[1].ok and gens[1].text


def test_engine_grows_when_a_client_asks_for_more_slots():
    LLMClient(LLMSettings(model=MODEL, cache=False, concurrency=2)).generate("Say hi.", max_tokens=4)
    before = local.engine(NAME)
    assert before is not None
    assert before.active() == 0  # a returned call has left its slot: the engine is idle, so it may grow
    LLMClient(LLMSettings(model=MODEL, cache=False, concurrency=before.slots_n + 1))
    after = local.engine(NAME)
    assert after is not None and after.slots_n == min(before.slots_n + 1, local.MAX_SLOTS)
    gen = LLMClient(LLMSettings(model=MODEL, cache=False)).generate("Say hi.", max_tokens=4)
    assert gen.ok


def test_interpreter_exits_cleanly_with_requests_served():
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from ragwatch.llm import LLMClient, LLMSettings
        client = LLMClient(LLMSettings(model={MODEL!r}, cache=False, concurrency=4))
        gens = client.generate_many(["Say hi.", "Say bye.", "Name a colour."], max_tokens=6)
        assert all(g.ok for g in gens), [g.error for g in gens]
        print("served", len(gens))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "served 3" in done.stdout
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
