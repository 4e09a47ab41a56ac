"""The in-process llama.cpp provider with the tiny packaged model (SmolLM2-135M-Instruct)."""

from __future__ import annotations

import json
import math
import random
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from ragwatch.llm import LLMClient, LLMSettings
from ragwatch.llm.logprobs import mean_logprob, yes_probability

pytestmark = pytest.mark.e2e
MODEL = "local/smollm2-135m-instruct"


class Verdict(BaseModel):
    verdict: Literal["yes", "no"]
    reason: str = Field(max_length=80)


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    pytest.importorskip("llama_cpp")
    cache = tmp_path_factory.mktemp("llm-cache")
    return LLMClient(LLMSettings(model=MODEL, cache_dir=str(cache), max_tokens=64))


def test_structured_output_validates(client):
    prompts = [f"Is {n} an even number? Answer in JSON." for n in (2, 7, 10)]
    gens = client.generate_many(prompts, schema=Verdict, temperature=0.8, seed=1)
    for gen in gens:
        assert gen.ok, gen.error
        assert isinstance(gen.parsed, Verdict) and gen.cost_usd == 0.0
        assert gen.prompt_tokens > 0 and gen.completion_tokens > 0


def test_logprobs_present_and_verdict_probability(client):
    gen = client.generate("Is Paris in France? Answer yes or no.", schema=Verdict, logprobs=True, top_logprobs=5)
    assert gen.ok and gen.logprobs
    assert all(math.isfinite(t.logprob) and t.logprob <= 0 for t in gen.logprobs)
    assert len(gen.logprobs[0].top) >= 1
    p_yes = yes_probability(gen)
    assert p_yes is not None and 0.0 <= p_yes <= 1.0
    assert mean_logprob(gen) < 0


def test_cache_serves_a_repeat_without_running_the_model(client):
    first = client.generate("Name a colour.", max_tokens=8)
    mark = client.usage.model_copy()
    second = client.generate("Name a colour.", max_tokens=8)
    assert first.ok and second.cached and second.text == first.text
    assert client.usage.since(mark).calls == 0


def test_perplexity_is_finite_and_lower_for_natural_text(client):
    text = (
        "The cat sat on the mat and looked out of the window. It was a sunny morning, and the birds "
        "were singing in the garden behind the house."
    )
    words = text.split()
    random.Random(0).shuffle(words)
    natural, shuffled = client.perplexity(text), client.perplexity(" ".join(words))
    assert math.isfinite(natural) and math.isfinite(shuffled) and natural > 1.0
    assert natural < shuffled


def test_greedy_grammar_shortcut_decodes_exactly_like_the_full_grammar_check():
    """The top-token grammar test must give the stock sampler's replies and logprobs, token for token."""
    pytest.importorskip("llama_cpp")
    from llama_cpp import Llama, LogitsProcessorList

    from ragwatch.llm.local import LogprobRecorder, model_path
    from ragwatch.llm.local.grammar import greedy_grammar_class

    schema = {"type": "object", "required": ["verdicts"], "properties": {"verdicts": {
        "type": "array", "minItems": 2, "maxItems": 2, "items": {
            "type": "object", "required": ["verdict", "reason"],
            "properties": {"verdict": {"enum": ["yes", "no"]}, "reason": {"type": "string", "maxLength": 60}}}}}}
    prompts = ["Is 4 even? Is 9 even? Give two verdicts as JSON.",
               "Statement 1: water is wet. Statement 2: fire is cold. Verdicts as JSON with reasons.",
               "Reply with JSON: two verdicts about whether cats bark."]
    replies = {}
    for name, cls in (("stock", Llama), ("shortcut", greedy_grammar_class(Llama))):
        llm = cls(model_path=str(model_path(MODEL.removeprefix("local/"))), n_ctx=1024, n_threads=2, verbose=False)
        try:
            out = []
            for prompt in prompts:
                recorder = LogprobRecorder(llm, 3)
                result = llm.create_chat_completion(
                    messages=[{"role": "user", "content": prompt}], temperature=0, max_tokens=96,
                    response_format={"type": "json_object", "schema": schema},
                    logits_processor=LogitsProcessorList([recorder]))
                out.append((result["choices"][0]["message"]["content"], [t["logprob"] for t in recorder.tokens]))
            replies[name] = out
        finally:
            llm.close()
    assert replies["shortcut"] == replies["stock"]
    assert all(text.startswith("{") and logprobs for text, logprobs in replies["stock"])


def _grammar_allows(llm, grammar, prefix: str, candidates: list[int]) -> list[bool]:
    """Which candidate tokens the grammar allows after `prefix` (llama.cpp's own grammar sampler)."""
    import ctypes

    import llama_cpp

    vocab = llama_cpp.llama_model_get_vocab(llm._model.model)
    sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar._grammar.encode(), grammar._root.encode())
    try:
        for token in llm.tokenize(prefix.encode(), add_bos=False, special=False):
            llama_cpp.llama_sampler_accept(sampler, token)
        data = (llama_cpp.llama_token_data * len(candidates))(
            *[llama_cpp.llama_token_data(t, 0.0, 0.0) for t in candidates])
        array = llama_cpp.llama_token_data_array(data, len(candidates), -1, False)
        llama_cpp.llama_sampler_apply(sampler, ctypes.byref(array))
        return [data[i].logit != -math.inf for i in range(len(candidates))]
    finally:
        llama_cpp.llama_sampler_free(sampler)


def test_json_grammar_rejects_raw_control_characters_in_strings():
    # A judge once wrote a raw newline inside its reason: invalid JSON, so the item failed after its
    # repairs. The provider's grammar now follows JSON: escapes yes, raw control characters no.
    pytest.importorskip("llama_cpp")
    from llama_cpp import LlamaGrammar

    from ragwatch.llm import local

    llm, _ = local.load(MODEL.removeprefix("local/"))  # installs the JSON string rule
    grammar = LlamaGrammar.from_json_schema(
        json.dumps(Verdict.model_json_schema()), verbose=False)
    newline, tab, letter = (llm.tokenize(t.encode(), add_bos=False, special=False)[0] for t in ("\n", "\t", "a"))
    prefix = '{"verdict": "yes", "reason": "The context'
    assert _grammar_allows(llm, grammar, prefix, [newline, tab, letter]) == [False, False, True]
    # an escaped newline stays allowed
    escaped_n = llm.tokenize(b"n", add_bos=False, special=False)[0]
    assert _grammar_allows(llm, grammar, prefix + " \\", [escaped_n]) == [True]
