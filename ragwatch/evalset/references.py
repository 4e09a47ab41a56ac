"""Reference answers for labelled questions that come with a source passage but no answer.

Many labelled sets give a question and the passage it was written from (the ZenML question set's
`anchor`, a LlamaIndex set's `reference_contexts`) but no answer. Answer-level metrics (similarity,
reference coverage, correctness) need one: the generator writes it from that passage alone, as it
writes synthetic pairs, and the sample records who wrote it (`metadata.reference_by`) and with which
prompt (`metadata.reference_prompt_version`). A sample whose reference could not be written keeps no
reference answer and is listed with the reason; it is still evaluated for retrieval.

Example:
    >>> filled, failures = write_reference_answers(samples, LLMClient(settings))  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from ragwatch.llm.client import LLMClient
from ragwatch.types import EvalSample

PROMPT_VERSION = "reference-from-passage-v1"


class ReferenceAnswer(BaseModel):
    answer: str = Field(max_length=600)


class ReferenceFailure(BaseModel):
    sample_id: str
    reason: str


def build_reference_prompt(question: str, passages: Sequence[str]) -> list[dict[str, str]]:
    """The prompt for one reference answer (versioned by `PROMPT_VERSION`)."""
    text = "\n\n".join(p.strip() for p in passages if p.strip())
    return [
        {"role": "system", "content": "You write reference answers for evaluating a question answering "
                                      "system over technical documentation."},
        {"role": "user", "content": (
            f"Passage:\n\"\"\"\n{text}\n\"\"\"\n\nQuestion: {question}\n\n"
            "Answer the question using only the passage, in one or two short sentences. "
            'Reply as JSON: {"answer": "..."}'
        )},
    ]


def needs_reference(sample: EvalSample) -> bool:
    """A question with a source passage and no reference answer."""
    return not (sample.reference_answer or "").strip() and any(c.strip() for c in sample.reference_contexts)


def write_reference_answers(
    samples: Sequence[EvalSample], llm: LLMClient
) -> tuple[list[EvalSample], list[ReferenceFailure]]:
    """`samples` in order, each one that `needs_reference` given an answer written from its passage."""
    todo = [i for i, s in enumerate(samples) if needs_reference(s)]
    out = list(samples)
    failures: list[ReferenceFailure] = []
    if not todo:
        return out, failures
    prompts = [build_reference_prompt(samples[i].question, samples[i].reference_contexts) for i in todo]
    generations = llm.generate_many(prompts, schema=ReferenceAnswer, desc="reference answers")
    for i, gen in zip(todo, generations, strict=True):
        answer = " ".join(gen.parsed.answer.split()) if gen.ok and gen.parsed is not None else ""
        if not answer:
            failures.append(ReferenceFailure(sample_id=samples[i].id,
                                             reason=gen.error or "the generator wrote an empty answer"))
            continue
        metadata = {**samples[i].metadata, "reference_by": f"ai:{gen.model}",
                    "reference_prompt_version": PROMPT_VERSION}
        out[i] = samples[i].model_copy(update={"reference_answer": answer, "metadata": metadata})
    return out, failures
