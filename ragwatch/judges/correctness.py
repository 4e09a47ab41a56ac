"""Correctness: a 1-5 grade of the answer against the reference answer, with reasoning and a pass mark.

After LlamaIndex's CorrectnessEvaluator (reasoning first, then the score; passing threshold 4.0).
Samples without a reference answer are failed items ("no reference answer"), never guessed.

Example:
    >>> judge = CorrectnessJudge(LLMClient(LLMSettings()))  # doctest: +SKIP
    >>> result = judge.evaluate(samples, answers)  # doctest: +SKIP
    >>> result.score, result.details["pass_rate"], result.info.threshold  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragwatch.judges.base import FewShotExample, PromptFamily
from ragwatch.judges.likert import Criterion, LikertJudge, LikertOptions
from ragwatch.judges.registry import JudgeDeps, register_judge

PROMPT_VERSION = "correctness-v1"
DEFAULT_THRESHOLD = 4.0

CRITERION = Criterion(
    name="correctness",
    description=(
        "Is the ANSWER correct and complete with respect to the REFERENCE ANSWER? Judge the facts, "
        "not the wording: a paraphrase of the reference is fully correct."
    ),
    rubric={
        1: "The answer is not relevant to the question, or it contradicts the reference answer.",
        2: "The answer is relevant but contains major mistakes or misses most of the reference answer.",
        3: "The answer is partly correct: it has some errors or significant omissions.",
        4: "The answer is correct, with minor omissions or imprecisions.",
        5: "The answer is fully correct and complete, consistent with the reference answer.",
    },
    needs_reference=True,
)


class CorrectnessJudge(LikertJudge):
    """1-5 correctness against `EvalSample.reference_answer`; `passed` when score >= threshold."""

    def __init__(
        self,
        llm: Any,
        *,
        threshold: float | None = DEFAULT_THRESHOLD,
        prompt_family: PromptFamily = "json",
        few_shot: Sequence[FewShotExample | dict[str, Any]] = (),
        use_logprobs: bool = False,
        name: str = "correctness",
    ) -> None:
        super().__init__(
            name,
            CRITERION,
            llm,
            threshold=threshold,
            prompt_family=prompt_family,
            few_shot=few_shot,
            use_logprobs=use_logprobs,
            prompt_version=PROMPT_VERSION,
        )


@register_judge("correctness", options=LikertOptions, default=True)
def build(options: LikertOptions, deps: JudgeDeps) -> CorrectnessJudge:
    return CorrectnessJudge(
        deps.llm,
        threshold=options.threshold,  # None is honoured: no pass/fail reading
        prompt_family=options.prompt_family,
        few_shot=options.few_shot,
        use_logprobs=deps.use_logprobs,
    )
