"""One chat completion on a loaded llama context, by either path of the local runtime: the serial
path (llama-cpp-python's own `create_chat_completion` under the context's lock) or the decode
engine (the same chat handler, its completion decoded among other requests). Both format the prompt,
build the JSON grammar and sample the same way; token logprobs are read from the raw logits at each
step, never with `logits_all` (an lm-head pass over every prompt token).
"""

from __future__ import annotations

import math
import random
import threading
import time
import uuid
from typing import Any

from ragwatch.llm.local.decode_engine import DecodeEngine

PASSED = ("temperature", "max_tokens", "seed", "response_format", "logprobs", "top_logprobs", "top_p", "stop")


def llama_params(params: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
    """The parameters llama-cpp-python takes, and how many top logprobs per token (None: none asked)."""
    kwargs = {k: v for k, v in params.items() if k in PASSED and v is not None}
    if "response_format" in kwargs:
        kwargs["response_format"] = _llama_response_format(kwargs["response_format"])
    wants_logprobs = bool(kwargs.pop("logprobs", None) or kwargs.get("top_logprobs"))
    top_k = int(kwargs.pop("top_logprobs", None) or 1)
    return kwargs, (top_k if wants_logprobs else None)


def _llama_response_format(response_format: Any) -> Any:
    """Map OpenAI's json_schema form onto llama-cpp-python's `{"type": "json_object", "schema": ...}`."""
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        schema = response_format.get("json_schema", {}).get("schema")
        return {"type": "json_object", **({"schema": schema} if schema else {})}
    return response_format


def serial_completion(llm: Any, lock: threading.Lock, messages: list[dict[str, Any]], kwargs: dict[str, Any],
                      top_logprobs: int | None) -> dict[str, Any]:
    """llama-cpp-python's own chat completion, one call at a time on the context."""
    with lock:
        recorder = LogprobRecorder(llm, top_logprobs) if top_logprobs is not None else None
        if recorder is not None:
            from llama_cpp import LogitsProcessorList

            kwargs = {**kwargs, "logits_processor": LogitsProcessorList([recorder])}
        result = llm.create_chat_completion(messages=messages, **kwargs)
        if recorder is not None:
            choice = result["choices"][0]
            text = choice["message"].get("content") or ""
            choice["logprobs"] = recorder.finish(text, result.get("usage", {}).get("completion_tokens", 0))
    return result


def engine_completion(llm: Any, engine: DecodeEngine, sampler_lock: threading.Lock, messages: list[dict[str, Any]],
                      kwargs: dict[str, Any], top_logprobs: int | None) -> dict[str, Any]:
    """The same chat completion, decoded by the engine together with other requests."""
    proxy = _EngineLlama(llm, engine, sampler_lock, top_logprobs)
    # llama-cpp-python's own entry point with the proxy as `self`: same handler, same arguments
    result = type(llm).create_chat_completion(proxy, messages=messages, **kwargs)
    if top_logprobs is not None:
        result["choices"][0]["logprobs"] = {"content": proxy.logprobs or []}
    return result


class LogprobRecorder:
    """A logits processor that records log-softmax of the raw logits at every sampling step.

    llama-cpp-python's own logprobs need `logits_all=True` (an lm-head pass over every prompt
    token: seconds on an 800-token prompt) and sort the whole vocabulary in Python per token;
    this sees the same pre-grammar logits of the decode steps only and keeps the top-k by
    `argpartition`. The token sampled at step j is the last input id at step j+1.
    """

    def __init__(self, llm: Any, top_k: int) -> None:
        self.llm = llm
        self.top_k = max(1, top_k)
        self.prompt_len: int | None = None
        self.tokens: list[dict[str, Any]] = []
        self._pending: Any = None  # log-softmax of the step whose token is not known yet

    def _piece(self, token_id: int) -> str:
        return self.llm.detokenize([int(token_id)]).decode("utf-8", errors="ignore")

    def _close_step(self, token_id: int) -> None:
        import numpy as np

        lsm = self._pending
        top_ids = np.argpartition(lsm, -self.top_k)[-self.top_k :]
        top_ids = top_ids[np.argsort(lsm[top_ids])[::-1]]
        self.tokens.append(
            {
                "token": self._piece(token_id),
                "logprob": float(lsm[token_id]),
                "top_logprobs": [{"token": self._piece(i), "logprob": float(lsm[i])} for i in top_ids],
            }
        )
        self._pending = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import numpy as np

        if self.prompt_len is None:
            self.prompt_len = len(input_ids)
        elif self._pending is not None:
            self._close_step(int(input_ids[-1]))
        logits = np.asarray(scores, dtype=np.float32)
        peak = float(logits.max())
        self._pending = logits - (peak + math.log(float(np.exp(logits - peak).sum())))
        return scores

    def finish(self, text: str, completion_tokens: int) -> dict[str, Any]:
        """The OpenAI-style `logprobs` of the reply; the last token, never fed back to the
        model, is recovered by tokenizing the reply."""
        if self._pending is not None and len(self.tokens) < completion_tokens:
            ids = self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
            if len(ids) == len(self.tokens) + 1:
                self._close_step(int(ids[-1]))
        return {"content": self.tokens}


class _EngineLlama:
    """The model's `Llama` as llama-cpp-python's chat handler sees it, except that the completion it
    asks for is decoded by the decode engine: the chat template, the JSON-schema grammar, stop strings
    and token limits are the handler's own, exactly as on the serial path."""

    def __init__(self, llm: Any, engine: DecodeEngine, sampler_lock: threading.Lock, top_logprobs: int | None):
        self._llm, self._engine, self._sampler_lock, self._top = llm, engine, sampler_lock, top_logprobs
        self.logprobs: list[dict[str, Any]] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)

    def create_completion(self, prompt: Any, **kw: Any) -> dict[str, Any]:
        """`Llama._create_completion` for a tokenized prompt, greedy or sampled, without streaming."""
        if kw.get("stream") or kw.get("logits_processor") or kw.get("logit_bias") or kw.get("logprobs"):
            raise ValueError("the local decode engine does not stream, bias logits or echo logprobs")
        llm = self._llm
        tokens = list(prompt) if not isinstance(prompt, str) else llm.tokenize(prompt.encode("utf-8"), special=True)
        stop = kw.get("stop") or []
        stop = [stop] if isinstance(stop, str) else list(stop)
        with self._sampler_lock:  # the seed lives on the Llama object, as on the serial path
            seed = kw.get("seed")
            llm.set_seed(seed if seed is not None else random.Random(llm._seed).randint(0, 2**32))
            sampler = llm._init_sampler(
                top_k=kw.get("top_k", 40), top_p=kw.get("top_p", 0.95), min_p=kw.get("min_p", 0.05),
                typical_p=kw.get("typical_p", 1.0), temp=kw.get("temperature", 0.8),
                repeat_penalty=kw.get("repeat_penalty", 1.0), frequency_penalty=kw.get("frequency_penalty", 0.0),
                presence_penalty=kw.get("presence_penalty", 0.0), tfs_z=kw.get("tfs_z", 1.0),
                mirostat_mode=kw.get("mirostat_mode", 0), mirostat_tau=kw.get("mirostat_tau", 5.0),
                mirostat_eta=kw.get("mirostat_eta", 0.1), grammar=kw.get("grammar"),
            )
        try:
            done = self._engine.submit(tokens, max_tokens=kw.get("max_tokens") or 0, sampler=sampler,
                                       stop=[s.encode("utf-8") for s in stop], top_logprobs=self._top)
        except BaseException:
            sampler.close()
            raise
        self.logprobs = done.logprobs
        return {
            "id": f"cmpl-{uuid.uuid4()}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": kw.get("model") or llm.model_path,
            "choices": [{"text": done.text, "index": 0, "logprobs": None, "finish_reason": done.finish_reason}],
            "usage": {"prompt_tokens": done.prompt_tokens, "completion_tokens": done.completion_tokens,
                      "total_tokens": done.prompt_tokens + done.completion_tokens},
        }
