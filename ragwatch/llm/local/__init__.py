"""The local runtime: packaged GGUF models run in this process by llama.cpp. This module is its one
door: the rest of the code imports what it needs from here (and sets its knobs here).

- the model registry: `MODELS`, `PackagedModel`, `get_model`, `packaged`, `model_path`,
  `ModelNotInstalledError` (`registry.py`);
- running a model: `register()` (litellm's `local/<name>` provider, `provider.py`), `chat`,
  `perplexity`, `load` / `loaded`, `close_all`;
- the decode engine: `reserve(name, slots)`, `slots_for`, `engine(name)`, `engine_stats(name)`;
  the serial path's `LogprobRecorder` (a benchmark times it).

One llama model per process. Calls decode together: a `DecodeEngine` (`decode_engine.py`: continuous
batching) per model serves up to `slots` requests at once on its own multi-sequence context, so the
client's concurrency (`LLMSettings.concurrency`, announced with `reserve`) reaches the model. With
concurrency 1, or `SERIAL = True`, calls take the serial path instead: one llama context guarded by a
lock, llama-cpp-python's own `create_chat_completion` (`completion.py` holds both paths). A second
context with `logits_all=True` is loaded only for perplexity: it reserves n_ctx x vocab floats (so its
window is capped at PERPLEXITY_CTX) and pays an lm-head pass per prompt token. JSON-schema decoding
follows `grammar.py`. Light to import: litellm and llama-cpp-python load on first use.

Example:
    >>> register()
    >>> litellm.completion(model="local/smollm2-135m-instruct", messages=[{"role": "user", "content": "hi"}])
    >>> chat("smollm2-135m-instruct", [{"role": "user", "content": "hi"}], max_tokens=8)["choices"][0]
"""

from __future__ import annotations

import atexit
import math
import threading
from typing import Any

from ragwatch.llm.local.completion import LogprobRecorder, engine_completion, llama_params, serial_completion
from ragwatch.llm.local.decode_engine import Completion, DecodeEngine, EngineClosedError, EngineError, EngineStats
from ragwatch.llm.local.grammar import greedy_grammar_class, json_strings_without_control_characters
from ragwatch.llm.local.registry import MODELS, ModelNotInstalledError, PackagedModel, get_model, model_path, packaged
from ragwatch.llm.models import LOCAL_PROVIDER

__all__ = [
    "MODELS", "Completion", "DecodeEngine", "EngineClosedError", "EngineError", "EngineStats", "LogprobRecorder",
    "ModelNotInstalledError", "PackagedModel", "chat", "close_all", "engine", "engine_stats", "get_model", "load",
    "loaded", "model_path", "packaged", "perplexity", "register", "reserve", "slots_for",
]

N_THREADS = 2
GREEDY_GRAMMAR_CHECK = True  # False: llama.cpp's stock sampler (benchmarks/grammar_decoding.py compares)
SERIAL = False  # True: every call takes the serial path (benchmarks/local_throughput.py compares)
DEFAULT_SLOTS = 4  # requests decoded together when no client announced its concurrency
MAX_SLOTS = 8  # each slot holds a full window of KV cache (~115 MB for the 1.5B at 4096 tokens)
PERPLEXITY_CTX = 2048  # Qwen's 152k vocabulary: 2048 x 152k floats = 1.2 GB of logits

_models: dict[tuple[str, bool], Any] = {}
_locks: dict[str, threading.Lock] = {}
_engines: dict[str, DecodeEngine] = {}
_reserved: dict[str, int] = {}
_sampler_locks: dict[str, threading.Lock] = {}
_registry_lock = threading.RLock()


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


def engine(name: str) -> DecodeEngine | None:
    """The model's decode engine (created on first use, rebuilt bigger when idle), or None for serial."""
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
            current = _engines[name] = DecodeEngine(llm, slots, n_ctx=get_model(name).n_ctx)
        return current


def engine_stats(name: str) -> EngineStats | None:
    """A copy of the cumulative counters of the model's engine (None without one)."""
    current = _engines.get(name)
    return None if current is None else current.stats.since(EngineStats())


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


def chat(name: str, messages: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
    """One chat completion on the local model, in OpenAI's response shape."""
    kwargs, top_logprobs = llama_params(params)
    for _ in range(3):
        current = engine(name)
        if current is None:
            break
        try:
            llm, _ = load(name)
            with _registry_lock:
                sampler_lock = _sampler_locks.setdefault(name, threading.Lock())
            return engine_completion(llm, current, sampler_lock, messages, kwargs, top_logprobs)
        except EngineClosedError:  # replaced by a bigger engine between lookup and submit: ask again
            continue
    llm, lock = load(name)
    return serial_completion(llm, lock, messages, kwargs, top_logprobs)


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


def register() -> None:
    """Make `model="local/<name>"` work in litellm (idempotent)."""
    from ragwatch.llm.backend import load_litellm
    from ragwatch.llm.local.provider import LocalProvider

    litellm = load_litellm()
    with _registry_lock:
        if not any(entry.get("provider") == LOCAL_PROVIDER for entry in litellm.custom_provider_map):
            litellm.custom_provider_map.append({"provider": LOCAL_PROVIDER, "custom_handler": LocalProvider(chat)})
            # litellm reads the provider list when the map changes
            litellm.utils.custom_llm_setup()
