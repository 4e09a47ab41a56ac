"""Judge configuration (YAML -> pydantic, unknown keys are errors) and `build_judges`.

Every registered judge (see `registry.py`) has an options block under its own name, validated by
the options model it registered; custom YAML rubrics are declarations of 1-5 judges.

Example YAML block:

    judges:
      llm: {model: gpt-4o-mini, api_key_env: OPENAI_API_KEY}   # default: the measured local judge
      enabled: [faithfulness, similarity, perplexity, correctness]   # default: the first three
      use_logprobs: true                  # default: on where the provider returns token logprobs
      correctness: {threshold: 4.0, prompt_family: prometheus}   # threshold: null -> no pass/fail
      faithfulness: {max_statements: 8, verify: batched}   # default: sentences, 4, evidence
      custom:
        - {name: conciseness, criteria: ..., rubric: {1: ..., 2: ..., 3: ..., 4: ..., 5: ...}, threshold: 4}

    >>> config = JudgesConfig.model_validate(yaml_block["judges"])  # doctest: +SKIP
    >>> judges = build_judges(config, LLMClient(config.llm))  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ragwatch.judges import registry
from ragwatch.judges.custom import CustomRubric, CustomRubricJudge
from ragwatch.judges.registry import JudgeDeps, JudgeOptions
from ragwatch.llm.types import JudgeLLMSettings

_FIELDS = ("llm", "enabled", "use_logprobs", "custom")


class JudgesConfig(BaseModel):
    """Which judges run, with which judge LLM, and each judge's options (a block named after it)."""

    # judge option blocks are the extra keys; `_check_blocks` validates each against its judge
    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    # the measured judge model (`JUDGE_MODEL`, max_tokens 384) unless the block says otherwise
    llm: JudgeLLMSettings
    """The judge LLM every LLM judge uses."""
    # faithfulness, similarity, perplexity: the judges the project measured or that make no call; the
    # opt-in ones (correctness, relevance, rubric) are near chance at the local model's size
    enabled: list[str] = Field(default_factory=registry.default_names)
    """Judges that run, in order (built-in names or `custom` names)."""
    # verdicts read from the probabilities of yes/no (what the faithfulness calibration was fitted on)
    use_logprobs: bool | None = None
    """Probability-weighted scores from the judge's token logprobs; null: on where the provider returns them."""
    custom: list[CustomRubric] = Field(default_factory=list)
    """Your own 1-5 judges declared in YAML."""

    @model_validator(mode="after")
    def _check_blocks(self) -> JudgesConfig:
        known = registry.names()
        custom = [c.name for c in self.custom]
        if clash := sorted(set(custom) & set(known)):
            raise ValueError(f"custom judge names {clash} clash with built-in judges; rename them")
        if dupes := sorted({n for n in custom if custom.count(n) > 1}):
            raise ValueError(f"duplicate custom judge names {dupes}")
        extras = self.__pydantic_extra__ or {}
        for key, value in extras.items():
            if key not in known:
                raise ValueError(
                    f"unknown key {key!r} in judges: expected {list(_FIELDS)} or a judge's options block "
                    f"(one of {known})"
                )
            options_model = registry.spec(key).options
            try:
                extras[key] = value if isinstance(value, options_model) else options_model.model_validate(
                    value.model_dump() if isinstance(value, BaseModel) else (value or {})
                )
            except ValidationError as exc:
                raise ValueError(f"judges.{key}: {exc}") from exc
        if unknown := [n for n in self.enabled if n not in known and n not in custom]:
            raise ValueError(f"enabled lists unknown judge(s) {unknown}; built-in: {known}, custom: {custom}")
        return self

    def logprobs_on(self) -> bool:
        """Whether the judges read verdicts from token logprobs: `use_logprobs`, or where the provider has them."""
        if self.use_logprobs is not None:
            return self.use_logprobs
        from ragwatch.llm.logprobs import supports_logprobs

        return supports_logprobs(self.llm)

    def options(self, name: str) -> JudgeOptions:
        """The options of judge `name`: its block, or the defaults its options model declares."""
        block = (self.__pydantic_extra__ or {}).get(name)
        return block if block is not None else registry.spec(name).options()

    def __getattr__(self, name: str) -> Any:
        # `config.faithfulness` reads a judge's options like a field, defaults included
        if not name.startswith("_") and name in registry.names():
            return self.options(name)
        return super().__getattr__(name)  # type: ignore[misc]


def build_judges(
    config: JudgesConfig, llm: Any, embedder: Any = None, generator_llm: Any = None,
    generator_model: str | None = None, system_fingerprint: str | None = None,
) -> list[Any]:
    """The enabled judges, in `config.enabled` order (custom judges run only when listed there).

    `llm` is the judge `LLMClient` built from `config.llm`, whose model the judges are given
    (`JudgeDeps.model`); `embedder` serves similarity (default: the packaged local model, loaded on
    first use); `generator_llm` is the system under test's client and `generator_model` its model
    string, for perplexity; `system_fingerprint` names the system under test to a judge whose calibration
    holds labelled answers of it.
    """
    use_logprobs = config.logprobs_on()
    deps = JudgeDeps(llm=llm, model=config.llm.model, use_logprobs=use_logprobs, embedder=embedder,
                     generator_llm=generator_llm, generator_model=generator_model,
                     system_fingerprint=system_fingerprint)
    custom = {c.name: c for c in config.custom}
    judges: list[Any] = []
    for name in config.enabled:
        if name in custom:
            judges.append(CustomRubricJudge(custom[name], llm, model=deps.model, use_logprobs=use_logprobs))
        else:
            judges.append(registry.spec(name).build(config.options(name), deps))
    return judges
