"""Assemble an evaluation set from the configured sources: imported labelled sets and synthetic pairs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragwatch.evalset.imported import (
    ImportSettings,
    import_dataset,
    import_handwritten_retrieval_cases,
    import_zenml_qa,
)
from ragwatch.evalset.synthetic import TestsetSettings
from ragwatch.llm.types import TestsetGeneratorSettings
from ragwatch.presets import preset
from ragwatch.types import EvalSample

ShippedTestset = preset(TestsetSettings, n_chunks=36, questions_per_chunk=1)


class EvalSetConfig(BaseModel):
    """How the evaluation set is made: synthetic pairs, imported labelled sets, or both (the `testset:`
    block of a pipeline config)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    synthetic: bool = True
    """Generate question/answer pairs from sampled chunks of the index."""
    generator: TestsetGeneratorSettings
    """The LLM that writes synthetic pairs and reference answers."""
    # one question per chunk (asked for 3, the 0.5B returned 1.25 on average), 36 chunks: about 64 judged
    # items with the sample's labelled set, the size at which the gate decides a top_k 3 -> 1 change
    testset: ShippedTestset
    """How chunks are sampled and synthetic questions filtered."""
    imports: list[ImportSettings] = Field(default_factory=list)
    """Labelled sets to import (JSONL, CSV, LlamaIndex, Hugging Face on disk, ...)."""
    # The ZenML guide's question -> page pairs (they fit the bundled sample corpus; its config sets them).
    handwritten_retrieval_cases: str | None = None
    """JSON file of handwritten question -> page cases (no reference answer); relative to this config file."""
    zenml_qa: str | None = None
    """JSONL of labelled ZenML questions (the bundled sample's format); relative to this config file."""
    # Imported questions with a source passage but no answer get a reference answer written by the
    # generator from that passage (ragwatch/evalset/references.py), so answer-level metrics score them too.
    write_reference_answers: bool = True
    """Have the generator write a reference answer for imported questions that carry a passage but no answer."""


def import_labelled_samples(config: EvalSetConfig) -> tuple[list[EvalSample], dict[str, Any]]:
    """Every labelled source of `config`, in order; the report counts imported and skipped rows."""
    samples: list[EvalSample] = []
    report: dict[str, Any] = {}
    sources: list[tuple[str, Any]] = []
    if config.handwritten_retrieval_cases:
        path = config.handwritten_retrieval_cases
        sources.append((f"handwritten:{path}", lambda p=path: import_handwritten_retrieval_cases(p)))
    if config.zenml_qa:
        path = config.zenml_qa
        sources.append((f"zenml_qa:{path}", lambda p=path: import_zenml_qa(p)))
    for settings in config.imports:
        sources.append((f"{settings.format}:{settings.path}", lambda s=settings: import_dataset(s)))
    for name, load in sources:
        result = load()
        samples.extend(result.samples)
        report[name] = {
            "imported": len(result.samples),
            "usable_before_limit": result.usable if result.usable is not None else len(result.samples),
            "skipped": len(result.skipped),
            "skipped_by_reason": result.skipped_by_reason(),
            "skipped_rows": [f"{result.unit} {line}: {reason}" for line, reason in result.skipped[:20]],
            "without_reference": result.without_reference,
        }
    return samples, report


def merge_samples(*groups: Sequence[EvalSample]) -> list[EvalSample]:
    """Concatenate groups; a sample id seen before is dropped (the same question from two sources)."""
    seen: set[str] = set()
    merged: list[EvalSample] = []
    for group in groups:
        for sample in group:
            if sample.id not in seen:
                seen.add(sample.id)
                merged.append(sample)
    return merged


# An evaluation of retrieval alone marks the samples it does not ask (`mark_retrieval_only`): in their
# metadata, so that every step that pairs samples with answers selects the same ones from the set it is given.
RETRIEVAL_ONLY_KEY = "retrieval_only"
WithoutReference = Literal["answer", "retrieval_only"]


def generation_samples(samples: Sequence[EvalSample]) -> list[EvalSample]:
    """The samples the system under test answers and the judges score: every question, with or without a
    reference answer, except those marked retrieval-only (`mark_retrieval_only`).

    A question without a reference answer is judged by every judge that needs none (faithfulness,
    relevance, the no-LLM checks); the metrics that need one skip it with the reason "no reference
    answer" (`ragwatch.results.NO_REFERENCE`). Logged questions are always answered.
    """
    return [s for s in samples if s.kind == "logged" or not s.metadata.get(RETRIEVAL_ONLY_KEY)]


def mark_retrieval_only(samples: Sequence[EvalSample], which: Literal["all"] | WithoutReference) -> list[EvalSample]:
    """The samples with those evaluated by retrieval alone marked (neither answered nor judged).

    `which`: "all" (the config's `retrieval_only`: no LLM at all), "retrieval_only" (only the questions
    without a reference answer: `evaluate.without_reference: retrieval_only`), "answer" (none).
    """
    if which not in ("all", "answer", "retrieval_only"):
        raise ValueError(f"which must be all, answer or retrieval_only, got {which!r}")
    if which == "answer":
        return list(samples)
    return [s.model_copy(update={"metadata": {**s.metadata, RETRIEVAL_ONLY_KEY: True}})
            if which == "all" or not (s.reference_answer or "").strip() else s
            for s in samples]
