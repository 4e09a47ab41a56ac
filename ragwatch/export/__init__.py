"""Results where teams look: an evaluation run as OpenTelemetry GenAI evaluation results, sent to any
OTLP endpoint (`mapping`: what each span and event carries; `otlp`: sending it)."""

from ragwatch.export.mapping import RunExport, TraceLink, otel_trace_id, trace_links
from ragwatch.export.otlp import ExportSummary, export_run, traces_endpoint

__all__ = ["ExportSummary", "RunExport", "TraceLink", "export_run", "otel_trace_id", "trace_links", "traces_endpoint"]
