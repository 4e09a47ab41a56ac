"""Grammar-constrained decoding for the in-process models: JSON strings as JSON defines them, and a
greedy sampler that tests the grammar on the best token first.

Both keep greedy replies identical to llama.cpp's full check (`tests/e2e/test_llm_local.py`);
`benchmarks/grammar_decoding.py` measures the time saved. The runtime applies them when it loads a model
(`ragwatch.llm.local.load`).
"""

from __future__ import annotations

import functools
import math
from typing import Any

# JSON forbids raw U+0000-U+001F inside strings; llama-cpp-python's schema grammar allowed them (its
# `char` is [^"\\]), so a judge could write a raw newline inside a reason and fail validation after its
# repairs (1 of 64 judged items in a default run). This is llama.cpp's own rule (json-schema-to-grammar).
# Greedy replies that were valid JSON are unchanged: the grammar only rejects what JSON rejects.
JSON_STRING_CHAR = r'[^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])'


@functools.cache
def json_strings_without_control_characters() -> None:
    """Install llama.cpp's own JSON string rule in llama-cpp-python's schema grammar (once)."""
    from llama_cpp import llama_grammar

    llama_grammar.PRIMITIVE_RULES["char"] = llama_grammar.BuiltinRule(JSON_STRING_CHAR, [])


@functools.cache  # one subclass per base class, not one per loaded model
def greedy_grammar_class(llama_class: type) -> type:
    """`Llama` whose greedy, grammar-constrained decoding checks the grammar on the best token first.

    llama.cpp's grammar sampler tests every vocabulary entry at every step (152k for Qwen: about
    two thirds of the time of a JSON reply). Under greedy decoding the result only depends on the
    highest-logit token the grammar allows, so: test the top token alone; if the grammar accepts it,
    it is the answer (the full check would pick it too); only when the grammar rejects it is the whole
    vocabulary checked. Replies are token-for-token identical to the full check, like llama.cpp's
    own `grammar_first=false` sampling. Sampling at temperature > 0 and penalties keep the stock path.
    """

    class GreedyGrammarLlama(llama_class):  # type: ignore[misc, valid-type]
        def _init_sampler(self, *args: Any, **kwargs: Any) -> Any:
            stock = (
                kwargs.get("grammar") is None
                or kwargs.get("temp", 0.8) != 0.0
                or kwargs.get("repeat_penalty", 1.0) != 1.0
                or kwargs.get("frequency_penalty", 0.0) != 0.0
                or kwargs.get("presence_penalty", 0.0) != 0.0
                or args
            )
            if stock:
                return super()._init_sampler(*args, **kwargs)
            return _greedy_grammar_sampler(self, kwargs["grammar"], kwargs.get("logits_processor"))

    return GreedyGrammarLlama


def _greedy_grammar_sampler(llm: Any, grammar: Any, logits_processor: Any) -> Any:
    """Chain: [logits processors + top-token grammar test] -> grammar -> greedy."""
    import ctypes

    import llama_cpp
    import numpy as np
    from llama_cpp import _internals

    sampler = _internals.LlamaSampler()
    one = llama_cpp.llama_token_data()
    one_array = llama_cpp.llama_token_data_array(data=ctypes.pointer(one), size=1, selected=-1, sorted=False)

    def apply(cur_p: Any) -> None:
        size = cur_p.contents.size
        data = (llama_cpp.llama_token_data * size).from_address(ctypes.addressof(cur_p.contents.data.contents))
        records = np.ctypeslib.as_array(data)  # a view: id, logit, p
        logits = records["logit"]
        for processor in logits_processor or ():
            logits[:] = processor(llm._input_ids, logits)
        best = int(np.argmax(logits))
        one.id, one.logit, one.p = int(records["id"][best]), float(logits[best]), 0.0
        one_array.size, one_array.selected, one_array.sorted = 1, -1, False
        grammar_sampler = llama_cpp.llama_sampler_chain_get(sampler.sampler, 1)
        llama_cpp.llama_sampler_apply(grammar_sampler, ctypes.byref(one_array))
        if math.isfinite(one.logit):  # allowed: the greedy pick of the full check; skip the full check
            data[0].id, data[0].logit, data[0].p = one.id, one.logit, 0.0
            cur_p.contents.size = 1
            cur_p.contents.sorted = False

    sampler.add_custom(apply)
    sampler.add_grammar(llm._model, grammar)
    sampler.add_greedy()
    return sampler
