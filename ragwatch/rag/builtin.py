"""The built-in system under test: retriever (the index) + a prompt + the generator LLM."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragwatch.rag.base import (
    CallLog,
    FailureKind,
    RagSettings,
    RetrievalMode,
    SystemCalls,
    canonical_fingerprint,
    check_questions,
)
from ragwatch.types import RagAnswer, RetrievedContext, SearchHit

if TYPE_CHECKING:
    from ragwatch.indexing.embeddings import Embedder
    from ragwatch.indexing.index import Index
    from ragwatch.llm.client import LLMClient
    from ragwatch.rag.tracing import AnswerTracer


def _fence(text: str) -> str:
    # a fence longer than any backtick run inside, so code blocks in a chunk cannot close it
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def format_contexts(hits: Sequence[SearchHit], max_chars: int) -> tuple[str, list[RetrievedContext]]:
    """Numbered, fenced context blocks within `max_chars` of chunk text (the last one may be cut;
    the rest are left out). Returns the prompt text and the contexts actually shown."""
    blocks: list[str] = []
    used: list[RetrievedContext] = []
    budget = max_chars
    for n, hit in enumerate(hits, start=1):
        if budget <= 0:
            break
        text = hit.chunk.text[:budget]
        budget -= len(text)
        fence = _fence(text)
        blocks.append(f"[{n}] source: {hit.chunk.source}\n{fence}\n{text}\n{fence}")
        used.append(RetrievedContext(text=text, chunk_id=hit.chunk.id, source=hit.chunk.source,
                                     score=hit.score))
    return "\n\n".join(blocks), used


def build_prompt(template: str, question: str, context: str) -> str:
    # replace, not str.format: templates may hold braces (JSON examples) and contexts hold code
    return template.replace("{question}", question).replace("{context}", context)


class BuiltinRAG:
    """Retrieve top-k chunks from the index (batched), prompt the generator, answer.

    `retrieval_s` in each answer's timings is the batch's retrieval time divided by its size.
    """

    def __init__(self, index: Index, embedder: Embedder | None, llm: LLMClient,
                 settings: RagSettings | None = None) -> None:
        self.settings = settings or RagSettings()
        if self.settings.retrieval_mode != "bm25" and embedder is None:
            raise ValueError(
                f"retrieval_mode {self.settings.retrieval_mode!r} needs an embedder (the one the index was "
                "built with): pass embedder=get_embedder(...), or use retrieval_mode='bm25'"
            )
        self.index, self.embedder, self.llm = index, embedder, llm
        self._log = CallLog("builtin")
        self.tracer: AnswerTracer | None = None
        if self.settings.trace is not None:  # answers sent to Phoenix as OpenInference traces
            from ragwatch.rag.tracing import AnswerTracer

            self.tracer = AnswerTracer(self.settings.trace, self.fingerprint()[:12], llm.settings.model)

    def retrieve_many(self, questions: list[str], k: int | None = None,
                      mode: RetrievalMode | None = None) -> list[list[SearchHit]]:
        """Top-k hits per question (one batched search), for retrieval-only evaluation."""
        questions = check_questions(questions)
        if not questions:
            return []
        mode = mode or self.settings.retrieval_mode
        return self.index.search_many(questions, k or self.settings.top_k, mode, self.embedder)

    def answer(self, question: str) -> RagAnswer:
        return self.answer_many([question])[0]

    def answer_many(self, questions: list[str], **overrides: Any) -> list[RagAnswer]:
        """Answers in input order; `overrides` go to `LLMClient.generate_many` (e.g. mock_response)."""
        questions = check_questions(questions)
        if not questions:
            return []
        started, started_ns = time.perf_counter(), time.time_ns()
        rankings = self.retrieve_many(questions)
        retrieval_s = (time.perf_counter() - started) / len(questions)
        prompts, shown = [], []
        for question, hits in zip(questions, rankings, strict=True):
            context, used = format_contexts(hits, self.settings.max_context_chars)
            prompts.append(build_prompt(self.settings.prompt_template, question, context))
            shown.append(used)
        from ragwatch.llm.logprobs import mean_logprob, supports_logprobs

        if supports_logprobs(self.llm.settings):  # answer confidence at no extra call
            overrides.setdefault("logprobs", True)
        generations = self.llm.generate_many(prompts, desc="rag answers", **overrides)
        self._log = CallLog("builtin")
        for gen in generations:
            self._log.count("calls")
            if gen.ok:
                self._log.question()
            else:
                self._log.count("errors")
                self._log.question(_failure_kind(gen.error or ""), gen.error or "")
        answers = [
            RagAnswer(
                question=question,
                answer=gen.text if gen.ok else "",
                contexts=used,
                timings={"retrieval_s": retrieval_s, "generation_s": gen.latency_s},
                error=None if gen.ok else f"generation failed: {gen.error}",
                mean_logprob=mean_logprob(gen) if gen.ok else None,
            )
            for question, used, gen in zip(questions, shown, generations, strict=True)
        ]
        if self.tracer is not None:
            self.tracer.trace_batch(prompts, answers, generations, started_ns, retrieval_s * len(questions))
        return answers

    def calls(self) -> SystemCalls:
        """The generations and failed generations of the last `answer_many` (the LLM client's own
        retries are in its usage)."""
        return self._log.snapshot()

    def describe(self) -> dict[str, Any]:
        llm = self.llm.settings
        return {
            "kind": "builtin",
            "retrieval_mode": self.settings.retrieval_mode,
            "top_k": self.settings.top_k,
            "embedding": getattr(self.embedder, "identity", None),
            "index": self.index.fingerprint,
            "generator": {"model": llm.model, "api_base": llm.api_base, "temperature": llm.temperature,
                          "max_tokens": llm.max_tokens, "seed": llm.seed},
            "prompt_template": self.settings.prompt_template,
            "max_context_chars": self.settings.max_context_chars,
        }

    def fingerprint(self) -> str:
        return canonical_fingerprint(self.describe())


def _failure_kind(error: str) -> FailureKind:
    from ragwatch.llm.budget import budget_stop

    if budget_stop(error):
        return "budget"
    from ragwatch.llm.errors import is_unreachable

    return "unreachable" if is_unreachable(error) or "Connection" in error or "Timeout" in error else "error"
