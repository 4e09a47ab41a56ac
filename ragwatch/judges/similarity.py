"""Semantic similarity of answer and reference answer: cosine of their embeddings (no LLM).

Rules: no reference answer -> failed item "no reference answer"; an empty answer scores 0.0 (it
shares no meaning with the reference; the embedding of an empty string would give an arbitrary value).

Example:
    >>> from ragwatch.embeddings import EmbeddingSettings, get_embedder  # doctest: +SKIP
    >>> SimilarityJudge(get_embedder(EmbeddingSettings())).evaluate(samples, answers).score  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ragwatch.judges.base import answer_error, check_aligned
from ragwatch.llm.types import Usage
from ragwatch.results import ItemScore, MetricResult
from ragwatch.types import EvalSample, RagAnswer


class SimilarityJudge:
    """Cosine similarity in [-1, 1] (normalized embeddings); `passed` when >= threshold, if set."""

    def __init__(
        self, embedder: Any = None, *, threshold: float | None = None, name: str = "similarity"
    ) -> None:
        self.name = name
        self._embedder = embedder
        self.threshold = threshold

    @property
    def embedder(self) -> Any:
        if self._embedder is None:  # the packaged local model, loaded only when first needed
            from ragwatch.embeddings import EmbeddingSettings, get_embedder

            self._embedder = get_embedder(EmbeddingSettings())
        return self._embedder

    def evaluate(self, samples: list[EvalSample], answers: list[RagAnswer]) -> MetricResult:
        check_aligned(samples, answers)
        items: list[ItemScore | None] = [None] * len(samples)
        todo = []
        for i, (sample, answer) in enumerate(zip(samples, answers, strict=True)):
            if (err := answer_error(answer)) is not None:
                items[i] = ItemScore(item_id=sample.id, error=err)
            elif not (sample.reference_answer or "").strip():
                items[i] = ItemScore(item_id=sample.id, error="no reference answer")
            elif not answer.answer.strip():
                items[i] = self._item(sample.id, 0.0, "empty answer scores 0")
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
                if np.isfinite(cos):
                    items[i] = self._item(samples[i].id, float(np.clip(cos, -1.0, 1.0)), "embedding cosine")
                else:
                    items[i] = ItemScore(
                        item_id=samples[i].id, error="embedding produced a non-finite vector"
                    )
        done = [it for it in items if it is not None]
        details: dict[str, Any] = {
            "usage": Usage(model=str(getattr(self._embedder, "identity", ""))).model_dump(),  # no LLM calls
            "embedder": str(getattr(self._embedder, "identity", "")),
            "higher_is_better": True,
            "scale": [-1, 1],
        }
        if self.threshold is not None:
            judged = [it.passed for it in done if it.ok]
            details["threshold"] = self.threshold
            details["pass_rate"] = sum(judged) / len(judged) if judged else None  # type: ignore[arg-type]
        return MetricResult.from_items(self.name, done, details=details)

    def _item(self, item_id: str, score: float, reason: str) -> ItemScore:
        passed = None if self.threshold is None else score >= self.threshold
        return ItemScore(item_id=item_id, score=score, passed=passed, details={"reason": reason})
