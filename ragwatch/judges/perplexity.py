"""Perplexity and mean token log-probability of generated answers under the generator model.

Uses `LLMClient.perplexity(text)` of the generator's client (the in-process provider scores text
correctly; API providers cannot). Lower perplexity is better: the model found its own answer likely.
The item score is the perplexity; `mean_logprob` = -ln(perplexity) is in each item's details.

Example:
    >>> gen_llm = LLMClient(LLMSettings(model="local/smollm2-135m-instruct"))  # doctest: +SKIP
    >>> PerplexityJudge(gen_llm).evaluate(samples, answers).details["higher_is_better"]  # doctest: +SKIP
    False
"""

from __future__ import annotations

import math
from typing import Any

from ragwatch.judges.base import answer_error, check_aligned, mean, model_name
from ragwatch.llm.types import Usage
from ragwatch.results import ItemScore, MetricResult
from ragwatch.types import EvalSample, RagAnswer

NO_LOGPROBS = "provider returns no logprobs"


class PerplexityJudge:
    """Perplexity of each answer under `generator_llm`; None -> every item fails with the reason."""

    def __init__(self, generator_llm: Any = None, *, name: str = "perplexity") -> None:
        self.name = name
        self.llm = generator_llm

    def evaluate(self, samples: list[EvalSample], answers: list[RagAnswer]) -> MetricResult:
        check_aligned(samples, answers)
        items = [self._item(s, a) for s, a in zip(samples, answers, strict=True)]
        logprobs = [it.details["mean_logprob"] for it in items if it.ok]
        return MetricResult.from_items(
            self.name,
            items,
            details={
                "higher_is_better": False,
                "note": "lower perplexity is better; mean_logprob = -ln(perplexity), higher is better",
                "mean_logprob": mean(logprobs),
                "generator_model": model_name(self.llm),
                "usage": Usage(model=model_name(self.llm)).model_dump(),  # scoring is local, no billed calls
            },
        )

    def _item(self, sample: EvalSample, answer: RagAnswer) -> ItemScore:
        if (err := answer_error(answer)) is not None:
            return ItemScore(item_id=sample.id, error=err)
        if self.llm is None or not hasattr(self.llm, "perplexity"):
            return ItemScore(
                item_id=sample.id, error=f"{NO_LOGPROBS}: no generator LLM client to score answers with"
            )
        if not answer.answer.strip():
            return ItemScore(item_id=sample.id, error="empty answer: no tokens to score")
        try:
            ppl = float(self.llm.perplexity(answer.answer))
        except NotImplementedError as exc:
            return ItemScore(item_id=sample.id, error=f"{NO_LOGPROBS}: {exc}")
        except Exception as exc:  # one bad item must not sink the metric
            return ItemScore(item_id=sample.id, error=f"perplexity failed: {type(exc).__name__}: {exc}")
        if not math.isfinite(ppl) or ppl <= 0:
            return ItemScore(item_id=sample.id, error=f"perplexity is not a positive finite number ({ppl})")
        return ItemScore(
            item_id=sample.id, score=ppl, details={"perplexity": ppl, "mean_logprob": -math.log(ppl)}
        )
