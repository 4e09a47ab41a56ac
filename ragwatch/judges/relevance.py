"""Relevance: context relevance (each retrieved passage vs the question) and answer relevance (1-5).

Context relevance asks, per retrieved passage, "does this passage help answer the question?"
(yes/no with a reason); the item score is the fraction of relevant passages, and with logprobs the
weighted score is the mean P(yes). Answer relevance grades 1-5 whether the answer addresses the
question (it does not judge correctness).

Example:
    >>> ContextRelevanceJudge(llm).evaluate(samples, answers).score  # doctest: +SKIP
    >>> AnswerRelevanceJudge(llm, threshold=4.0).evaluate(samples, answers).score  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from ragwatch.judges.base import (
    DATA_RULE,
    FewShotExample,
    answer_error,
    fence,
    generation_error,
    to_json,
)
from ragwatch.judges.engine import LLMJudge, Plan, Score, mean
from ragwatch.judges.likert import Criterion, DeclaredLikertJudge, LikertOptions
from ragwatch.judges.registry import JudgeDeps, JudgeOptions, register_judge
from ragwatch.llm.logprobs import yes_probability_at
from ragwatch.results import MetricInfo
from ragwatch.types import EvalSample, RagAnswer

PROMPT_VERSION = "context-relevance-v1"
ANSWER_RELEVANCE_PROMPT_VERSION = "answer-relevance-v1"
REASON_CHARS = 400

SYSTEM = (
    "You are a strict evaluation judge. Decide whether a retrieved CONTEXT passage is relevant to a "
    "QUESTION: relevant means it contains information that helps answer the question. A passage on the "
    "same topic that does not help answer this question is not relevant.\n"
    f"{DATA_RULE}\n"
    'First give a one-sentence reason, then the verdict. Reply with JSON only: {"reason": "<why>", '
    '"verdict": "yes" or "no"}'
)


class FewShotOptions(JudgeOptions):
    few_shot: list[FewShotExample] = Field(default_factory=list)
    """Worked examples shown before each item."""


class RelevanceVerdict(BaseModel):
    reason: str = Field(max_length=REASON_CHARS)
    verdict: Literal["yes", "no"]


def context_prompt(question: str, context: str) -> str:
    return (
        f"{fence('QUESTION', question)}\n{fence('CONTEXT', context)}\n"
        "Is the CONTEXT relevant to the QUESTION? Reply with the JSON object only."
    )


class ContextRelevanceJudge(LLMJudge):
    """Fraction of retrieved contexts relevant to the question; no contexts -> failed item."""

    def __init__(
        self,
        llm: Any,
        *,
        model: str | None = None,
        few_shot: Sequence[FewShotExample | dict[str, Any]] = (),
        use_logprobs: bool = False,
        name: str = "context_relevance",
    ) -> None:
        self.metrics = {name: MetricInfo(scale=(0.0, 1.0), prompt_version=PROMPT_VERSION,
                                         description="fraction of retrieved contexts relevant to the question")}
        self.llm = llm
        self.model = model
        self.use_logprobs = use_logprobs
        self.few_shot_messages: list[dict[str, str]] = []
        for raw in few_shot:
            ex = FewShotExample.model_validate(raw)
            if "question" not in ex.input or "context" not in ex.input:
                raise ValueError("context_relevance few-shot input needs keys 'question' and 'context'")
            verdict = RelevanceVerdict.model_validate(ex.output)
            self.few_shot_messages += [
                {
                    "role": "user",
                    "content": context_prompt(str(ex.input["question"]), str(ex.input["context"])),
                },
                {"role": "assistant", "content": to_json(verdict.model_dump())},
            ]

    def plan(self, sample: EvalSample, answer: RagAnswer) -> Plan:
        """One call per retrieved passage (one stage) -> fraction relevant, mean P(yes) weighted."""
        if (err := answer_error(answer)) is not None:
            return Score(error=err)
        if not answer.contexts:
            return Score(error="no retrieved contexts")
        gens = yield [
            self.call(
                [*self.few_shot_messages, {"role": "user", "content": context_prompt(sample.question, c.text)}],
                RelevanceVerdict,
                SYSTEM,
            )
            for c in answer.contexts
        ]
        for j, g in enumerate(gens):
            if not g.ok or g.parsed is None:
                return Score(error=f"context {j + 1}: {generation_error(g)}")
        verdicts = [g.parsed.verdict == "yes" for g in gens]
        details: dict[str, Any] = {
            "context_verdicts": [g.parsed.verdict for g in gens],
            "reasons": [g.parsed.reason for g in gens],
            "reason": f"{sum(verdicts)} of {len(verdicts)} retrieved contexts relevant",
        }
        probs = [yes_probability_at(g) for g in gens]
        if all(p is not None for p in probs):
            details["context_yes_probabilities"] = probs
            details["weighted_score"] = mean(probs)  # type: ignore[arg-type]
        return Score(score=sum(verdicts) / len(verdicts), details=details)


@register_judge("context_relevance", options=FewShotOptions)  # opt-in
def build_context_relevance(options: FewShotOptions, deps: JudgeDeps) -> ContextRelevanceJudge:
    return ContextRelevanceJudge(deps.llm, model=deps.model, few_shot=options.few_shot,
                                 use_logprobs=deps.use_logprobs)


ANSWER_RELEVANCE = Criterion(
    name="answer relevance",
    description=(
        "Does the ANSWER address the QUESTION that was asked? Judge only whether it responds to the "
        "question, not whether its facts are correct."
    ),
    rubric={
        1: "The answer does not address the question at all (off-topic, or empty).",
        2: "The answer is mostly off-topic; it only touches the subject of the question.",
        3: "The answer partly addresses the question but misses important parts or wanders off.",
        4: "The answer addresses the question, with minor gaps or digressions.",
        5: "The answer fully and directly addresses the question.",
    },
)


class AnswerRelevanceJudge(DeclaredLikertJudge):
    """1-5: does the answer address the question."""

    CRITERION = ANSWER_RELEVANCE
    METRIC = "answer_relevance"
    PROMPT_VERSION = ANSWER_RELEVANCE_PROMPT_VERSION


@register_judge("answer_relevance", options=LikertOptions)  # opt-in
def build_answer_relevance(options: LikertOptions, deps: JudgeDeps) -> AnswerRelevanceJudge:
    return AnswerRelevanceJudge.from_options(options, deps)
