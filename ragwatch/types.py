"""Data types shared across ragwatch: documents, chunks, search hits, evaluation samples, answers.

They are pydantic models so that they validate, serialize to JSON and travel as ZenML artifacts.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Document(BaseModel):
    """One loaded source file (or one logical document inside it).

    `page_starts[i]` is the character offset in `text` where page i+1 begins (PDF only), so a
    chunk's page can be recovered from its offsets.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    source: str  # path relative to the ingest root, with forward slashes
    text: str
    format: Literal["pdf", "markdown", "text", "html", "docx"]
    metadata: dict[str, Any] = Field(default_factory=dict)
    page_starts: list[int] | None = None


class Chunk(BaseModel):
    """A span of a document: `document.text[start:end] == text`."""

    model_config = ConfigDict(frozen=True)

    id: str
    document_id: str
    source: str
    text: str
    start: int
    end: int
    metadata: dict[str, Any] = Field(default_factory=dict)


class SearchHit(BaseModel):
    """One retrieved chunk with its rank (1-based) and the retriever's score."""

    chunk: Chunk
    score: float
    rank: int


RelevanceKind = Literal["chunk_id", "document", "url", "text"]


class RelevantItem(BaseModel):
    """What counts as relevant for a question, and how much (graded relevance, default 1)."""

    kind: RelevanceKind
    value: str
    grade: float = 1.0


class EvalSample(BaseModel):
    """One question of an evaluation set."""

    id: str
    question: str
    reference_answer: str | None = None
    reference_contexts: list[str] = Field(default_factory=list)
    relevant: list[RelevantItem] = Field(default_factory=list)
    kind: str = "factual"
    metadata: dict[str, Any] = Field(default_factory=dict)


class RetrievedContext(BaseModel):
    """A context passage the system under test used to answer."""

    text: str
    chunk_id: str | None = None
    source: str | None = None
    score: float | None = None


class RagAnswer(BaseModel):
    """What the system under test returned for one question; `error` is set when it failed."""

    question: str
    answer: str = ""
    contexts: list[RetrievedContext] = Field(default_factory=list)
    timings: dict[str, float] = Field(default_factory=dict)
    error: str | None = None
    # mean token log-probability of `answer`, captured at generation when the provider returns logprobs
    mean_logprob: float | None = None

    @property
    def ok(self) -> bool:
        return self.error is None
