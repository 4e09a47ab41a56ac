"""Send an evaluation run to any OTLP/HTTP endpoint as OpenTelemetry GenAI evaluation results.

The spans (attributes from `ragwatch.export.mapping`):
- one run span (`ragwatch evaluation <run>`, a new trace): the gate's status and verdict, and the
  verdict as a `gen_ai.evaluation.result` event;
- one child span per metric (`ragwatch metric <name>`): its level, interval, n, method, judge agreement
  and verdict, as attributes and as one `gen_ai.evaluation.result` event;
- one span per item (`ragwatch item <id>`), one `gen_ai.evaluation.result` event per metric. An item
  answered from a log whose id is an OpenTelemetry trace id joins that trace, as a child of the logged
  root span when the log kept it (OpenInference, Phoenix) and at the trace's top otherwise (Langfuse),
  linked to the run span; any other item is a child of the run span.

Spans are events' carriers because trace backends (Phoenix, Langfuse) ingest traces, not OTLP logs. The
exporter reads `OTEL_EXPORTER_OTLP_HEADERS` (e.g. Langfuse's Authorization header) from the environment.
OpenTelemetry is imported inside the functions, so `ragwatch` imports lightly.

Example:
    >>> sent = export_run(run, "http://127.0.0.1:6006", project="ragwatch")  # doctest: +SKIP
    >>> sent.spans, sent.failed_spans  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from ragwatch.export.mapping import (
    EVENT,
    SPAN_KIND,
    RunExport,
    gate_event,
    item_attributes,
    item_results,
    metric_attributes,
    run_attributes,
)

TRACES_PATH = "/v1/traces"
SERVICE = "ragwatch"
SCOPE = "ragwatch.export.otlp"
BATCH = 512  # spans per OTLP request


class ExportSummary(BaseModel):
    """What was sent: spans, evaluation events, items joined to logged traces, spans the endpoint refused."""

    endpoint: str
    run_trace_id: str
    spans: int
    events: int
    items: int
    linked_items: int
    failed_spans: int = 0

    def line(self) -> str:
        linked = f", {self.linked_items} of them in their logged traces" if self.linked_items else ""
        sent = (f"exported {self.spans} spans ({self.events} gen_ai.evaluation.result events; {self.items} items"
                f"{linked}) to {self.endpoint}; the run's trace id is {self.run_trace_id}")
        return sent if not self.failed_spans else f"{sent}; {self.failed_spans} spans NOT delivered"


def traces_endpoint(url: str) -> str:
    """The OTLP/HTTP traces URL: a base URL (`http://127.0.0.1:6006`, Langfuse's `.../api/public/otel`)
    gets `/v1/traces`, as `OTEL_EXPORTER_OTLP_ENDPOINT` does; a URL that ends with it is kept."""
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"--otlp-endpoint must be an http(s) URL such as http://127.0.0.1:6006/v1/traces, got {url!r}")
    url = url.rstrip("/")
    return url if url.endswith(TRACES_PATH) else url + TRACES_PATH


def _ns(moment: datetime | None, default: int) -> int:
    if moment is None:
        return default
    return int((moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp() * 1e9)


class _Counting:
    """The OTLP exporter, counting the spans the endpoint did not take."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.failed = inner, 0

    def export(self, spans: Sequence[Any]) -> Any:
        result = self.inner.export(spans)
        if result.name != "SUCCESS":
            self.failed += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def export_run(run: RunExport, endpoint: str, *, project: str | None = None, timeout_s: float = 30.0) -> ExportSummary:
    """Send `run` to `endpoint` (OTLP/HTTP protobuf); `project` names the Phoenix project
    (`openinference.project.name`). Returns what was sent, with the spans the endpoint refused."""
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
    from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, TraceFlags

    class PlannedTraceIds(RandomIdGenerator):
        """Random ids, except the next root span's trace id when an item joins a logged trace."""

        planned: int | None = None

        def generate_trace_id(self) -> int:
            planned, self.planned = self.planned, None
            return planned if planned is not None else super().generate_trace_id()

    url = traces_endpoint(endpoint)
    results = item_results(run)
    n_spans = 1 + len(run.metrics) + len(results)
    ids = PlannedTraceIds()
    resource = {"service.name": SERVICE, **({"openinference.project.name": project} if project else {})}
    provider = TracerProvider(resource=Resource.create(resource), id_generator=ids)
    exporter = _Counting(OTLPSpanExporter(endpoint=url, timeout=timeout_s))
    # a queue that holds the whole run: the batch processor drops spans beyond its queue
    provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=max(n_spans, BATCH),
                                                   max_export_batch_size=BATCH,
                                                   export_timeout_millis=int(timeout_s * 1000)))
    tracer = provider.get_tracer(SCOPE)
    now = int(datetime.now(UTC).timestamp() * 1e9)
    start, end = _ns(run.started, now), max(_ns(run.ended, now), _ns(run.started, now))
    events = 0
    root = tracer.start_span(f"ragwatch evaluation {run.run_name}", start_time=start, attributes=run_attributes(run))
    root.add_event(EVENT, attributes=gate_event(run), timestamp=end)
    events += 1
    under_run = trace.set_span_in_context(root)
    for result in run.metrics.values():
        attributes = metric_attributes(run, result)
        span = tracer.start_span(f"ragwatch metric {result.name}", context=under_run, start_time=start,
                                 attributes={"openinference.span.kind": SPAN_KIND, **attributes,
                                             "output.value": attributes["gen_ai.evaluation.explanation"]})
        span.add_event(EVENT, attributes=attributes, timestamp=end)
        span.end(end)
        events += 1
    linked = 0
    for item_id, item_events in results.items():
        link = run.links.get(item_id)
        context, links = under_run, []
        if link is not None:
            linked += 1
            links = [Link(root.get_span_context(), {"ragwatch.link": "run"})]
            if link.span_id:
                context = trace.set_span_in_context(NonRecordingSpan(SpanContext(
                    int(link.trace_id, 16), int(link.span_id, 16), is_remote=True,
                    trace_flags=TraceFlags(TraceFlags.SAMPLED))))
            else:  # no root span id in the log: a span of its own at the top of the logged trace
                context, ids.planned = trace.set_span_in_context(trace.INVALID_SPAN), int(link.trace_id, 16)
        span = tracer.start_span(f"ragwatch item {item_id}", context=context, start_time=start, links=links,
                                 attributes=item_attributes(run, item_id, item_events))
        for attributes in item_events:
            span.add_event(EVENT, attributes=attributes, timestamp=end)
        events += len(item_events)
        span.end(end)
    root.end(end)
    run_trace = format(root.get_span_context().trace_id, "032x")
    try:
        provider.force_flush(timeout_millis=int(timeout_s * 1000) * (1 + n_spans // BATCH))
    finally:
        provider.shutdown()
    return ExportSummary(endpoint=url, run_trace_id=run_trace, spans=n_spans, events=events, items=len(results),
                         linked_items=linked, failed_spans=exporter.failed)
