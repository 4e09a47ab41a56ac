"""The LLM layer's data types: settings, one generation's outcome, and usage totals.

Every LLM call in ragwatch returns a `Generation`: either `ok` with text (and a validated
`parsed` object when a schema was asked for), or an explicit failure with `error` and the raw reply.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragwatch.llm.models import is_local
from ragwatch.presets import preset

DEFAULT_MODEL = "local/qwen2.5-0.5b-instruct"  # the generator: writes questions, references and answers
# The judge: a bigger model judges than answers. On human-labelled claims (QAGS-XSum, n=60) the 1.5B ranks
# supported above unsupported with ROC AUC 0.77 [0.64, 0.88], the 0.5B with 0.62 [0.47, 0.76]
# (benchmarks/judge_choice.py); the faithfulness judge's calibration is fitted for it
# (judges/faithfulness/calibrations.py).
JUDGE_MODEL = "local/qwen2.5-coder-1.5b-instruct"
TINY_MODEL = "local/smollm2-135m-instruct"


class LLMSettings(BaseModel):
    """How to reach one model. Any litellm model string works; `local/<name>` is the in-process model.

    API keys are never stored here: `api_key_env` names the environment variable that holds one.
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    model: str = DEFAULT_MODEL
    """Any litellm model string (`gpt-4o-mini`, `ollama/...`, `openai/<name>`); `local/<name>` runs in-process."""
    api_base: str | None = None
    """Base URL of the model's server (Ollama, vLLM, an OpenAI-compatible proxy)."""
    api_key_env: str | None = None
    """Name of the environment variable that holds the API key (the key is never stored)."""
    temperature: float = 0.0
    """Sampling temperature (0: greedy)."""
    max_tokens: int = 512
    """Most tokens of one reply."""
    seed: int | None = 0
    """Sampling seed, where the provider honours one."""
    timeout_s: float = 120.0
    """Seconds before one call times out."""
    max_retries: int = 4
    """Retries of a failed call (429, 5xx, timeouts) before the item fails."""
    max_repairs: int = 2
    """Re-asks when a structured reply does not validate, before the item fails."""
    retry_base_s: float = 1.0  # first backoff delay; doubles per retry, with full jitter
    """First backoff delay in seconds; doubles per retry, with jitter."""
    retry_max_s: float = 30.0  # cap of one backoff delay (a Retry-After header may ask for longer)
    """Cap of one backoff delay in seconds."""
    concurrency: int = 4  # calls in flight at most; 429s lower it for a while (see ragwatch/llm/limiter.py)
    """Calls in flight at most (local models: sequences decoded together)."""
    rpm: float | None = Field(default=None, gt=0)  # the provider's requests-per-minute quota, if it has one
    """The provider's requests-per-minute quota, if it has one."""
    tpm: float | None = Field(default=None, gt=0)  # ... and tokens per minute (prompt + max_tokens, settled)
    """The provider's tokens-per-minute quota, if it has one."""
    cache: bool = True
    """Keep every reply in the LLM cache, so a repeated request is free."""
    cache_dir: str | None = None
    """Where the LLM cache lives (default: the ragwatch cache directory)."""
    # the most this role may spend in one run (litellm's prices); calls past it fail explicitly
    budget_usd: float | None = Field(default=None, gt=0)
    """The most this role may spend in one run (litellm's prices); calls past it fail explicitly."""
    # each stage's calls as one provider batch (OpenAI, Azure, ...: half the price, replies within 24 h)
    batch: bool = False
    """Send each stage's uncached calls as one provider batch (half the price, replies within 24 h)."""
    batch_poll_s: float = Field(default=30.0, gt=0)  # seconds between status checks of a batch job
    """Seconds between status checks of a provider batch."""
    batch_timeout_s: float = Field(default=86400.0, gt=0)  # give up waiting (the job stays; a re-run picks it up)
    """Seconds to wait for a batch (it stays with the provider; a re-run picks it up)."""
    logprobs: bool = False
    """Ask for token logprobs with every reply."""
    top_logprobs: int = 0
    """Alternatives returned per token with logprobs."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Extra arguments forwarded to litellm's completion call."""

    @model_validator(mode="after")
    def _batch_needs_a_provider(self) -> LLMSettings:
        if self.batch and is_local(self.model):
            raise ValueError(f"batch: true needs a provider with a batch API; {self.model!r} runs in process")
        return self


# Each role's block: its defaults, kept for the keys a config leaves out (ragwatch/presets.py).
TestsetGeneratorSettings = preset(LLMSettings, max_tokens=400)  # one question (and answer) per chunk
SystemGeneratorSettings = preset(LLMSettings, max_tokens=160)  # the built-in system's answers
JudgeLLMSettings = preset(LLMSettings, model=JUDGE_MODEL, max_tokens=384)


class TokenLogprob(BaseModel):
    """A generated token, its log probability, and the most likely alternatives at that position."""

    token: str
    logprob: float
    top: dict[str, float] = Field(default_factory=dict)


class Generation(BaseModel):
    """The outcome of one LLM call (after retries and repairs)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model: str
    text: str = ""
    parsed: Any = None  # a validated instance of the requested schema, when one was requested
    error: str | None = None
    raw: str | None = None
    logprobs: list[TokenLogprob] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0
    cached: bool = False
    attempts: int = 1
    repairs: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None


class Usage(BaseModel):
    """Usage totals of a stage or of a client's lifetime; steps log `model_dump()` as metadata."""

    model: str = ""
    requests: int = 0  # generations asked for, served by the provider or the cache
    calls: int = 0  # generations the provider served (cache hits excluded)
    cache_hits: int = 0
    retries: int = 0
    repairs: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0

    def add(self, generation: Generation) -> None:
        self.requests += 1
        self.failures += int(not generation.ok)
        if generation.cached:
            # a cache hit costs nothing: no provider call, tokens or cost
            self.cache_hits += 1
            return
        self.calls += int(generation.attempts > 0)  # 0 attempts: never sent (the stage stopped first)
        self.retries += max(generation.attempts - 1, 0)
        self.repairs += generation.repairs
        self.prompt_tokens += generation.prompt_tokens
        self.completion_tokens += generation.completion_tokens
        self.latency_s += generation.latency_s
        self.cost_usd += generation.cost_usd

    def merged(self, other: Usage) -> Usage:
        fields = ("requests", "calls", "cache_hits", "retries", "repairs", "failures", "prompt_tokens",
                  "completion_tokens", "latency_s", "cost_usd")
        merged = Usage(model=self.model if self.model == other.model else "mixed")
        for name in fields:
            setattr(merged, name, getattr(self, name) + getattr(other, name))
        return merged

    def since(self, mark: Usage) -> Usage:
        """The usage accrued after `mark` (a `model_copy()` taken earlier): a stage's own record.

        Example:
            >>> mark = client.usage.model_copy(); client.generate_many(prompts)
            >>> stage = client.usage.since(mark)
        """
        delta = Usage(model=self.model)
        for name in _COUNTERS:
            setattr(delta, name, getattr(self, name) - getattr(mark, name))
        return delta


_COUNTERS = ("requests", "calls", "cache_hits", "retries", "repairs", "failures", "prompt_tokens",
             "completion_tokens", "latency_s", "cost_usd")
