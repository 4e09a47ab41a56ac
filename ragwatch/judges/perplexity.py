"""Answer confidence and perplexity of generated answers under the generator model.

The mean token log-probability of an answer is captured when it is generated (`RagAnswer.mean_logprob`,
for any provider that returns logprobs; no extra call). From it:
- `answer_confidence` = exp(mean logprob), the geometric-mean probability of the answer's tokens
  (0-1, higher is better: the generator was sure of what it wrote);
- `perplexity` = exp(-mean logprob) (lower is better). An answer without captured logprobs is
  rescored with the generator's client when it can score text (`LLMClient.perplexity`, the
  in-process provider); otherwise the item fails with the reason. A system none of whose answers
  carries logprobs and that cannot be rescored (a callable or HTTP system, an API generator without
  logprobs) does not have these metrics: `unavailable` says so (`NOT_AVAILABLE`) and the run lists
  them as not available for this system instead of failing every item.

Example:
    >>> settings = LLMSettings(model="local/smollm2-135m-instruct")  # doctest: +SKIP
    >>> judge = PerplexityJudge(LLMClient(settings), generator_model=settings.model)  # doctest: +SKIP
    >>> judge.evaluate_all(samples, answers)["answer_confidence"].score  # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from ragwatch.judges.base import answer_error
from ragwatch.judges.engine import LLMJudge, Outcome, Score
from ragwatch.judges.registry import JudgeDeps, JudgeOptions, register_judge
from ragwatch.llm.models import is_local
from ragwatch.results import MetricInfo
from ragwatch.types import EvalSample, RagAnswer

NO_LOGPROBS = "provider returns no logprobs"
NOT_AVAILABLE = "not available for this system (it returns no token logprobs)"
Source = Literal["auto", "generation", "rescore"]


class PerplexityOptions(JudgeOptions):
    # auto: the logprobs captured at generation time, else rescore the answer with the generator
    source: Source = "auto"
    """auto: logprobs captured at generation, else rescore with the generator; generation or rescore to force one."""


class PerplexityJudge(LLMJudge):
    """`perplexity` and `answer_confidence` of each answer under `generator_llm`, whose model string is
    `generator_model` (no judge LLM)."""

    def __init__(self, generator_llm: Any = None, *, generator_model: str | None = None, source: Source = "auto",
                 name: str = "perplexity") -> None:
        self.metrics = {
            name: MetricInfo(direction="lower", scale=None, description="exp(-mean token logprob) of the answer"),
            "answer_confidence": MetricInfo(
                scale=(0.0, 1.0), description="exp(mean token logprob): geometric-mean token probability"
            ),
        }
        self.generator = generator_llm
        self.generator_model = generator_model
        self.source = source

    def details(self, metric: str) -> dict[str, Any]:
        return {"generator_model": self.generator_model or "", "source": self.source}

    def unavailable(self, answers: Sequence[RagAnswer]) -> str | None:
        """`NOT_AVAILABLE` when no given answer carries logprobs and none can be rescored; when some
        answers carry them, the others fail one by one with the reason (see `plan`)."""
        given = [a for a in answers if answer_error(a) is None and a.answer.strip()]
        if not given or self._can_rescore():
            return None
        if self.source == "rescore":
            return "not available for this system (source: rescore, and no generator model that can score text)"
        return NOT_AVAILABLE if all(a.mean_logprob is None for a in given) else None

    def _can_rescore(self) -> bool:
        """Whether the generator's client can score a given text: only the in-process provider can."""
        if self.source == "generation" or self.generator is None or not hasattr(self.generator, "perplexity"):
            return False
        return is_local(self.generator_model or "")

    def plan(self, sample: EvalSample, answer: RagAnswer) -> Outcome:
        """No judge call: the generation-time logprob, or one local rescoring of the answer text."""
        if (err := answer_error(answer)) is not None:
            return Score(error=err)
        if not answer.answer.strip():
            return Score(error="empty answer: no tokens to score")
        mean_lp = answer.mean_logprob if self.source != "rescore" else None
        how = "captured at generation"
        if mean_lp is None:
            if self.source == "generation":
                return Score(error=f"{NO_LOGPROBS}: the generator returned no token logprobs with this answer")
            mean_lp, how = self._rescore(answer.answer)
            if mean_lp is None:
                return Score(error=how)
        perplexity, confidence = math.exp(-mean_lp), math.exp(mean_lp)
        if not math.isfinite(perplexity):
            return Score(error=f"perplexity is not finite (mean logprob {mean_lp})")
        details = {"mean_logprob": mean_lp, "source": how}
        ppl_name, confidence_name = self.metrics
        return {
            ppl_name: Score(score=perplexity, details={**details, "perplexity": perplexity}),
            confidence_name: Score(
                score=confidence,
                details={**details, "reason": f"geometric-mean token probability {confidence:.3f} ({how})"},
            ),
        }

    def _rescore(self, text: str) -> tuple[float | None, str]:
        """(mean logprob, how) from the generator's client, or (None, why not)."""
        if self.generator is None or not hasattr(self.generator, "perplexity"):
            return None, f"{NO_LOGPROBS}: no generator LLM client to score answers with"
        try:
            ppl = float(self.generator.perplexity(text))
        except NotImplementedError as exc:
            return None, f"{NO_LOGPROBS}: {exc}"
        except Exception as exc:  # one bad item must not sink the metric
            return None, f"perplexity failed: {type(exc).__name__}: {exc}"
        if not math.isfinite(ppl) or ppl <= 0:
            return None, f"perplexity is not a positive finite number ({ppl})"
        return -math.log(ppl), "rescored by the generator"


@register_judge("perplexity", options=PerplexityOptions, default=True)
def build(options: PerplexityOptions, deps: JudgeDeps) -> PerplexityJudge:
    return PerplexityJudge(deps.generator_llm, generator_model=deps.generator_model, source=options.source)
