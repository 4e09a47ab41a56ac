"""`DryClient`: an `LLMClient` that builds every request exactly as the real one does (same
prompts, same cache keys) and sends none. A request already in the cache is answered from it and
counted as free; any other is counted (prompt tokens with the model's own tokenizer, reply tokens
from the run history or `max_tokens`) and answered with a placeholder valid under its schema, so
the code that asked (a testset recipe, a multi-stage judge) goes on to its next stage.

Example:
    >>> dry = DryClient(LLMSettings(model="gpt-4o-mini"), role="judge", history=[])  # doctest: +SKIP
    >>> dry.generate_many(prompts, desc="judge correctness stage 1"); dry.stages  # doctest: +SKIP
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ragwatch.llm.client import LLMClient
from ragwatch.llm.history import StageRate, StageRecord, stage_rate, typical
from ragwatch.llm.pricing import count_tokens
from ragwatch.llm.request import Prompt, Request
from ragwatch.llm.types import Generation, LLMSettings
from ragwatch.progress import Progress

PLACEHOLDER = "A placeholder reply standing in for the model's answer"


@dataclass
class StageCount:
    """The calls of one stage of one role, as the dry run saw them."""

    role: str
    stage: str
    model: str
    requests: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: float = 0.0
    reply_basis: str = "max_tokens"  # or "history", "history of another model"
    reply_tokens: float | None = None  # per call, from the history
    rate: StageRate | None = None  # this model's seconds per call of this stage, from the history
    batch_wall_s: float | None = None  # the stage's last batch, from the history

    @property
    def calls(self) -> int:
        """Calls that would be sent (cache hits excluded)."""
        return self.requests - self.cached


class DryClient(LLMClient):
    """Counts what a real `LLMClient` with these settings would send; sends nothing."""

    def __init__(self, settings: LLMSettings, *, role: str, history: Sequence[StageRecord] = ()) -> None:
        super().__init__(settings.model_copy(update={"budget_usd": None}))
        self.role = role
        self.history = list(history)
        self.stages: dict[str, StageCount] = {}

    async def _run_requests(
        self, requests: list[Request], desc: str | Progress | None, stage: str | None
    ) -> list[Generation]:
        # every batch of calls (generate_many, a judge stage's generate_stage) ends here
        label = stage or (desc if isinstance(desc, str) else None) or "calls"
        return [self._dry(request, label) for request in requests]

    async def agenerate(self, prompt: Prompt, *, schema: type[BaseModel] | None = None,
                        system: str | None = None, stage: str | None = None, **overrides: Any) -> Generation:
        return self._dry(self._request(prompt, schema, system, overrides), stage or "calls")

    def perplexity(self, text: str) -> float:
        return 1.0  # scored in process by a local model: no provider call to count

    def _dry(self, request: Request, stage: str) -> Generation:
        count = self.stages.get(stage)
        if count is None:
            count = self.stages[stage] = StageCount(self.role, stage, self.settings.model)
            seen = typical(self.history, self.settings.model, stage)
            if seen is not None:
                count.reply_basis, count.reply_tokens = "history", seen.completion_tokens
            elif (other := typical(self.history, None, stage)) is not None:  # same prompts, another model
                count.reply_basis, count.reply_tokens = "history of another model", other.completion_tokens
            # never another model's; of runs whose calls read about as much as the stage's first
            count.rate = stage_rate(self.history, self.settings.model, stage,
                                    prompt_tokens=count_tokens(self.settings.model, request.messages))
            batches = [r for r in self.history if r.batch and r.model == self.settings.model and r.stage == stage]
            if batches:
                count.batch_wall_s = batches[-1].wall_s
        count.requests += 1
        hit = self._cache.get(request.key) if self._cache is not None else None
        cached = self._from_cache(hit, request, time.perf_counter()) if hit is not None else None
        if cached is not None:
            count.cached += 1
            return cached
        max_tokens = float(request.params.get("max_tokens") or self.settings.max_tokens)
        count.prompt_tokens += count_tokens(self.settings.model, request.messages)
        count.completion_tokens += min(count.reply_tokens, max_tokens) if count.reply_tokens is not None else max_tokens
        return _placeholder_generation(self.settings.model, request.schema)


def _placeholder_generation(model: str, schema: type[BaseModel] | None) -> Generation:
    if schema is None:
        return Generation(model=model, text=PLACEHOLDER)
    value = _instance(schema.model_json_schema())
    try:
        parsed = schema.model_validate(value)
    except ValueError as exc:
        return Generation(model=model, error=f"no placeholder fits the schema: {exc}")
    return Generation(model=model, text=json.dumps(value), parsed=parsed)


def _instance(schema: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """A value valid under a JSON schema: first enum values, minimum counts, short strings."""
    root = root or schema
    if "$ref" in schema:
        return _instance(root.get("$defs", {})[schema["$ref"].rsplit("/", 1)[-1]], root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return _instance(options[0], root)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object":
        return {name: _instance(sub, root) for name, sub in schema.get("properties", {}).items()}
    if kind == "array":
        return [_instance(schema.get("items", {}), root) for _ in range(max(1, schema.get("minItems", 1)))]
    if kind in ("integer", "number"):
        value = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return True
    length = max(schema.get("minLength", 0), len(PLACEHOLDER))
    return (PLACEHOLDER * (length // len(PLACEHOLDER) + 1))[: min(length, schema.get("maxLength", length))]
