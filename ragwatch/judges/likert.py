"""The engine of 1-5 judges: a `Criterion` (what is graded, with a rubric per score) and `LikertJudge`.

Correctness, answer relevance and custom YAML rubrics are `LikertJudge`s with their own criterion.
Two prompt families: "json" (reasoning then a `Literal[1..5]` score, grammar-constrained) and
"prometheus" (free text "Feedback: ... [RESULT] n", parsed by regex, one repair round).

Example:
    >>> crit = Criterion(name="clarity", description="Is the answer clear?",
    ...                  rubric={1: "unreadable", 2: "hard", 3: "ok", 4: "clear", 5: "very clear"})
    >>> judge = LikertJudge("clarity", crit, llm, threshold=4.0)  # doctest: +SKIP
    >>> judge.evaluate(samples, answers).score  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ragwatch.judges import prometheus
from ragwatch.judges.base import (
    DATA_RULE,
    LIKERT,
    FewShotExample,
    PromptFamily,
    answer_error,
    checked_prompt_family,
    fence,
    fence_contexts,
    generation_error,
    to_json,
)
from ragwatch.judges.engine import LLMJudge, Plan, Score
from ragwatch.judges.registry import JudgeDeps, JudgeOptions
from ragwatch.llm.logprobs import likert_expectation
from ragwatch.results import NO_REFERENCE, MetricInfo
from ragwatch.types import EvalSample, RagAnswer, RetrievedContext

PROMPT_VERSION = "likert-json-v1"
REASONING_CHARS = 800


class Criterion(BaseModel):
    """What a Likert judge grades: a description and what each score 1..5 means."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    rubric: dict[int, str]
    needs_reference: bool = False
    needs_contexts: bool = False
    higher_is_better: bool = True

    @field_validator("rubric")
    @classmethod
    def _five_levels(cls, rubric: dict[int, str]) -> dict[int, str]:
        if set(rubric) != set(LIKERT):
            raise ValueError(f"rubric needs exactly the scores 1, 2, 3, 4, 5 (got {sorted(rubric)})")
        return rubric

    def rubric_text(self) -> str:
        return "\n".join(f"Score {k}: {self.rubric[k]}" for k in LIKERT)


class LikertOptions(JudgeOptions):
    """The YAML block of a 1-5 judge; `threshold: null` means no pass/fail reading."""

    threshold: float | None = Field(default=4.0, ge=1, le=5)
    """Scores at or above it pass (null: no pass/fail reading)."""
    prompt_family: PromptFamily = "json"
    """Prompt style: json (reasoning + score) or prometheus (feedback + score)."""
    few_shot: list[FewShotExample] = Field(default_factory=list)
    """Worked examples shown before each item."""


class LikertVerdict(BaseModel):
    """The JSON reply: reasoning first (so the score follows from it), then the score."""

    reasoning: str = Field(max_length=REASONING_CHARS)
    score: Literal[1, 2, 3, 4, 5]


def precheck(sample: EvalSample, answer: RagAnswer, criterion: Criterion) -> str | None:
    """Why this item cannot be judged for `criterion`, or None."""
    if (err := answer_error(answer)) is not None:
        return err
    if criterion.needs_reference and not (sample.reference_answer or "").strip():
        return NO_REFERENCE
    if criterion.needs_contexts and not answer.contexts:
        return "no retrieved contexts"
    return None


def example_pair(example: FewShotExample) -> tuple[EvalSample, RagAnswer]:
    """A few-shot example's input as the (sample, answer) pair the prompt renderer takes."""
    data = example.input
    missing = [key for key in ("question", "answer") if key not in data]
    if missing:
        raise ValueError(f"few-shot example input needs keys {missing}; it has {sorted(data)}")
    sample = EvalSample(
        id="example", question=str(data["question"]), reference_answer=data.get("reference_answer")
    )
    contexts = [RetrievedContext(text=str(c)) for c in data.get("contexts", [])]
    return sample, RagAnswer(question=sample.question, answer=str(data["answer"]), contexts=contexts)


class LikertJudge(LLMJudge):
    """A 1-5 judge for one criterion; `passed` is score >= threshold when a threshold is set."""

    def __init__(
        self,
        name: str,
        criterion: Criterion,
        llm: Any,
        *,
        model: str | None = None,
        threshold: float | None = None,
        prompt_family: PromptFamily = "json",
        few_shot: Sequence[FewShotExample | dict[str, Any]] = (),
        use_logprobs: bool = False,
        prompt_version: str = PROMPT_VERSION,
    ) -> None:
        self.criterion = criterion
        self.llm = llm
        self.model = model
        self.threshold = threshold
        self.prompt_family = checked_prompt_family(prompt_family)
        self.use_logprobs = use_logprobs
        self.prompt_version = prompt_version if prompt_family == "json" else prometheus.PROMPT_VERSION
        self.metrics = {
            name: MetricInfo(
                direction="higher" if criterion.higher_is_better else "lower",
                scale=(1.0, 5.0),
                threshold=threshold,
                prompt_version=self.prompt_version,
                description=criterion.description,
            )
        }
        self.few_shot = [FewShotExample.model_validate(ex) for ex in few_shot]
        self._few_shot_messages = [m for ex in self.few_shot for m in self._example_messages(ex)]

    # --- prompts -------------------------------------------------------------------------------
    def _system(self) -> str:
        c = self.criterion
        return (
            f"You are a strict, fair evaluation judge. You grade an ANSWER to a QUESTION for one "
            f"criterion, {c.name}: {c.description}\n{DATA_RULE}\n\nScore rubric:\n{c.rubric_text()}\n\n"
            "First write your reasoning in a few sentences, then give the score. Reply with JSON only: "
            '{"reasoning": "<why>", "score": <integer 1-5>}'
        )

    def _user(self, sample: EvalSample, answer: RagAnswer) -> str:
        c = self.criterion
        parts = [fence("QUESTION", sample.question)]
        if c.needs_reference:
            parts.append(fence("REFERENCE ANSWER", sample.reference_answer or ""))
        if c.needs_contexts:
            parts.append(fence_contexts([ctx.text for ctx in answer.contexts]))
        parts.append(fence("ANSWER", answer.answer))
        parts.append(f"Grade the ANSWER for {c.name} using the rubric. Reply with the JSON object only.")
        return "\n".join(parts)

    def _prometheus_user(self, sample: EvalSample, answer: RagAnswer) -> str:
        c = self.criterion
        return prometheus.render(
            question=sample.question,
            answer=answer.answer,
            criterion=f"{c.name}: {c.description}",
            rubric=c.rubric,
            reference=sample.reference_answer if c.needs_reference else None,
            contexts=[ctx.text for ctx in answer.contexts] if c.needs_contexts else None,
        )

    def _example_messages(self, example: FewShotExample) -> list[dict[str, str]]:
        sample, answer = example_pair(example)
        if self.criterion.needs_reference and not sample.reference_answer:
            raise ValueError(f"few-shot examples of judge {self.name!r} need input.reference_answer")
        out = dict(example.output)
        reasoning = out.get("reasoning", out.get("feedback", ""))
        try:
            verdict = LikertVerdict(reasoning=reasoning, score=out.get("score"))
        except ValidationError as exc:
            raise ValueError(f"few-shot example output of judge {self.name!r} is invalid: {exc}") from exc
        if self.prompt_family == "json":
            return [
                {"role": "user", "content": self._user(sample, answer)},
                {"role": "assistant", "content": to_json(verdict.model_dump())},
            ]
        return [
            {"role": "user", "content": self._prometheus_user(sample, answer)},
            {"role": "assistant", "content": prometheus.format_reply(verdict.reasoning, verdict.score)},
        ]

    def system_prompt(self) -> str:
        return self._system() if self.prompt_family == "json" else prometheus.SYSTEM

    def messages(self, sample: EvalSample, answer: RagAnswer) -> list[dict[str, str]]:
        """The chat messages for one item: few-shot pairs, then the item (the system prompt goes apart)."""
        render = self._user if self.prompt_family == "json" else self._prometheus_user
        user = render(sample, answer)
        return [*self._few_shot_messages, {"role": "user", "content": user}]

    # --- judging -------------------------------------------------------------------------------
    def plan(self, sample: EvalSample, answer: RagAnswer) -> Plan:
        """One call (JSON) or one call plus one repair round (Prometheus) -> a 1-5 score."""
        if (err := precheck(sample, answer, self.criterion)) is not None:
            return Score(error=err, skipped=err == NO_REFERENCE)  # asked without a reference: not a failure
        messages = self.messages(sample, answer)
        if self.prompt_family == "json":
            (gen,) = yield [self.call(messages, LikertVerdict, self.system_prompt())]
            if not gen.ok or gen.parsed is None:
                return Score(error=generation_error(gen))
            weighted = likert_expectation(gen, json_key="score")
            return self.score(gen.parsed.reasoning, int(gen.parsed.score), weighted)
        (first,) = yield [self.call(messages, None, self.system_prompt())]
        gen = first
        if first.ok and prometheus.parse_prometheus(first.text) is None:
            # one repair round for a reply without "[RESULT] n": show the reply and ask for the format
            repair = [*messages, {"role": "assistant", "content": first.text},
                      {"role": "user", "content": prometheus.REPAIR}]
            (gen,) = yield [self.call(repair, None, self.system_prompt())]
        if not gen.ok:
            return Score(error=generation_error(gen))
        parsed = prometheus.parse_prometheus(gen.text)
        if parsed is None:
            excerpt = (first.text or "")[:160].replace("\n", " ")
            return Score(
                error=f"judge reply has no '[RESULT] n' (n in 1..5), even after a repair request: {excerpt!r}"
            )
        return self.score(parsed[0], parsed[1], likert_expectation(gen))

    @staticmethod
    def score(reasoning: str, score: int, weighted: float | None, **extra: Any) -> Score:
        details: dict[str, Any] = {"reason": reasoning, "score": score, **extra}
        if weighted is not None:
            details["weighted_score"] = weighted
        return Score(score=float(score), details=details)

    def details(self, metric: str) -> dict[str, Any]:
        return {**super().details(metric), "prompt_family": self.prompt_family}


class DeclaredLikertJudge(LikertJudge):
    """A built-in 1-5 judge declared by class attributes: its `CRITERION`, metric name (`METRIC`) and
    `PROMPT_VERSION`. The one constructor and YAML builder of correctness and answer relevance.

    Example:
        >>> class Clarity(DeclaredLikertJudge):
        ...     CRITERION, METRIC, PROMPT_VERSION = crit, "clarity", "clarity-v1"
        >>> Clarity(llm, threshold=4.0).evaluate(samples, answers).score  # doctest: +SKIP
    """

    CRITERION: ClassVar[Criterion]
    METRIC: ClassVar[str]
    PROMPT_VERSION: ClassVar[str]

    def __init__(
        self,
        llm: Any,
        *,
        model: str | None = None,
        threshold: float | None = 4.0,
        prompt_family: PromptFamily = "json",
        few_shot: Sequence[FewShotExample | dict[str, Any]] = (),
        use_logprobs: bool = False,
        name: str | None = None,
    ) -> None:
        super().__init__(name or self.METRIC, self.CRITERION, llm, model=model, threshold=threshold,
                         prompt_family=prompt_family, few_shot=few_shot, use_logprobs=use_logprobs,
                         prompt_version=self.PROMPT_VERSION)

    @classmethod
    def from_options(cls, options: LikertOptions, deps: JudgeDeps) -> Self:
        """The judge as its YAML block configures it (`threshold: null` is honoured: no pass/fail)."""
        return cls(deps.llm, model=deps.model, threshold=options.threshold, prompt_family=options.prompt_family,
                   few_shot=options.few_shot, use_logprobs=deps.use_logprobs)

