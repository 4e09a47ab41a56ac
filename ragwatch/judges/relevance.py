"""Relevance: context relevance (each retrieved passage vs the question) and answer relevance (1-5).

Context relevance asks, per retrieved passage, "does this passage help answer the question?"
(yes/no with a reason); the item score is the fraction of relevant passages, and with logprobs the
weighted score is the mean P(yes). Answer relevance asks whether the answer addresses the question
(not whether it is correct): the item score is P(yes) on the 1-5 scale, 1 + 4 P(yes) (5 or 1 from the
verdict alone without logprobs), and an item passes at the cut-off measured on labelled answers
for the judge model and prompt (`ANSWER_RELEVANCE_CALIBRATIONS`, with the agreement the metric
carries), else at P(yes) 0.5. Its Prometheus family grades the 1-5 rubric instead.

Example:
    >>> ContextRelevanceJudge(llm).evaluate(samples, answers).score  # doctest: +SKIP
    >>> AnswerRelevanceJudge(llm, model="local/qwen2.5-coder-1.5b-instruct", use_logprobs=True).evaluate(
    ...     samples, answers).score  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ragwatch.judges.base import (
    DATA_RULE,
    FewShotExample,
    PromptFamily,
    answer_error,
    fence,
    generation_error,
    to_json,
)
from ragwatch.judges.engine import LLMJudge, Plan, Score, mean
from ragwatch.judges.likert import Criterion, DeclaredLikertJudge, LikertOptions, example_pair, precheck
from ragwatch.judges.registry import JudgeDeps, JudgeOptions, register_judge
from ragwatch.llm.logprobs import yes_probability_at
from ragwatch.results import JudgeAgreement, MetricInfo
from ragwatch.types import EvalSample, RagAnswer

PROMPT_VERSION = "context-relevance-v1"
ANSWER_RELEVANCE_PROMPT_VERSION = "answer-relevance-v2"
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

# The json family asks one yes/no question, the readers' own (data/judge_dev/answer_relevance/LABELLING.md), and
# reads P(yes) at the verdict; the Prometheus family keeps the 1-5 rubric.
ANSWER_RELEVANCE_SYSTEM = (
    "You are an evaluation judge. Decide whether an ANSWER addresses the QUESTION that was asked. Yes if it "
    "attempts to answer this question, on topic, in a way that would help the person who asked, even if it "
    "might be wrong or incomplete. No if it answers a different question, is off topic, only restates the "
    "question, is empty, garbled, a refusal or \"I don't know\", or mostly filler without an answer to the "
    "question. Do not judge whether its facts are correct.\n"
    f"{DATA_RULE}\n"
    'Reply with JSON only: {"verdict": "yes" or "no"}'
)
# the uncalibrated cut-off on the 1-5 score: P(yes) 0.5
UNCALIBRATED_THRESHOLD = 3.0


class AnswerVerdict(BaseModel):
    verdict: Literal["yes", "no"]


def relevance_score(p_yes: float) -> float:
    """P(relevant) on the metric's 1-5 scale (1: surely not, 5: surely relevant)."""
    return 1.0 + 4.0 * p_yes


class RelevanceCalibration(BaseModel):
    """The cut-off on P(yes) of one judge model and prompt version, chosen on labelled answers, and the
    agreement of its verdicts with the labels held out by system."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str  # the packaged model's name (without `local/`) or a litellm model string
    prompt_version: str
    cutoff: float  # on P(yes)
    agreement: JudgeAgreement

    @property
    def threshold(self) -> float:
        return relevance_score(self.cutoff)


ANSWER_RELEVANCE_CALIBRATIONS: tuple[RelevanceCalibration, ...] = (
    # Measured 2026-11-27 on the first 20 agreed answers of each of three systems (60, 50 relevant) of
    # data/judge_dev/answer_relevance (reference labels: two careful readings): the cut-off of best balanced
    # accuracy on all 60, P(yes) 0.768 (score 4.07); agreement held out by system (the cut-off chosen on the
    # other two systems, pooled; 95% bootstrap over answers). The judge barely ranks these answers (see
    # benchmarks/results/answer_relevance.md): at P(yes) 0.5 it calls every answer relevant (kappa 0).
    # `python benchmarks/answer_relevance.py --limit 20 --out benchmarks/results/answer_relevance.md`
    RelevanceCalibration(
        model="qwen2.5-coder-1.5b-instruct", prompt_version="answer-relevance-v2", cutoff=0.7680,
        agreement=JudgeAgreement(kappa=0.11, kappa_ci=(-0.14, 0.38), balanced_accuracy=0.57,
                                 balanced_accuracy_ci=(0.40, 0.75), n=60,
                                 data="answers of three systems over the ZenML docs sample, each scored at a cut-off "
                                      "chosen without its system",
                                 labels="reference labels: two careful readings by a strong LLM annotator, not "
                                        "human labels")),
)


def answer_relevance_calibration(model: str | None, prompt_version: str) -> RelevanceCalibration | None:
    """The calibration of this judge model (`local/<name>` or `<name>`) and prompt version, else None."""
    if not model:
        return None
    from ragwatch.llm.local import packaged

    spec = packaged(model)
    name = spec.name if spec is not None else model
    return next((c for c in ANSWER_RELEVANCE_CALIBRATIONS if c.model == name and c.prompt_version == prompt_version),
                None)


class AnswerRelevanceOptions(LikertOptions):
    """The YAML block of answer relevance: its cut-off is measured per judge model and prompt."""

    threshold: float | Literal["calibrated"] | None = "calibrated"  # type: ignore[assignment]
    """Scores at or above it pass (calibrated: as measured for the judge model, else 3.0; null: none)."""
    prompt_family: PromptFamily = "json"
    """Prompt style: json (yes/no, scored by P(yes)) or prometheus (feedback + a 1-5 grade)."""

    @field_validator("threshold")
    @classmethod
    def _on_the_scale(cls, value: float | str | None) -> float | str | None:
        if isinstance(value, int | float) and not 1 <= value <= 5:
            raise ValueError(f"threshold is on the 1-5 scale (got {value}); or 'calibrated', or null for none")
        return value


class AnswerRelevanceJudge(DeclaredLikertJudge):
    """Does the answer address the question: P(relevant) on the 1-5 scale (json family), or a 1-5 grade
    (Prometheus family). `threshold="calibrated"`: the cut-off measured for this judge model and prompt
    (with its agreement on the metric), else P(yes) 0.5."""

    CRITERION = ANSWER_RELEVANCE
    METRIC = "answer_relevance"
    PROMPT_VERSION = ANSWER_RELEVANCE_PROMPT_VERSION

    def __init__(
        self,
        llm: Any,
        *,
        model: str | None = None,
        threshold: float | Literal["calibrated"] | None = "calibrated",
        prompt_family: PromptFamily = "json",
        few_shot: Sequence[FewShotExample | dict[str, Any]] = (),
        use_logprobs: bool = False,
        name: str | None = None,
    ) -> None:
        calibration = (answer_relevance_calibration(model, self.PROMPT_VERSION)
                       if use_logprobs and prompt_family == "json" else None)
        if threshold == "calibrated":
            threshold = calibration.threshold if calibration is not None else UNCALIBRATED_THRESHOLD
        elif calibration is not None and threshold != calibration.threshold:
            calibration = None  # its agreement was measured at its own cut-off
        self.calibration = calibration
        super().__init__(llm, model=model, threshold=threshold, prompt_family=prompt_family, few_shot=few_shot,
                         use_logprobs=use_logprobs, name=name)
        metric = next(iter(self.metrics))
        if prompt_family == "json":
            self.metrics[metric] = self.metrics[metric].model_copy(update={
                "description": "P(the answer addresses the question) on the 1-5 scale",
                "agreement": calibration.agreement if calibration is not None else None})

    @classmethod
    def from_options(cls, options: LikertOptions, deps: JudgeDeps) -> Self:
        """The judge as its YAML block configures it (a `LikertOptions` without `threshold`: calibrated)."""
        threshold = options.threshold if "threshold" in options.model_fields_set else "calibrated"
        return cls(deps.llm, model=deps.model, threshold=threshold, prompt_family=options.prompt_family,
                   few_shot=options.few_shot, use_logprobs=deps.use_logprobs)

    def system_prompt(self) -> str:
        return ANSWER_RELEVANCE_SYSTEM if self.prompt_family == "json" else super().system_prompt()

    def _user(self, sample: EvalSample, answer: RagAnswer) -> str:
        return (f"{fence('QUESTION', sample.question)}\n{fence('ANSWER', answer.answer)}\n"
                "Does the ANSWER address the QUESTION? Reply with the JSON object only.")

    def _example_messages(self, example: FewShotExample) -> list[dict[str, str]]:
        if self.prompt_family != "json":
            return super()._example_messages(example)
        sample, answer = example_pair(example)
        try:
            verdict = AnswerVerdict.model_validate({"verdict": example.output.get("verdict")})
        except ValidationError as exc:
            raise ValueError(f"few-shot example output of judge {self.name!r} needs verdict: yes or no "
                             f"(got {example.output})") from exc
        return [{"role": "user", "content": self._user(sample, answer)},
                {"role": "assistant", "content": to_json(verdict.model_dump())}]

    def plan(self, sample: EvalSample, answer: RagAnswer) -> Plan:
        """One call: the verdict, scored by P(yes) when logprobs are read (else 5 or 1)."""
        if self.prompt_family != "json":
            return (yield from super().plan(sample, answer))
        if (err := precheck(sample, answer, self.criterion)) is not None:
            return Score(error=err)
        (gen,) = yield [self.call(self.messages(sample, answer), AnswerVerdict, self.system_prompt())]
        if not gen.ok or gen.parsed is None:
            return Score(error=generation_error(gen))
        p_yes = yes_probability_at(gen)
        yes = gen.parsed.verdict == "yes"
        score = relevance_score(p_yes) if p_yes is not None else relevance_score(float(yes))
        details: dict[str, Any] = {"verdict": gen.parsed.verdict, "score": score,
                                   "reason": (f"P(relevant) {p_yes:.2f}" if p_yes is not None
                                              else f"the judge says {gen.parsed.verdict}")}
        if p_yes is not None:
            details["p_yes"] = p_yes
            details["weighted_score"] = score
        return Score(score=score, details=details)


@register_judge("answer_relevance", options=AnswerRelevanceOptions)  # opt-in
def build_answer_relevance(options: AnswerRelevanceOptions, deps: JudgeDeps) -> AnswerRelevanceJudge:
    return AnswerRelevanceJudge.from_options(options, deps)
