"""Semantic similarity of answer and reference answer: cosine of their embeddings (no LLM).

Rules: no reference answer -> skipped item "no reference answer" (`ItemScore.skipped`); an empty answer
scores 0.0 (it shares no meaning with the reference; the embedding of an empty string would give an
arbitrary value).

Example:
    >>> from ragwatch.indexing.embeddings import EmbeddingSettings, get_embedder  # doctest: +SKIP
    >>> SimilarityJudge(get_embedder(EmbeddingSettings())).evaluate(samples, answers).score  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from ragwatch.judges.base import answer_error
from ragwatch.judges.engine import LLMJudge, Score, check_aligned, metric_result
from ragwatch.judges.registry import JudgeDeps, JudgeOptions, register_judge
from ragwatch.llm.types import Usage
from ragwatch.results import NO_REFERENCE, MetricInfo, MetricResult
from ragwatch.types import EvalSample, RagAnswer


class SimilarityOptions(JudgeOptions):
    threshold: float | None = Field(default=None, ge=-1, le=1)
    """Cosine at or above which an answer passes (null: no pass/fail reading)."""


class SimilarityJudge(LLMJudge):
    """Cosine similarity in [-1, 1] (normalized embeddings); `passed` when >= threshold, if set."""

    def __init__(
        self, embedder: Any = None, *, threshold: float | None = None, name: str = "similarity"
    ) -> None:
        self.metrics = {
            name: MetricInfo(scale=(-1.0, 1.0), threshold=threshold,
                             description="cosine of the answer's and the reference answer's embeddings")
        }
        self._embedder = embedder
        self.threshold = threshold

    @property
    def embedder(self) -> Any:
        if self._embedder is None:  # the packaged local model, loaded only when first needed
            from ragwatch.indexing.embeddings import EmbeddingSettings, get_embedder

            self._embedder = get_embedder(EmbeddingSettings())
        return self._embedder

    def evaluate_all(self, samples: list[EvalSample], answers: list[RagAnswer]) -> dict[str, MetricResult]:
        """All answers and references embedded in one batch (no per-item plan needed)."""
        check_aligned(samples, answers)
        scores: list[Score | None] = [None] * len(samples)
        todo = []
        for i, (sample, answer) in enumerate(zip(samples, answers, strict=True)):
            if (err := answer_error(answer)) is not None:
                scores[i] = Score(error=err)
            elif not (sample.reference_answer or "").strip():
                scores[i] = Score(error=NO_REFERENCE, skipped=True)
            elif not answer.answer.strip():
                scores[i] = Score(score=0.0, details={"reason": "empty answer scores 0"})
            else:
                todo.append(i)
        if todo:
            texts = [answers[i].answer for i in todo] + [samples[i].reference_answer or "" for i in todo]
            vectors = np.asarray(self.embedder.embed(texts), dtype=float)
            a, r = vectors[: len(todo)], vectors[len(todo) :]
            # re-normalize: cheap, and keeps the score a cosine even for an embedder that does not
            norms = np.linalg.norm(a, axis=1) * np.linalg.norm(r, axis=1)
            cosines = np.einsum("ij,ij->i", a, r) / np.where(norms > 0, norms, 1.0)
            for i, cos in zip(todo, cosines, strict=True):
                scores[i] = (
                    Score(score=float(np.clip(cos, -1.0, 1.0)), details={"reason": "embedding cosine"})
                    if np.isfinite(cos)
                    else Score(error="embedding produced a non-finite vector")
                )
        identity = str(getattr(self._embedder, "identity", ""))
        result = metric_result(
            self.name,
            [s.id for s in samples],
            [s for s in scores if s is not None],
            self.metrics[self.name],
            Usage(model=identity),  # no LLM calls
            judge_model=identity,  # a different embedder scores on another basis, like a judge model
        )
        return {self.name: result}


@register_judge("similarity", options=SimilarityOptions, default=True)
def build(options: SimilarityOptions, deps: JudgeDeps) -> SimilarityJudge:
    return SimilarityJudge(deps.embedder, threshold=options.threshold)
