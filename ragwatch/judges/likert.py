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
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ragwatch.judges import prometheus
from ragwatch.judges.base import (
    DATA_RULE,
    LIKERT,
    FewShotExample,
    PromptFamily,
    answer_error,
    build_result,
    check_aligned,
    fence,
    fence_contexts,
    generation_error,
    logprob_overrides,
    model_name,
    to_json,
    usage_of,
)
from ragwatch.judges.weights import likert_expectation
from ragwatch.llm.types import Generation
from ragwatch.results import ItemScore, MetricResult
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


class LikertVerdict(BaseModel):
    """The JSON reply: reasoning first (so the score follows from it), then the score."""

    reasoning: str = Field(max_length=REASONING_CHARS)
    score: Literal[1, 2, 3, 4, 5]


def precheck(sample: EvalSample, answer: RagAnswer, criterion: Criterion) -> str | None:
    """Why this item cannot be judged for `criterion`, or None."""
    if (err := answer_error(answer)) is not None:
        return err
    if criterion.needs_reference and not (sample.reference_answer or "").strip():
        return "no reference answer"
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


class LikertJudge:
    """A 1-5 judge for one criterion; `passed` is score >= threshold when a threshold is set."""

    def __init__(
        self,
        name: str,
        criterion: Criterion,
        llm: Any,
        *,
        threshold: float | None = None,
        prompt_family: PromptFamily = "json",
        few_shot: Sequence[FewShotExample | dict[str, Any]] = (),
        use_logprobs: bool = False,
        prompt_version: str = PROMPT_VERSION,
    ) -> None:
        if prompt_family not in ("json", "prometheus"):
            raise ValueError(f"prompt_family must be 'json' or 'prometheus', not {prompt_family!r}")
        self.name = name
        self.criterion = criterion
        self.llm = llm
        self.threshold = threshold
        self.prompt_family = prompt_family
        self.use_logprobs = use_logprobs
        self.prompt_version = prompt_version if prompt_family == "json" else prometheus.PROMPT_VERSION
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
    def judge_messages(
        self, prompts: list[list[dict[str, str]]]
    ) -> tuple[list[tuple[str, int, float | None] | str], list[Generation]]:
        """Outcome per prompt, (reasoning, score, weighted score) or a failure reason; and all calls."""
        overrides = {**logprob_overrides(self.use_logprobs), "system": self.system_prompt()}
        if self.prompt_family == "json":
            gens = self.llm.generate_many(prompts, schema=LikertVerdict, **overrides) if prompts else []
            outcomes: list[tuple[str, int, float | None] | str] = []
            for gen in gens:
                if not gen.ok or gen.parsed is None:
                    outcomes.append(generation_error(gen))
                else:
                    weighted = likert_expectation(gen, json_key="score")
                    outcomes.append((gen.parsed.reasoning, int(gen.parsed.score), weighted))
            return outcomes, gens
        return self._judge_prometheus(prompts, overrides)

    def _judge_prometheus(
        self, prompts: list[list[dict[str, str]]], overrides: dict[str, Any]
    ) -> tuple[list[tuple[str, int, float | None] | str], list[Generation]]:
        gens = self.llm.generate_many(prompts, **overrides) if prompts else []
        all_gens = list(gens)
        final: list[Generation] = list(gens)
        # One repair round for replies without "[RESULT] n": show the reply and ask for the format.
        retry = [i for i, g in enumerate(gens) if g.ok and prometheus.parse_prometheus(g.text) is None]
        if retry:
            repair_prompts = [
                [
                    *prompts[i],
                    {"role": "assistant", "content": gens[i].text},
                    {"role": "user", "content": prometheus.REPAIR},
                ]
                for i in retry
            ]
            repaired = self.llm.generate_many(repair_prompts, **overrides)
            all_gens.extend(repaired)
            for i, gen in zip(retry, repaired, strict=True):
                final[i] = gen
        outcomes: list[tuple[str, int, float | None] | str] = []
        for first, gen in zip(gens, final, strict=True):
            if not gen.ok:
                outcomes.append(generation_error(gen))
                continue
            parsed = prometheus.parse_prometheus(gen.text)
            if parsed is None:
                excerpt = (first.text or "")[:160].replace("\n", " ")
                outcomes.append(
                    f"judge reply has no '[RESULT] n' (n in 1..5), even after a repair request: {excerpt!r}"
                )
            else:
                outcomes.append((parsed[0], parsed[1], likert_expectation(gen)))
        return outcomes, all_gens

    def item(self, item_id: str, outcome: tuple[str, int, float | None] | str, **extra: Any) -> ItemScore:
        """An `ItemScore` from one outcome."""
        if isinstance(outcome, str):
            return ItemScore(item_id=item_id, error=outcome)
        reasoning, score, weighted = outcome
        details: dict[str, Any] = {"reason": reasoning, "score": score, **extra}
        if weighted is not None:
            details["weighted_score"] = weighted
        passed = None if self.threshold is None else score >= self.threshold
        return ItemScore(item_id=item_id, score=float(score), passed=passed, details=details)

    def evaluate(self, samples: list[EvalSample], answers: list[RagAnswer]) -> MetricResult:
        check_aligned(samples, answers)
        errors = [precheck(s, a, self.criterion) for s, a in zip(samples, answers, strict=True)]
        pending = [i for i, err in enumerate(errors) if err is None]
        outcomes, gens = self.judge_messages([self.messages(samples[i], answers[i]) for i in pending])
        by_index = dict(zip(pending, outcomes, strict=True))
        items = [
            self.item(s.id, by_index[i] if i in by_index else errors[i])  # type: ignore[arg-type]
            for i, s in enumerate(samples)
        ]
        return build_result(
            self.name,
            items,
            usage_of(gens, model_name(self.llm)),
            threshold=self.threshold,
            extra={
                "prompt_version": self.prompt_version,
                "prompt_family": self.prompt_family,
                "higher_is_better": self.criterion.higher_is_better,
                "scale": [1, 5],
                "judge_model": model_name(self.llm),
            },
        )
