"""Custom rubric judges defined in YAML: a criterion, what each score 1..5 means, a pass mark.

Example YAML (a list, or a mapping with a `custom:` list):

    - name: conciseness
      criteria: Is the answer as short as it can be while still answering the question?
      rubric:
        1: Rambling; most of the text is not needed.
        2: Long-winded.
        3: Some unnecessary text.
        4: Concise, a little padding.
        5: As short as possible, nothing missing.
      threshold: 4
      needs_reference: false
      needs_contexts: false
      prompt_family: json        # or prometheus
      few_shot:
        - input: {question: "What is ZenML?", answer: An MLOps framework.}
          output: {reasoning: Short and complete., score: 5}

    >>> rubrics = load_custom_rubrics("configs/custom_rubrics.yaml")  # doctest: +SKIP
    >>> judges = [CustomRubricJudge(r, llm) for r in rubrics]  # doctest: +SKIP
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ragwatch.judges.base import FewShotExample, PromptFamily
from ragwatch.judges.likert import Criterion, LikertJudge

PROMPT_VERSION = "custom-rubric-v1"
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


class CustomRubric(BaseModel):
    """One custom 1-5 judge as written in YAML."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    name: str
    """The metric's name (list it in `judges.enabled`)."""
    criteria: str
    """What the judge assesses, in one or two sentences."""
    rubric: dict[int, str]
    """Score 1..5 -> what that score means."""
    threshold: float | None = Field(default=None, ge=1, le=5)
    """Scores at or above it pass (null: no pass/fail reading)."""
    needs_reference: bool = False
    """Show the judge the reference answer."""
    needs_contexts: bool = False
    """Show the judge the retrieved contexts."""
    higher_is_better: bool = True
    """Direction of the score for the gate."""
    prompt_family: PromptFamily = "json"
    """Prompt style: json (reasoning + score) or prometheus (feedback + score)."""
    few_shot: list[FewShotExample] = Field(default_factory=list)
    """Worked examples shown before each item."""

    @field_validator("name")
    @classmethod
    def _metric_name(cls, name: str) -> str:
        if not _NAME.match(name):
            raise ValueError(
                f"custom judge name {name!r} must be lower_snake_case (a-z, 0-9, _), e.g. 'conciseness'"
            )
        return name

    @field_validator("rubric")
    @classmethod
    def _five_levels(cls, rubric: dict[int, str]) -> dict[int, str]:
        return Criterion._five_levels(rubric)  # the one rule for every 1-5 rubric

    def criterion(self) -> Criterion:
        return Criterion(
            name=self.name,
            description=self.criteria,
            rubric=self.rubric,
            needs_reference=self.needs_reference,
            needs_contexts=self.needs_contexts,
            higher_is_better=self.higher_is_better,
        )


def parse_custom_rubrics(data: Any, source: str = "custom rubrics") -> list[CustomRubric]:
    """Validate already-loaded YAML data (a list, or a mapping with a `custom` list)."""
    if isinstance(data, dict) and "custom" in data:
        data = data["custom"]
    if not isinstance(data, list):
        raise ValueError(f"{source}: expected a list of rubrics (or a mapping with a 'custom:' list)")
    rubrics = []
    for k, entry in enumerate(data):
        try:
            rubrics.append(CustomRubric.model_validate(entry))
        except ValidationError as exc:
            raise ValueError(f"{source}: rubric #{k + 1} is invalid:\n{exc}") from exc
    names = [r.name for r in rubrics]
    if dupes := sorted({n for n in names if names.count(n) > 1}):
        raise ValueError(f"{source}: duplicate custom judge names {dupes}; each needs a unique name")
    return rubrics


def load_custom_rubrics(path: str | Path) -> list[CustomRubric]:
    """Read custom rubrics from a YAML file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"custom rubric file {path} does not exist")
    return parse_custom_rubrics(yaml.safe_load(path.read_text(encoding="utf-8")), source=str(path))


class CustomRubricJudge(LikertJudge):
    """A `LikertJudge` built from a `CustomRubric`; the metric is named after the rubric."""

    def __init__(self, rubric: CustomRubric, llm: Any, *, model: str | None = None, use_logprobs: bool = False) -> None:
        super().__init__(
            rubric.name,
            rubric.criterion(),
            llm,
            model=model,
            threshold=rubric.threshold,
            prompt_family=rubric.prompt_family,
            few_shot=rubric.few_shot,
            use_logprobs=use_logprobs,
            prompt_version=PROMPT_VERSION,
        )
        self.rubric = rubric
