"""Remote embedding calls (and token counts) through litellm, with the LLM layer's retry policy and secret scrubbing.

Example:
    >>> response = embed_remote("openai/text-embedding-3-small", ["hello"], api_key=key)  # doctest: +SKIP
    >>> len(response.data)  # doctest: +SKIP
    1
"""

from __future__ import annotations

import time
from typing import Any

from ragwatch.llm.backend import load_litellm
from ragwatch.llm.retry import backoff_s, classify, describe, retry_after_s


class EmbeddingCallError(RuntimeError):
    """An embedding call failed for good: a fatal error, or transient ones past the retries."""


def count_tokens(model: str, text: str) -> int:
    """litellm's token count for `model` (exact for OpenAI models, an approximation for others)."""
    return int(load_litellm().token_counter(model=model, text=text))


def embed_remote(
    model: str,
    texts: list[str],
    *,
    api_base: str | None = None,
    api_key: str | None = None,
    extra: dict[str, Any] | None = None,
    max_retries: int = 4,
    retry_base_s: float = 1.0,
    retry_max_s: float = 30.0,
) -> Any:
    """`litellm.embedding` for one request of texts; retries 429/5xx/timeouts, fails fast on auth or bad requests."""
    kwargs: dict[str, Any] = {"model": model, "input": texts, **(extra or {})}
    if api_base:
        kwargs["api_base"] = api_base
    if api_key:
        kwargs["api_key"] = api_key
    litellm = load_litellm()
    for attempt in range(max_retries + 1):
        try:
            return litellm.embedding(**kwargs)
        except Exception as exc:  # classified below; anything unknown is fatal
            kind = classify(exc)
            if kind == "fatal" or attempt == max_retries:
                raise EmbeddingCallError(
                    f"embedding model {model!r} failed after {attempt + 1} attempt(s): {describe(exc, api_key)}"
                ) from None
            delay = retry_after_s(exc) if kind == "rate_limit" else None
            time.sleep(delay if delay is not None else backoff_s(attempt, retry_base_s, retry_max_s))
    raise AssertionError("unreachable")
