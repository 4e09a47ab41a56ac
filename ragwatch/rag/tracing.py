"""Optional OpenInference tracing of the built-in system: each answered question is sent, as it is
answered, to an OTLP/HTTP collector (Arize Phoenix's `/v1/traces`) as one trace: a CHAIN root span
(question in, answer out), a RETRIEVER child (`retrieval.documents.N.document.{id,content,score,metadata}`)
and an LLM child (prompt, answer, token counts). The span shape `ragwatch/logsources/openinference.py` reads
back, so `monitor` with `logs.format: phoenix` evaluates what the system sent.

Off unless `evaluate.system.rag.trace` is set. OpenTelemetry is imported only when a tracer is built, so
`ragwatch` still imports lightly. An exporter that cannot reach the collector never fails an answer: it
is logged as a warning.

Example:
    >>> settings = TraceSettings(otlp_endpoint="http://127.0.0.1:6006/v1/traces", project="rag")
    >>> tracer = AnswerTracer(settings, system_version="3f2a9c01d4e5")  # doctest: +SKIP
    >>> tracer.trace_batch(prompts, answers, generations, start_ns, retrieval_s)  # doctest: +SKIP
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, field_validator

if TYPE_CHECKING:
    from ragwatch.llm.types import Generation
    from ragwatch.types import RagAnswer

log = logging.getLogger(__name__)

# traces sent per flush: 3 spans each stay well inside the batch processor's queue (2048 spans), which
# drops spans beyond it, so a batch of thousands of answers is sent in slices
FLUSH_EVERY = 200


class TraceSettings(BaseModel):
    """Send each answer of the built-in system to an OpenTelemetry collector (Phoenix) as an OpenInference trace."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    otlp_endpoint: str
    """OTLP/HTTP traces endpoint; Phoenix: `http://127.0.0.1:6006/v1/traces`."""
    project: str = "default"
    """Phoenix project the traces land in (resource attribute `openinference.project.name`)."""
    timeout_s: float = 10.0
    """Seconds the exporter waits for the collector per batch of spans."""

    @field_validator("otlp_endpoint")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"trace.otlp_endpoint must be an http(s) URL such as "
                             f"http://127.0.0.1:6006/v1/traces, got {value!r}")
        return value


def _import_otel() -> tuple[Any, ...]:
    try:
        from openinference.semconv.resource import ResourceAttributes
        from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise ImportError(f"evaluate.system.rag.trace needs {exc.name}: pip install -r requirements/base.txt "
                          "(opentelemetry-exporter-otlp-proto-http, openinference-semantic-conventions)") from exc
    return (ResourceAttributes, OpenInferenceSpanKindValues, SpanAttributes, OTLPSpanExporter, Resource,
            TracerProvider, BatchSpanProcessor)


class _ReportingExporter:
    """The OTLP exporter, plus a ragwatch warning (and a count) for each batch the collector did not take."""

    def __init__(self, inner: Any, endpoint: str) -> None:
        self.inner, self.endpoint, self.failed_spans = inner, endpoint, 0

    def export(self, spans: Sequence[Any]) -> Any:
        result = self.inner.export(spans)
        if result.name == "FAILURE":
            self.failed_spans += len(spans)
            log.warning("tracing: %d spans not delivered to %s (is `phoenix serve` running there?); "
                        "the answers are unaffected", len(spans), self.endpoint)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class AnswerTracer:
    """One tracer provider per system; `trace_batch` sends a batch's answers and flushes them."""

    def __init__(self, settings: TraceSettings, system_version: str, model_name: str | None = None) -> None:
        (resource_attrs, self._kinds, self._attrs, exporter, resource, provider_cls,
         processor) = _import_otel()
        self.settings, self.system_version, self.model_name = settings, system_version, model_name
        self.provider = provider_cls(resource=resource.create({
            resource_attrs.PROJECT_NAME: settings.project, "service.name": "ragwatch-builtin-rag"}))
        self.exporter = _ReportingExporter(exporter(endpoint=settings.otlp_endpoint, timeout=settings.timeout_s),
                                           settings.otlp_endpoint)
        self.provider.add_span_processor(processor(self.exporter))
        self.tracer = self.provider.get_tracer("ragwatch.rag.tracing")

    def trace_batch(self, prompts: Sequence[str], answers: Sequence[RagAnswer],
                    generations: Sequence[Generation], start_ns: int, retrieval_s: float) -> None:
        """One trace per answer. The batch retrieved in one search of `retrieval_s` seconds and generated
        concurrently after it, so every retriever span covers the batch's search and every LLM span starts
        when it ended and lasts that call's latency."""
        retrieved_ns = start_ns + int(retrieval_s * 1e9)
        for n, (prompt, answer, gen) in enumerate(zip(prompts, answers, generations, strict=True), start=1):
            self._trace_one(prompt, answer, gen, start_ns, retrieved_ns)
            if n % FLUSH_EVERY == 0 or n == len(answers):
                self._flush()

    def _flush(self) -> None:
        if not self.provider.force_flush(timeout_millis=int(self.settings.timeout_s * 1000)):
            log.warning("tracing: spans not confirmed sent to %s within %.0f s", self.settings.otlp_endpoint,
                        self.settings.timeout_s)

    def _trace_one(self, prompt: str, answer: RagAnswer, gen: Generation, start_ns: int,
                   retrieved_ns: int) -> None:
        from opentelemetry import trace
        from opentelemetry.trace import Status, StatusCode

        a, kind = self._attrs, self._kinds
        end_ns = retrieved_ns + int(max(gen.latency_s or 0.0, 0.0) * 1e9)
        root = self.tracer.start_span("rag query", start_time=start_ns, attributes={
            a.OPENINFERENCE_SPAN_KIND: kind.CHAIN.value, a.INPUT_VALUE: answer.question,
            a.OUTPUT_VALUE: answer.answer, a.METADATA: json.dumps({"system_version": self.system_version})})
        context = trace.set_span_in_context(root)
        documents: dict[str, Any] = {a.OPENINFERENCE_SPAN_KIND: kind.RETRIEVER.value, a.INPUT_VALUE: answer.question}
        for i, c in enumerate(answer.contexts):
            prefix = f"{a.RETRIEVAL_DOCUMENTS}.{i}.document"
            documents[f"{prefix}.content"] = c.text
            documents.update({f"{prefix}.{field}": value for field, value in (
                ("id", c.chunk_id), ("score", c.score),
                ("metadata", json.dumps({"source": c.source}) if c.source else None)) if value is not None})
        self.tracer.start_span("retrieve", context=context, start_time=start_ns,
                               attributes=documents).end(retrieved_ns)
        llm_attrs: dict[str, Any] = {
            a.OPENINFERENCE_SPAN_KIND: kind.LLM.value, a.INPUT_VALUE: prompt, a.OUTPUT_VALUE: answer.answer,
            a.LLM_MODEL_NAME: self.model_name or gen.model,
            f"{a.LLM_INPUT_MESSAGES}.0.message.role": "user", f"{a.LLM_INPUT_MESSAGES}.0.message.content": prompt,
            f"{a.LLM_OUTPUT_MESSAGES}.0.message.role": "assistant",
            f"{a.LLM_OUTPUT_MESSAGES}.0.message.content": answer.answer}
        if gen.prompt_tokens or gen.completion_tokens:  # 0 means the provider did not say
            llm_attrs.update({a.LLM_TOKEN_COUNT_PROMPT: gen.prompt_tokens,
                              a.LLM_TOKEN_COUNT_COMPLETION: gen.completion_tokens,
                              a.LLM_TOKEN_COUNT_TOTAL: gen.prompt_tokens + gen.completion_tokens})
        llm = self.tracer.start_span("generate", context=context, start_time=retrieved_ns, attributes=llm_attrs)
        status = Status(StatusCode.OK) if answer.ok else Status(StatusCode.ERROR, answer.error)
        llm.set_status(status)
        llm.end(end_ns)
        root.set_status(status)
        root.end(end_ns)

    def shutdown(self) -> None:
        self.provider.shutdown()
