"""The wire format of one LLM call: what a prompt becomes on the way out (chat messages, sampling
parameters, the schema's response format, the cache key, litellm's keyword arguments) and what a
litellm reply becomes on the way back (text, token logprobs, finish reason). No sending here: that is
`LLMClient`'s job (ragwatch/llm/client.py).

Example:
    >>> request = build_request(LLMSettings(model="openai/gpt-4o-mini"), "Say hi", None, None, {})
    >>> request.messages, request.params["max_tokens"]
    ([{'role': 'user', 'content': 'Say hi'}], 512)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ragwatch.llm import structured
from ragwatch.llm.cache import cache_key
from ragwatch.llm.models import is_local
from ragwatch.llm.retry import FatalLLMError
from ragwatch.llm.types import LLMSettings, TokenLogprob

Prompt = str | Sequence[dict[str, Any]]

OVERRIDES = frozenset(
    {"temperature", "max_tokens", "seed", "logprobs", "top_logprobs", "top_p", "stop", "mock_response"}
)


@dataclass
class Request:
    """One call, ready to send: messages (system prompt included), parameters, schema and cache key."""

    messages: list[dict[str, Any]]
    schema: type[BaseModel] | None
    params: dict[str, Any]
    mock_response: Any
    key: str


def build_request(
    settings: LLMSettings, prompt: Prompt, schema: type[BaseModel] | None, system: str | None,
    overrides: dict[str, Any],
) -> Request:
    """The request `LLMClient` sends for `prompt`; bad arguments raise before any call."""
    overrides = dict(overrides)  # shared by every item of a stage: never mutate the caller's
    unknown = set(overrides) - OVERRIDES
    if unknown:
        raise TypeError(f"unknown generation option(s) {sorted(unknown)}; allowed: {sorted(OVERRIDES)}")
    if schema is not None and not (isinstance(schema, type) and issubclass(schema, BaseModel)):
        raise TypeError(f"schema must be a pydantic BaseModel class, got {schema!r}")
    messages = chat_messages(prompt)
    s = settings
    params: dict[str, Any] = {"temperature": s.temperature, "max_tokens": s.max_tokens}
    if s.seed is not None:
        params["seed"] = s.seed
    if s.logprobs or s.top_logprobs:
        params["logprobs"] = True
        if s.top_logprobs:
            params["top_logprobs"] = s.top_logprobs
    params.update(s.extra)
    mock = overrides.pop("mock_response", None)
    params.update({k: v for k, v in overrides.items() if v is not None})
    if params.get("top_logprobs"):
        params["logprobs"] = True
    if schema is not None:
        mode = structured.output_mode(s.model)
        params["response_format"] = structured.response_format(schema, mode)
        if mode == "json_object":
            hint = structured.schema_hint(schema)
            system = f"{system}\n\n{hint}" if system else hint
    if system:
        messages = [{"role": "system", "content": system}, *messages]
    key = cache_key(
        {
            "model": s.model,
            "api_base": s.api_base,
            "messages": messages,
            "params": params,
            "schema": structured.schema_json(schema) if schema is not None else None,
            # a mocked reply is part of what the "model" said, so it must be part of the key
            "mock_response": repr(mock) if mock is not None else None,
        }
    )
    return Request(messages, schema, params, mock, key)


def litellm_kwargs(settings: LLMSettings, messages: list[dict[str, Any]], request: Request) -> dict[str, Any]:
    """litellm's keyword arguments for one attempt of `request` with `messages` (a repair adds some)."""
    s = settings
    local = is_local(s.model)
    kwargs: dict[str, Any] = {
        "model": s.model,
        "messages": messages,
        **request.params,
        "num_retries": 0,
        "max_retries": 0,
    }  # retries are ours, not litellm's
    if not local:
        kwargs["timeout"] = s.timeout_s
    if s.api_base:
        kwargs["api_base"] = s.api_base
    if request.mock_response is not None:
        kwargs["mock_response"] = request.mock_response
        return kwargs
    if s.api_key_env:
        key = os.environ.get(s.api_key_env)
        if not key:
            raise FatalLLMError(
                f"no API key for {s.model!r}: set the environment variable named by api_key_env "
                f"({s.api_key_env}) or a ZenML secret that exports it"
            )
        kwargs["api_key"] = key
    elif s.api_base and not local:
        kwargs["api_key"] = "not-needed"  # OpenAI-compatible local servers take any key
    return kwargs


def chat_messages(prompt: Prompt) -> list[dict[str, Any]]:
    if isinstance(prompt, str):
        if not prompt.strip():
            raise ValueError("the prompt is empty; pass the text to send to the model")
        return [{"role": "user", "content": prompt}]
    messages = list(prompt)
    if not messages or not all(isinstance(m, dict) and "role" in m and "content" in m for m in messages):
        raise ValueError(
            "a prompt is a string or a non-empty list of chat messages like [{'role': 'user', 'content': '...'}]"
        )
    return [dict(m) for m in messages]


def token_estimate(messages: list[dict[str, Any]], params: dict[str, Any]) -> float:
    """Tokens a call may use, for a tpm budget: ~4 characters per prompt token plus the reply's cap
    (providers reserve max_tokens against the quota); settled with the reply's usage."""
    chars = sum(len(str(m.get("content", ""))) for m in messages)
    return chars / 4 + float(params.get("max_tokens") or 0)


def parse_reply(response: Any) -> tuple[str, list[TokenLogprob] | None, str | None]:
    """(text, token logprobs, finish reason) of a litellm chat completion."""
    choice = response.choices[0]
    text = getattr(choice.message, "content", None) or ""
    return text, token_logprobs(getattr(choice, "logprobs", None)), getattr(choice, "finish_reason", None)


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def token_logprobs(raw: Any) -> list[TokenLogprob] | None:
    """OpenAI-style `logprobs.content` (token, logprob, top_logprobs) as `TokenLogprob`s."""
    content = _get(raw, "content") if raw is not None else None
    if not content:
        return None
    tokens = []
    for item in content:
        top = {str(_get(t, "token")): float(_get(t, "logprob")) for t in (_get(item, "top_logprobs") or [])}
        tokens.append(TokenLogprob(token=str(_get(item, "token")), logprob=float(_get(item, "logprob")), top=top))
    return tokens
