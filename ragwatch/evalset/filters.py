"""The filters a synthetic question/answer pair must pass, each with the reason it gives.

Malformed questions, unusable answers, questions that copy their chunk or contain their answer, near
duplicates and, optionally, an LLM's answerability check. `FilterChain` runs them in order and keeps a
`FilterReport` per filter and every removed pair with its reason, so nothing is dropped silently.

Example:
    >>> from ragwatch.evalset.synthetic import TestsetSettings
    >>> question_problem("What does the passage say about steps?", TestsetSettings())
    "refers to 'the passage/text' instead of naming its subject"
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol

import numpy as np
from pydantic import BaseModel, Field

from ragwatch.llm.client import LLMClient
from ragwatch.types import EvalSample

CHECK_PROMPT_VERSION = "testset-answerable-v1"
_WORD = re.compile(r"\w+")


class FilterThresholds(Protocol):
    """The limits the filters read (`TestsetSettings` has them)."""

    min_question_chars: int
    max_question_chars: int
    min_answer_chars: int
    max_answer_chars: int
    verbatim_overlap: int


class FilterReport(BaseModel):
    """What one filter removed: how many pairs, a count per reason, and a few example questions."""

    name: str
    description: str
    removed: int = 0
    reasons: dict[str, int] = Field(default_factory=dict)
    examples: list[str] = Field(default_factory=list)
    unchecked: int = 0  # pairs the filter could not judge (kept); only the LLM check has these


class RemovedPair(BaseModel):
    """A filtered-out pair, kept for review: which filter took it and why."""

    sample: EvalSample
    filter: str
    reason: str


class Embedder(Protocol):
    def embed(self, texts: list[str]) -> np.ndarray: ...



class AnswerabilityVerdict(BaseModel):
    answerable: Literal["yes", "no"]


def build_check_prompt(chunk_text: str, question: str) -> list[dict[str, str]]:
    """The answerability check prompt (versioned by `CHECK_PROMPT_VERSION`)."""
    return [{"role": "user", "content": (
        f"Passage:\n\"\"\"\n{chunk_text}\n\"\"\"\n\nQuestion: {question}\n\n"
        "Can the question be answered completely using only the passage above? "
        'Reply as JSON: {"answerable": "yes"} or {"answerable": "no"}'
    )}]


_SELF_REFERENCE = re.compile(
    r"\b(the|this|above|given|provided) (passage|text|context|document|excerpt|snippet|paragraph)\b", re.I
)


def _normalize(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def question_problem(question: str, settings: FilterThresholds) -> str | None:
    """Why a question is malformed, or None."""
    if not question.strip():
        return "empty question"
    if len(question) < settings.min_question_chars:
        return f"question shorter than {settings.min_question_chars} chars"
    if len(question) > settings.max_question_chars:
        return f"question longer than {settings.max_question_chars} chars"
    if "?" not in question:
        return "no question mark"
    if _SELF_REFERENCE.search(question):
        return "refers to 'the passage/text' instead of naming its subject"
    return None


def answer_problem(sample: EvalSample, settings: FilterThresholds) -> str | None:
    """Why a reference answer is unusable (empty, too short, overlong, looping), or None."""
    if not sample.metadata.get("answerable", True):
        return None  # the refusal answer is ours, not the model's
    answer = (sample.reference_answer or "").strip()
    if not answer:
        return "empty answer"
    if len(answer) < settings.min_answer_chars:
        return f"answer shorter than {settings.min_answer_chars} chars"
    if len(answer) > settings.max_answer_chars:
        return f"answer longer than {settings.max_answer_chars} chars"
    words = _normalize(answer).split()
    # small models loop; 12 words, since contrasting answers legitimately repeat shorter phrases
    grams = [tuple(words[i:i + 12]) for i in range(len(words) - 11)]
    if len(set(grams)) < len(grams):
        return "answer repeats itself"
    return None


def longest_shared_ngram(a: str, b: str) -> int:
    """Length in words of the longest word sequence that `a` and `b` share (case-insensitive)."""
    wa, wb = _normalize(a).split(), _normalize(b).split()
    best = 0
    prev = [0] * (len(wb) + 1)
    for x in wa:
        cur = [0] * (len(wb) + 1)
        for j, y in enumerate(wb, start=1):
            if x == y:
                cur[j] = prev[j - 1] + 1
                best = max(best, cur[j])
        prev = cur
    return best


def verbatim_problem(sample: EvalSample, settings: FilterThresholds) -> str | None:
    """A question that copies a long span of its chunk, or that contains its own answer."""
    context = sample.reference_contexts[0] if sample.reference_contexts else ""
    shared = longest_shared_ngram(sample.question, context)
    if shared >= settings.verbatim_overlap:
        return f"copies {shared} consecutive words of the chunk"
    if sample.metadata.get("answerable", True):
        answer = _normalize(sample.reference_answer or "")
        # very short answers ("yes", "2") appear in questions by chance; only longer ones leak
        if len(answer) >= 3 and re.search(rf"\b{re.escape(answer)}\b", _normalize(sample.question)):
            return "the answer is contained in the question"
    return None


class FilterChain:
    """Runs filters in order, keeping each one's report and the removed pairs."""

    def __init__(self, samples: list[EvalSample]) -> None:
        self.samples = samples
        self.reports: list[FilterReport] = []
        self.removed: list[RemovedPair] = []

    def apply(self, name: str, description: str, problem: Callable[[EvalSample], str | None]) -> FilterReport:
        return self.apply_at(name, description, {i: problem(s) for i, s in enumerate(self.samples)})

    def apply_at(self, name: str, description: str, reasons: dict[int, str | None]) -> FilterReport:
        """Remove the samples at the given positions (ids may repeat, positions do not)."""
        report = FilterReport(name=name, description=description)
        kept = []
        for i, sample in enumerate(self.samples):
            reason = reasons.get(i)
            if reason is None:
                kept.append(sample)
                continue
            self._remove(report, sample, reason)
        self.samples = kept
        self.reports.append(report)
        return report

    def _remove(self, report: FilterReport, sample: EvalSample, reason: str) -> None:
        report.removed += 1
        key = re.sub(r"\d+", "N", reason)  # "copies 12 words" and "copies 14 words" count together
        report.reasons[key] = report.reasons.get(key, 0) + 1
        if len(report.examples) < 5:
            report.examples.append(sample.question)
        self.removed.append(RemovedPair(sample=sample, filter=report.name, reason=reason))


def near_duplicates(questions: Sequence[str], embedder: Embedder | None, threshold: float) -> dict[int, str]:
    """Index -> reason for questions too similar to an earlier kept one (the first of a group stays)."""
    if not questions:
        return {}
    if embedder is None:  # without an embedder only exact (normalized) repeats are caught
        seen: dict[str, int] = {}
        out = {}
        for i, q in enumerate(questions):
            key = _normalize(q)
            if key in seen:
                out[i] = f"same text as question {seen[key] + 1}"
            else:
                seen[key] = i
        return out
    vectors = np.asarray(embedder.embed(list(questions)), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors / np.where(norms == 0, 1.0, norms)
    kept: list[int] = []
    out = {}
    for i in range(len(questions)):
        if kept:
            sims = vectors[kept] @ vectors[i]
            j = int(np.argmax(sims))
            if sims[j] >= threshold:
                out[i] = f"cosine {sims[j]:.2f} to: {questions[kept[j]]}"
                continue
        kept.append(i)
    return out


def answerability_problems(
    samples: Sequence[EvalSample], client: LLMClient, **overrides: Any
) -> tuple[dict[int, str], dict[int, str]]:
    """Ask the LLM whether each question is answerable from its chunk alone.

    Returns (index -> removal reason, index -> check error). Answerable kinds need "yes",
    unanswerable ones "no"; a failed check keeps the pair and is reported as unchecked.
    """
    prompts = [build_check_prompt(s.reference_contexts[0] if s.reference_contexts else "", s.question)
               for s in samples]
    gens = client.generate_many(prompts, schema=AnswerabilityVerdict, desc="testset: answerability check",
                                **{"max_tokens": 16, **overrides})
    removed, errors = {}, {}
    for i, (sample, gen) in enumerate(zip(samples, gens, strict=True)):
        if not gen.ok:
            errors[i] = gen.error or "unknown error"
            continue
        says = gen.parsed.answerable
        if sample.metadata.get("answerable", True) and says == "no":
            removed[i] = "judged not answerable from its chunk"
        elif not sample.metadata.get("answerable", True) and says == "yes":
            removed[i] = "meant to be unanswerable but judged answerable from its chunk"
    return removed, errors
