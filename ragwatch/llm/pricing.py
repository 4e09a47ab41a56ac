"""Tokens and prices before a call is sent: the model's own tokenizer where litellm has one, prices
from litellm's bundled cost map (no network), batch prices where the map has them.

Example:
    >>> count_tokens("gpt-4o-mini", [{"role": "user", "content": "Hello there"}])  # doctest: +SKIP
    9
    >>> call_cost("gpt-4o-mini", 1000, 100)  # doctest: +SKIP
    0.00021
"""

from __future__ import annotations

import functools
from typing import Any

from ragwatch.llm.backend import load_litellm
from ragwatch.llm.models import is_local

BATCH_DISCOUNT = 0.5  # what OpenAI, Azure and Anthropic charge for batch work when the map has no price


def count_tokens(model: str, messages: list[dict[str, Any]]) -> int:
    """Prompt tokens of `messages` for `model` (litellm's tokenizer for it; its default otherwise)."""
    litellm = load_litellm()
    try:
        return int(litellm.token_counter(model=_priced_name(model), messages=messages))
    except Exception:  # an unknown tokenizer must not stop an estimate: about 4 characters per token
        return sum(len(str(m.get("content", ""))) for m in messages) // 4 + 4 * len(messages)


@functools.lru_cache(maxsize=256)
def token_prices(model: str, batch: bool = False) -> tuple[float, float] | None:
    """(input, output) dollars per token of `model`, or None when litellm's map does not price it.

    `local/` models cost nothing. With `batch`, the map's batch prices, else half the online ones.
    """
    if is_local(model):
        return 0.0, 0.0
    litellm = load_litellm()
    entry = None
    for name in (model, _priced_name(model)):
        entry = litellm.model_cost.get(name)
        if entry:
            break
    if not entry or entry.get("input_cost_per_token") is None:
        return None
    online = float(entry.get("input_cost_per_token") or 0.0), float(entry.get("output_cost_per_token") or 0.0)
    if not batch:
        return online
    batch_in, batch_out = entry.get("input_cost_per_token_batches"), entry.get("output_cost_per_token_batches")
    return (float(batch_in) if batch_in is not None else online[0] * BATCH_DISCOUNT,
            float(batch_out) if batch_out is not None else online[1] * BATCH_DISCOUNT)


def call_cost(model: str, prompt_tokens: float, completion_tokens: float, *, batch: bool = False) -> float:
    """Dollars for one call's (or many calls') tokens; 0 for a model the map does not price."""
    prices = token_prices(model, batch)
    if prices is None:
        return 0.0
    return prompt_tokens * prices[0] + completion_tokens * prices[1]


def is_priced(model: str) -> bool:
    return token_prices(model) is not None


def _priced_name(model: str) -> str:
    """`openai/gpt-4o-mini` -> `gpt-4o-mini`: the map keys OpenAI models without the provider."""
    provider, _, name = model.partition("/")
    return name if provider == "openai" and name else model
