"""The in-process llama.cpp provider, registered with litellm as `local/<name>`.

One llama model per process. Calls decode together: a `BatchEngine` (ragwatch/llm/batched.py) per
model serves up to `slots` requests at once on its own multi-sequence context, so the client's
concurrency (`LLMSettings.concurrency`, announced with `reserve`) reaches the model; decoding 4
sequences per step costs little more than one on a CPU (`benchmarks/local_throughput.py`). With
concurrency 1, or `SERIAL = True`, calls take the serial path instead: one llama context guarded by
a lock, llama-cpp-python's own `create_chat_completion`. Both paths format the prompt, build the JSON
grammar and sample greedily the same way; token logprobs are read from the raw logits at each step.
A second context with `logits_all=True` is loaded only for perplexity: it reserves n_ctx x vocab
floats (so its window is capped at PERPLEXITY_CTX) and pays an lm-head pass per prompt token.

Example:
    >>> register()
    >>> litellm.completion(model="local/smollm2-135m-instruct", messages=[{"role": "user", "content": "hi"}])
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import math
import random
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import litellm
from litellm.llms.custom_llm import CustomLLM, CustomLLMError
from litellm.types.utils import ModelResponse

from ragwatch.llm.batched import BatchEngine, EngineClosedError
from ragwatch.llm.grammar import greedy_grammar_class, json_strings_without_control_characters
from ragwatch.llm.models import LOCAL_PREFIX, LOCAL_PROVIDER, ModelNotInstalledError, get_model, local_name, model_path

N_THREADS = 2
GREEDY_GRAMMAR_CHECK = True  # False: llama.cpp's stock sampler (benchmarks/grammar_decoding.py compares)
SERIAL = False  # True: every call takes the serial path (benchmarks/local_throughput.py compares)
DEFAULT_SLOTS = 4  # requests decoded together when no client announced its concurrency
MAX_SLOTS = 8  # each slot holds a full window of KV cache (~115 MB for the 1.5B at 4096 tokens)
PERPLEXITY_CTX = 2048  # Qwen's 152k vocabulary: 2048 x 152k floats = 1.2 GB of logits
_PASSED = (
    "temperature",
    "max_tokens",
    "seed",
    "response_format",
    "logprobs",
    "top_logprobs",
    "top_p",
    "stop",
)

_models: dict[tuple[str, bool], Any] = {}
_locks: dict[str, threading.Lock] = {}
_engines: dict[str, BatchEngine] = {}
_reserved: dict[str, int] = {}
_sampler_locks: dict[str, threading.Lock] = {}
_registry_lock = threading.RLock()
_executor: ThreadPoolExecutor | None = None


def load(name: str, *, logits_all: bool = False) -> tuple[Any, threading.Lock]:
    """The process-wide llama context of a model (loaded on first use) and the lock that guards it."""
    with _registry_lock:
        lock = _locks.setdefault(name, threading.Lock())
        key = (name, logits_all)
        if key not in _models:
            try:
                from llama_cpp import Llama
            except ImportError as exc:
                raise ModelNotInstalledError(
                    "the local provider needs llama-cpp-python (a portable build: "
                    "CMAKE_ARGS='-DGGML_NATIVE=OFF' pip install llama-cpp-python==0.3.36)"
                ) from exc
            json_strings_without_control_characters()
            spec = get_model(name)
            llama_class = greedy_grammar_class(Llama) if GREEDY_GRAMMAR_CHECK else Llama
            _models[key] = llama_class(
                model_path=str(model_path(name)),
                n_ctx=min(spec.n_ctx, PERPLEXITY_CTX) if logits_all else spec.n_ctx,
                n_threads=N_THREADS,
                logits_all=logits_all,
                verbose=False,
            )
        return _models[key], lock


def loaded() -> list[tuple[str, bool]]:
    """(name, logits_all) of the contexts loaded in this process."""
    return list(_models)


def reserve(name: str, slots: int) -> None:
    """Announce that up to `slots` calls to model `name` may be in flight (`LLMClient` does, with its
    concurrency). The model's engine is sized to the largest announcement, capped at MAX_SLOTS;
    only announcements of 1 keep the serial path."""
    with _registry_lock:
        _reserved[name] = max(_reserved.get(name, 0), max(1, slots))


def slots_for(name: str) -> int:
    """How many requests the model decodes together (1: the serial path)."""
    if SERIAL:
        return 1
    return min(_reserved.get(name, DEFAULT_SLOTS), MAX_SLOTS)


def engine(name: str) -> BatchEngine | None:
    """The model's batch engine (created on first use, rebuilt bigger when idle), or None for serial."""
    slots = slots_for(name)
    if slots <= 1:
        return None
    llm, _ = load(name)
    with _registry_lock:
        current = _engines.get(name)
        if current is not None and not current.alive():
            current = None  # closed, or this is a forked child where its thread does not run
        if current is not None and current.slots_n < slots and current.active() == 0:
            current.close()  # a caller that still holds it gets EngineClosedError and asks again
            current = None
        if current is None:
            current = _engines[name] = BatchEngine(llm, slots, n_ctx=get_model(name).n_ctx)
        return current


def engine_stats(name: str) -> Any:
    """A copy of the cumulative counters of the model's engine (None without one)."""
    current = _engines.get(name)
    return None if current is None else current.stats.since(type(current.stats)())


@atexit.register
def close_all() -> None:
    """Stop the engines and free every context; left to interpreter teardown, llama.cpp prints
    harmless tracebacks."""
    with _registry_lock:
        for current in _engines.values():
            current.close()  # before its model: the engine's context uses the model's weights
        _engines.clear()
        for llm in _models.values():
            llm.close()
        _models.clear()


def _llama_response_format(response_format: Any) -> Any:
    """Map OpenAI's json_schema form onto llama-cpp-python's `{"type": "json_object", "schema": ...}`."""
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        schema = response_format.get("json_schema", {}).get("schema")
        return {"type": "json_object", **({"schema": schema} if schema else {})}
    return response_format


class _LogprobRecorder:
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


def chat(name: str, messages: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
    """One chat completion on the local model, in OpenAI's response shape."""
    kwargs = {k: v for k, v in params.items() if k in _PASSED and v is not None}
    if "response_format" in kwargs:
        kwargs["response_format"] = _llama_response_format(kwargs["response_format"])
    wants_logprobs = bool(kwargs.pop("logprobs", None) or kwargs.get("top_logprobs"))
    top_k = int(kwargs.pop("top_logprobs", None) or 1)
    for _ in range(3):
        batcher = engine(name)
        if batcher is None:
            break
        try:
            return _chat_batched(name, batcher, messages, top_k if wants_logprobs else None, kwargs)
        except EngineClosedError:  # replaced by a bigger engine between lookup and submit: ask again
            continue
    llm, lock = load(name)
    with lock:
        recorder = _LogprobRecorder(llm, top_k) if wants_logprobs else None
        if recorder is not None:
            from llama_cpp import LogitsProcessorList

            kwargs["logits_processor"] = LogitsProcessorList([recorder])
        result = llm.create_chat_completion(messages=messages, **kwargs)
        if recorder is not None:
            choice = result["choices"][0]
            text = choice["message"].get("content") or ""
            choice["logprobs"] = recorder.finish(text, result.get("usage", {}).get("completion_tokens", 0))
    return result


class _EngineLlama:
    """The model's `Llama` as llama-cpp-python's chat handler sees it, except that the completion it
    asks for is decoded by the batch engine: the chat template, the JSON-schema grammar, stop strings
    and token limits are the handler's own, exactly as on the serial path."""

    def __init__(self, llm: Any, batcher: BatchEngine, sampler_lock: threading.Lock, top_logprobs: int | None):
        self._llm, self._engine, self._sampler_lock, self._top = llm, batcher, sampler_lock, top_logprobs
        self.logprobs: list[dict[str, Any]] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)

    def create_completion(self, prompt: Any, **kw: Any) -> dict[str, Any]:
        """`Llama._create_completion` for a tokenized prompt, greedy or sampled, without streaming."""
        if kw.get("stream") or kw.get("logits_processor") or kw.get("logit_bias") or kw.get("logprobs"):
            raise ValueError("the batched local provider does not stream, bias logits or echo logprobs")
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


def _chat_batched(name: str, batcher: BatchEngine, messages: list[dict[str, Any]], top_logprobs: int | None,
                  kwargs: dict[str, Any]) -> dict[str, Any]:
    llm, _ = load(name)
    with _registry_lock:
        sampler_lock = _sampler_locks.setdefault(name, threading.Lock())
    proxy = _EngineLlama(llm, batcher, sampler_lock, top_logprobs)
    # llama-cpp-python's own entry point with the proxy as `self`: same handler, same arguments
    result = type(llm).create_chat_completion(proxy, messages=messages, **kwargs)
    if top_logprobs is not None:
        result["choices"][0]["logprobs"] = {"content": proxy.logprobs or []}
    return result


def perplexity(name: str, text: str) -> float:
    """exp(mean negative log-likelihood) of `text`'s tokens, each given the tokens before it.

    Computed from `Llama.eval` + `Llama.scores`: echo logprobs of a completion call are wrong for
    models without a BOS token. Without a BOS the first token has no context and is not scored.
    """
    import numpy as np

    llm, lock = load(name, logits_all=True)
    tokens = llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
    if len(tokens) < 2:
        raise ValueError("perplexity needs a text of at least two tokens")
    if len(tokens) > llm.n_ctx():
        raise ValueError(f"the text has {len(tokens)} tokens, more than the model's context ({llm.n_ctx()}); split it")
    with lock:
        llm.reset()
        llm.eval(tokens)
        logits = np.array(llm.scores[: len(tokens) - 1, :], dtype=np.float64)
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_norm = np.log(np.exp(shifted).sum(axis=1))
    targets = np.asarray(tokens[1:])
    token_logprobs = shifted[np.arange(len(targets)), targets] - log_norm
    value = math.exp(-float(token_logprobs.mean()))
    if not math.isfinite(value):
        raise ValueError("perplexity is not finite for this text")
    return value


class LocalProvider(CustomLLM):
    """litellm handler for `local/<name>`: runs the packaged GGUF model in this process."""

    def completion(
        self,
        model: str,
        messages: list,
        api_base: str,
        custom_prompt_dict: dict,
        model_response: ModelResponse,
        print_verbose: Any,
        encoding: Any,
        api_key: Any,
        logging_obj: Any,
        optional_params: dict,
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        name = local_name(model)
        try:
            get_model(name)
            started = time.perf_counter()
            result = chat(name, messages, **optional_params)
        except (ModelNotInstalledError, ValueError) as exc:
            # 4xx: litellm maps it to a non-retryable error, and the message says what to install
            raise CustomLLMError(status_code=400, message=str(exc)) from exc
        result.setdefault("id", f"local-{uuid.uuid4().hex}")
        response = ModelResponse(**result)
        response.model = LOCAL_PREFIX + name
        response._hidden_params["local_latency_s"] = time.perf_counter() - started
        return response

    async def acompletion(
        self,
        model: str,
        messages: list,
        api_base: str,
        custom_prompt_dict: dict,
        model_response: ModelResponse,
        print_verbose: Any,
        encoding: Any,
        api_key: Any,
        logging_obj: Any,
        optional_params: dict,
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        # a pool of our own: asyncio's default one has cpu_count + 4 threads (6 here), fewer than the
        # requests the batch engine can take; these threads only wait for the engine
        loop = asyncio.get_running_loop()
        call = functools.partial(
            self.completion,
            model,
            messages,
            api_base,
            custom_prompt_dict,
            model_response,
            print_verbose,
            encoding,
            api_key,
            logging_obj,
            optional_params,
            *args,
            **kwargs,
        )
        return await loop.run_in_executor(_calls_pool(), call)


def _calls_pool() -> ThreadPoolExecutor:
    global _executor
    with _registry_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=64, thread_name_prefix="ragwatch-local")
        return _executor


_provider = LocalProvider()


def register() -> None:
    """Make `model="local/<name>"` work in litellm (idempotent)."""
    with _registry_lock:
        if not any(entry.get("provider") == LOCAL_PROVIDER for entry in litellm.custom_provider_map):
            litellm.custom_provider_map.append({"provider": LOCAL_PROVIDER, "custom_handler": _provider})
            # litellm reads the provider list when the map changes
            litellm.utils.custom_llm_setup()
