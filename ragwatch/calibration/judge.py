"""The direct yes/no support judge that calibration uses on sets without retrieved contexts.

Which judge: `SupportJudge`, a direct yes/no judge, is the default for sets without context such
as HaluEval general or TruthfulQA: the statement-level faithfulness judge checks claims against
retrieved contexts and has nothing to check against there. On such sets the support judge sees the
user's question and the response, and answers from its own knowledge whether the response is
correct and free of fabricated claims. With contexts it checks the answer against them.
`judge: faithfulness` calibrates the statement-level judge on sets with contexts.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ragwatch.judges.base import (
    DATA_RULE,
    answer_error,
    build_result,
    check_aligned,
    fence,
    fence_contexts,
    generation_error,
    logprob_overrides,
    model_name,
    usage_of,
)
from ragwatch.llm.logprobs import yes_probability_at
from ragwatch.results import ItemScore, MetricResult
from ragwatch.types import EvalSample, RagAnswer

PROMPT_VERSION = "support-v1"
REASON_CHARS = 120


class SupportVerdict(BaseModel):
    """Verdict first, so P(yes) is read before any reasoning text can sway it."""

    verdict: Literal["yes", "no"]
    reason: str = Field(max_length=REASON_CHARS)


SYSTEM_OPEN = (
    "You detect hallucinations. You read a user's QUESTION and a RESPONSE and decide, using your own "
    "knowledge, whether the RESPONSE is correct and free of fabricated or false claims, and does what the "
    "question asks. Verdict yes: correct and supported. Verdict no: at least one claim is false, "
    "made up, or unsupported, or the response does not do what was asked."
)
SYSTEM_CONTEXT = (
    "You detect hallucinations. You read a QUESTION, the CONTEXT passages and an ANSWER and decide "
    "whether every claim of the ANSWER is stated in or follows from the CONTEXT. Verdict yes: fully "
    "supported by the context. Verdict no: at least one claim is not supported or is contradicted."
)
REPLY_FORMAT = 'Reply with JSON only: {"verdict": "yes" or "no", "reason": "<one short sentence>"}'


class SupportJudge:
    """Yes/no: is the answer supported (by the contexts, or by world knowledge when there are none)?

    Item score 1.0 (yes) or 0.0 (no), `passed` = yes; with logprobs `weighted_score` = P(yes).
    `fence_untrusted=False` drops the fences and the data rule: only to measure what they defend.
    """

    def __init__(self, llm: Any, *, use_logprobs: bool = True, fence_untrusted: bool = True,
                 name: str = "support") -> None:
        self.llm = llm
        self.name = name
        self.use_logprobs = use_logprobs
        self.fence_untrusted = fence_untrusted
        self.prompt_version = PROMPT_VERSION if fence_untrusted else PROMPT_VERSION + "-unfenced"

    def messages(self, sample: EvalSample, answer: RagAnswer) -> list[dict[str, str]]:
        contexts = [c.text for c in answer.contexts]
        system = SYSTEM_CONTEXT if contexts else SYSTEM_OPEN
        label = "ANSWER" if contexts else "RESPONSE"
        if self.fence_untrusted:
            parts = [fence("QUESTION", sample.question)]
            if contexts:
                parts.append(fence_contexts(contexts))
            parts.append(fence(label, answer.answer))
            system = f"{system}\n{DATA_RULE}\n{REPLY_FORMAT}"
        else:
            parts = [f"QUESTION: {sample.question}"]
            parts += [f"CONTEXT {i}: {c}" for i, c in enumerate(contexts, start=1)]
            parts.append(f"{label}: {answer.answer}")
            system = f"{system}\n{REPLY_FORMAT}"
        parts.append(f"Is the {label} supported? Reply with the JSON object only.")
        return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(parts)}]

    def evaluate(self, samples: list[EvalSample], answers: list[RagAnswer]) -> MetricResult:
        check_aligned(samples, answers)
        errors: dict[int, str] = {}
        for i, answer in enumerate(answers):
            if (err := answer_error(answer)) is not None:
                errors[i] = err
            elif not answer.answer.strip():
                errors[i] = "empty answer: nothing to judge"
        todo = [i for i in range(len(answers)) if i not in errors]
        prompts = [self.messages(samples[i], answers[i]) for i in todo]
        gens = (self.llm.generate_many(prompts, schema=SupportVerdict, desc=self.name,
                                       **logprob_overrides(self.use_logprobs)) if prompts else [])
        by_index = dict(zip(todo, gens, strict=True))
        items = []
        for i, sample in enumerate(samples):
            if i in errors:
                items.append(ItemScore(item_id=sample.id, error=errors[i]))
                continue
            gen = by_index[i]
            if not gen.ok or gen.parsed is None:
                items.append(ItemScore(item_id=sample.id, error=generation_error(gen)))
                continue
            verdict: SupportVerdict = gen.parsed
            details: dict[str, Any] = {"verdict": verdict.verdict, "reason": verdict.reason}
            if self.use_logprobs and (p_yes := yes_probability_at(gen, json_key="verdict")) is not None:
                details["weighted_score"] = p_yes
            yes = verdict.verdict == "yes"
            items.append(ItemScore(item_id=sample.id, score=float(yes), passed=yes, details=details))
        return build_result(self.name, items, usage_of(gens, model_name(self.llm)), threshold=0.5,
                            extra={"prompt_version": self.prompt_version, "higher_is_better": True})

