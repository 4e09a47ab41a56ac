"""Correctness: a 1-5 grade of the answer against the reference answer, with reasoning and a pass mark.

After LlamaIndex's CorrectnessEvaluator (reasoning first, then the score; passing threshold 4.0).
Samples without a reference answer are skipped items ("no reference answer", `ItemScore.skipped`), never guessed.

Example:
    >>> judge = CorrectnessJudge(LLMClient(LLMSettings()))  # doctest: +SKIP
    >>> result = judge.evaluate(samples, answers)  # doctest: +SKIP
    >>> result.score, result.details["pass_rate"], result.info.threshold  # doctest: +SKIP
"""

from __future__ import annotations

from ragwatch.judges.likert import Criterion, DeclaredLikertJudge, LikertOptions
from ragwatch.judges.registry import JudgeDeps, register_judge

PROMPT_VERSION = "correctness-v1"

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


class CorrectnessJudge(DeclaredLikertJudge):
    """1-5 correctness against `EvalSample.reference_answer`; `passed` when score >= threshold."""

    CRITERION = CRITERION
    METRIC = "correctness"
    PROMPT_VERSION = PROMPT_VERSION


@register_judge("correctness", options=LikertOptions)  # opt-in: near chance at the local size
def build(options: LikertOptions, deps: JudgeDeps) -> CorrectnessJudge:
    return CorrectnessJudge.from_options(options, deps)
