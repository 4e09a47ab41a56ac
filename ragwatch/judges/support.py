"""Support, one verdict per answer: is the answer supported (by its contexts, or by world knowledge)?

With retrieved contexts, the whole answer is checked as ONE statement by the faithfulness judge's
verifier (`judges.faithfulness.verify.Verifier`: the same prompt, windows and create-and-refine as
`verify_statements`), so there is one way to check a claim against a context. Without contexts
(HaluEval general, TruthfulQA) there is nothing to check against: the judge reads the QUESTION and
the RESPONSE and answers from its own knowledge whether the response is correct and free of
fabricated claims (`SupportVerdict`, verdict first, so P(yes) is read before any reasoning).

Item score 1.0 (supported) or 0.0; `weighted_score` = P(yes) when logprobs are read. The verdict is
P(yes) >= `support_threshold` when a threshold is given and P(yes) was read, else the greedy token
(kept as `greedy_verdict` in the details of the open prompt). The registered `support` judge
uses the judge model's calibrated cut-off (`faithfulness.calibrations.judge_cutoff`, else the fallback),
like faithfulness;
`run.py calibrate` builds it without one, to compare the greedy token with P(yes).

Example:
    >>> result = SupportJudge(llm).evaluate(samples, answers)  # doctest: +SKIP
    >>> result.items[0].details["weighted_score"], result.items[0].details["reason"]  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from ragwatch.judges.base import DATA_RULE, answer_error, fence, generation_error
from ragwatch.judges.engine import LLMJudge, Plan, Score
from ragwatch.judges.faithfulness.calibrations import judge_cutoff
from ragwatch.judges.faithfulness.verify import Verifier
from ragwatch.judges.faithfulness.versions import SUPPORT_PROMPT_VERSION
from ragwatch.judges.registry import JudgeDeps, JudgeOptions, register_judge
from ragwatch.llm.logprobs import yes_probability_at
from ragwatch.results import MetricInfo
from ragwatch.types import EvalSample, RagAnswer

PROMPT_VERSION = SUPPORT_PROMPT_VERSION  # a calibration's key (`faithfulness.versions`)
REASON_CHARS = 120


class SupportVerdict(BaseModel):
    """Verdict first, so P(yes) is read before any reasoning text can sway it."""

    verdict: Literal["yes", "no"]
    reason: str = Field(max_length=REASON_CHARS)


SYSTEM_OPEN = (
    "You detect hallucinations. You read a user's QUESTION and a RESPONSE and decide, using your own "
    "knowledge, whether the RESPONSE is correct and free of fabricated or false claims, and does what the "
    "question asks. Verdict yes: correct and supported. Verdict no: at least one claim is false, "
    "made up, or unsupported, or the response does not do what was asked.\n"
    f"{DATA_RULE}\n"
    'Reply with JSON only: {"verdict": "yes" or "no", "reason": "<one short sentence>"}'
)


def open_prompt(question: str, response: str) -> str:
    return (f"{fence('QUESTION', question)}\n{fence('RESPONSE', response)}\n"
            "Is the RESPONSE supported? Reply with the JSON object only.")


class SupportOptions(JudgeOptions):
    support_threshold: float | None = Field(default=None, ge=0, le=1)
    """P(yes) cut-off of the verdict; null: the judge model's calibrated cut-off, else 0.5."""
    max_context_tokens: int = Field(default=1500, ge=50)
    """Context tokens shown to the judge at most."""
    # greedy: the reply's verdict token decides even with logprobs, so that `calibrate` can compare it
    # with P(yes) (its weighted mode) and choose a cut-off
    verdict: Literal["cutoff", "greedy"] = "cutoff"
    """cutoff: P(yes) against the cut-off decides; greedy: the reply's verdict token decides."""

    @model_validator(mode="after")
    def _one_rule(self) -> SupportOptions:
        if self.verdict == "greedy" and self.support_threshold is not None:
            raise ValueError("support_threshold is the cut-off of verdict: cutoff; with verdict: greedy leave it unset")
        return self


class SupportJudge(LLMJudge):
    """Yes/no: is the answer supported (by the contexts, or by world knowledge when there are none)?"""

    def __init__(
        self,
        llm: Any,
        *,
        model: str | None = None,
        use_logprobs: bool = True,
        support_threshold: float | None = None,
        max_context_tokens: int = 1500,
        name: str = "support",
    ) -> None:
        self.llm = llm
        self.model = model
        self.use_logprobs = use_logprobs
        self.support_threshold = support_threshold
        self.metrics = {name: MetricInfo(scale=(0.0, 1.0), binary=True, threshold=0.5, prompt_version=PROMPT_VERSION,
                                         description="answers judged supported (by the contexts, else by "
                                                     "world knowledge)")}
        self.verifier = Verifier(max_context_tokens=max_context_tokens, use_logprobs=use_logprobs,
                                 support_threshold=support_threshold)

    def details(self, metric: str) -> dict[str, Any]:
        return {**super().details(metric), "support_threshold": self.support_threshold if self.use_logprobs else None}

    def plan(self, sample: EvalSample, answer: RagAnswer) -> Plan | Score:
        if (err := answer_error(answer)) is not None:
            return Score(error=err)
        if not answer.answer.strip():
            return Score(error="empty answer: nothing to judge")
        if answer.contexts:
            return self._against_contexts([c.text for c in answer.contexts], answer.answer)
        return self._open(sample.question, answer.answer)

    def _against_contexts(self, contexts: list[str], text: str) -> Plan:
        (verdict,), _windows = yield from self.verifier.plan(contexts, [text])
        if verdict.verdict is None:
            return Score(error=f"the answer could not be checked against its contexts: {verdict.error}")
        details: dict[str, Any] = {"reason": verdict.reason, "window": verdict.window}
        if verdict.p_supported is not None:
            details["weighted_score"] = verdict.p_supported
        return Score(score=float(verdict.verdict), passed=verdict.verdict, details=details)

    def _open(self, question: str, response: str) -> Plan:
        (gen,) = yield [self.call([{"role": "user", "content": open_prompt(question, response)}], SupportVerdict,
                                  SYSTEM_OPEN)]
        if not gen.ok or gen.parsed is None:
            return Score(error=generation_error(gen))
        reply: SupportVerdict = gen.parsed
        details: dict[str, Any] = {"greedy_verdict": reply.verdict, "reason": reply.reason}
        p_yes = yes_probability_at(gen, json_key="verdict") if self.use_logprobs else None
        if p_yes is not None:
            details["weighted_score"] = p_yes
        # with a probability and a cut-off the cut-off decides; the greedy token is the fallback
        yes = p_yes >= self.support_threshold if (p_yes is not None and self.support_threshold is not None) else (
            reply.verdict == "yes"
        )
        return Score(score=float(yes), passed=yes, details=details)


@register_judge("support", options=SupportOptions)
def build(options: SupportOptions, deps: JudgeDeps) -> SupportJudge:
    threshold = options.support_threshold
    if threshold is None and deps.use_logprobs and options.verdict == "cutoff":
        threshold = judge_cutoff(deps.model, PROMPT_VERSION, features_version=None).cutoff
    return SupportJudge(deps.llm, model=deps.model, use_logprobs=deps.use_logprobs, support_threshold=threshold,
                        max_context_tokens=options.max_context_tokens)
