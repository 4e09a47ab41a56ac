"""Containers that travel between pipeline steps as versioned artifacts (JSON through pydantic)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from ragwatch.decision.compare import Comparison
from ragwatch.decision.gate import GateDecision
from ragwatch.evalset.export import samples_fingerprint
from ragwatch.rag.base import SystemCalls
from ragwatch.results import MetricResult
from ragwatch.types import Chunk, Document, EvalSample, RagAnswer


class DocumentSet(BaseModel):
    documents: list[Document]


class ChunkSet(BaseModel):
    chunks: list[Chunk]
    settings: dict[str, Any] = Field(default_factory=dict)


class EvalSet(BaseModel):
    """The evaluation set an evaluation run used; `fingerprint` names its content."""

    samples: list[EvalSample]
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def fingerprint(self) -> str:
        return samples_fingerprint(self.samples)


class AnswerSet(BaseModel):
    """The answers of the system under test to the evaluation set, aligned with its samples; `calls`:
    how the system was called for them (requests, retries, errors, timeouts; None in older runs)."""

    answers: list[RagAnswer]
    system: dict[str, Any] = Field(default_factory=dict)
    fingerprint: str = ""
    usage: dict[str, Any] = Field(default_factory=dict)
    calls: SystemCalls | None = None


class MetricGroup(BaseModel):
    """One group of metrics (retrieval, e2e, judges) of one run. `unavailable`: metric name -> why this
    system cannot have it (e.g. answer confidence of a system that returns no logprobs): listed as not
    available, neither a metric nor failed items."""

    group: str
    metrics: dict[str, MetricResult] = Field(default_factory=dict)
    details: dict[str, Any] = Field(default_factory=dict)
    unavailable: dict[str, str] = Field(default_factory=dict)

    def summary(self) -> dict[str, dict[str, Any]]:
        return {name: result.summary() for name, result in self.metrics.items()}

    def scores(self) -> dict[str, float]:
        """Metric name -> aggregate score, leaving out metrics with no scored item."""
        return {name: r.score for name, r in self.metrics.items() if r.score is not None}


class RunComparisons(BaseModel):
    """An evaluation compared with the previous run and with the production model version."""

    previous: Comparison | None = None
    previous_run: str | None = None
    production: Comparison | None = None
    production_version: str | None = None
    production_run: str | None = None
    same_eval_set_as_production: bool | None = None
    gate: GateDecision | None = None  # the promotion gate's decision on the production comparison

    def named(self) -> dict[str, Comparison]:
        """Short labels ("previous run", "production"), as the report's headline columns read."""
        pairs = (("previous run", self.previous), ("production", self.production))
        return {label: cmp for label, cmp in pairs if cmp is not None}

    def as_dict(self) -> dict[str, Comparison]:
        named = {}
        if self.previous is not None:
            named[f"vs previous run {self.previous_run}"] = self.previous
        if self.production is not None:
            named[f"vs production {self.production_version}"] = self.production
        return named
