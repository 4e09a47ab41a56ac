"""Judge configuration (YAML -> pydantic, unknown keys are errors) and `build_judges`.

Example YAML block:

    judges:
      llm: {model: local/qwen2.5-0.5b-instruct, max_tokens: 384}
      enabled: [correctness, faithfulness, answer_relevance, context_relevance, rubric, similarity]
      use_logprobs: true
      correctness: {threshold: 4.0, prompt_family: prometheus}
      faithfulness: {max_statements: 8, max_context_tokens: 1500}
      custom:
        - {name: conciseness, criteria: ..., rubric: {1: ..., 2: ..., 3: ..., 4: ..., 5: ...}, threshold: 4}

    >>> config = JudgesConfig.model_validate(yaml_block["judges"])  # doctest: +SKIP
    >>> judges = build_judges(config, LLMClient(config.llm))  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragwatch.judges.base import FewShotExample, PromptFamily
from ragwatch.judges.correctness import CorrectnessJudge
from ragwatch.judges.custom import CustomRubric, CustomRubricJudge
from ragwatch.judges.faithfulness import FaithfulnessJudge
from ragwatch.judges.perplexity import PerplexityJudge
from ragwatch.judges.relevance import AnswerRelevanceJudge, ContextRelevanceJudge
from ragwatch.judges.rubric import RubricJudge
from ragwatch.judges.similarity import SimilarityJudge
from ragwatch.llm.types import LLMSettings

BUILTIN = (
    "correctness",
    "faithfulness",
    "answer_relevance",
    "context_relevance",
    "rubric",
    "similarity",
    "perplexity",
)
DEFAULT_ENABLED = [
    "correctness",
    "faithfulness",
    "answer_relevance",
    "context_relevance",
    "rubric",
    "similarity",
]


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid")

    few_shot: list[FewShotExample] = Field(default_factory=list)


class LikertOptions(_Options):
    threshold: float | None = Field(default=4.0, ge=1, le=5)
    prompt_family: PromptFamily = "json"


class RubricOptions(_Options):
    prompt_family: PromptFamily = "json"


class FaithfulnessOptions(_Options):
    max_statements: int = Field(default=8, ge=1, le=50)
    max_context_tokens: int = Field(default=1500, ge=50)


class SimilarityOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    threshold: float | None = Field(default=None, ge=-1, le=1)


class JudgesConfig(BaseModel):
    """Which judges run, with which judge LLM and options."""

    model_config = ConfigDict(extra="forbid")

    llm: LLMSettings = Field(default_factory=LLMSettings)
    enabled: list[str] = Field(default_factory=lambda: list(DEFAULT_ENABLED))
    use_logprobs: bool = False
    correctness: LikertOptions = Field(default_factory=LikertOptions)
    answer_relevance: LikertOptions = Field(default_factory=LikertOptions)
    context_relevance: _Options = Field(default_factory=_Options)
    faithfulness: FaithfulnessOptions = Field(default_factory=FaithfulnessOptions)
    rubric: RubricOptions = Field(default_factory=RubricOptions)
    similarity: SimilarityOptions = Field(default_factory=SimilarityOptions)
    custom: list[CustomRubric] = Field(default_factory=list)

    @model_validator(mode="after")
    def _known_names(self) -> JudgesConfig:
        custom = [c.name for c in self.custom]
        if clash := sorted(set(custom) & set(BUILTIN)):
            raise ValueError(f"custom judge names {clash} clash with built-in judges; rename them")
        if dupes := sorted({n for n in custom if custom.count(n) > 1}):
            raise ValueError(f"duplicate custom judge names {dupes}")
        if unknown := [n for n in self.enabled if n not in BUILTIN and n not in custom]:
            raise ValueError(
                f"enabled lists unknown judge(s) {unknown}; built-in: {list(BUILTIN)}, custom: {custom}"
            )
        return self


def build_judges(
    config: JudgesConfig, llm: Any, embedder: Any = None, generator_llm: Any = None
) -> list[Any]:
    """The enabled judges, in `config.enabled` order (custom judges run only when listed there).

    `llm` is the judge `LLMClient`; `embedder` serves similarity (default: the packaged local model,
    loaded on first use); `generator_llm` is the system under test's client, for perplexity.
    """
    lp = config.use_logprobs
    custom = {c.name: c for c in config.custom}
    judges: list[Any] = []
    for name in config.enabled:
        if name == "correctness":
            o = config.correctness
            judges.append(
                CorrectnessJudge(
                    llm,
                    threshold=o.threshold if o.threshold is not None else 4.0,
                    prompt_family=o.prompt_family,
                    few_shot=o.few_shot,
                    use_logprobs=lp,
                )
            )
        elif name == "answer_relevance":
            o = config.answer_relevance
            judges.append(
                AnswerRelevanceJudge(
                    llm,
                    threshold=o.threshold,
                    prompt_family=o.prompt_family,
                    few_shot=o.few_shot,
                    use_logprobs=lp,
                )
            )
        elif name == "context_relevance":
            judges.append(
                ContextRelevanceJudge(llm, few_shot=config.context_relevance.few_shot, use_logprobs=lp)
            )
        elif name == "faithfulness":
            f = config.faithfulness
            judges.append(
                FaithfulnessJudge(
                    llm,
                    max_statements=f.max_statements,
                    max_context_tokens=f.max_context_tokens,
                    few_shot=f.few_shot,
                    use_logprobs=lp,
                )
            )
        elif name == "rubric":
            judges.append(
                RubricJudge(
                    llm,
                    prompt_family=config.rubric.prompt_family,
                    few_shot=config.rubric.few_shot,
                    use_logprobs=lp,
                )
            )
        elif name == "similarity":
            judges.append(SimilarityJudge(embedder, threshold=config.similarity.threshold))
        elif name == "perplexity":
            judges.append(PerplexityJudge(generator_llm))
        else:
            judges.append(CustomRubricJudge(custom[name], llm, use_logprobs=lp))
    return judges
