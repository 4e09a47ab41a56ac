"""Tracing of the built-in system: the OTLP/HTTP requests it sends to a collector (a stdlib server here,
decoded with opentelemetry-proto) hold one OpenInference trace per answer, which the span reader
(`ragwatch/logsources/openinference.py`) turns back into the same answers; off by default; a collector that is
down never fails an answer."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic import ValidationError
from test_rag import DOCS, HashEmbedder, RecordingLLM, index

from ragwatch.llm import LLMSettings
from ragwatch.logsources.openinference import read_spans
from ragwatch.logsources.records import LogReadResult
from ragwatch.rag import BuiltinRAG, RagSettings
from ragwatch.rag.tracing import TraceSettings

__all__ = ["index"]

pytestmark = pytest.mark.usefixtures("isolated_cache")


class Collector:
    """A stdlib OTLP/HTTP traces endpoint that keeps every request body."""

    def __init__(self) -> None:
        bodies = self.bodies = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                bodies.append((self.path, self.headers.get("Content-Type"),
                               self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1/traces"

    def spans(self) -> tuple[list[dict[str, Any]], set[str]]:
        """Every span received, as Phoenix's REST API returns it (flat attributes), and the projects."""
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        spans, projects = [], set()
        for _, _, body in self.bodies:
            request = ExportTraceServiceRequest.FromString(body)
            for resource_spans in request.resource_spans:
                resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
                projects.add(resource["openinference.project.name"])
                for scope in resource_spans.scope_spans:
                    for span in scope.spans:
                        spans.append({
                            "name": span.name,
                            "context": {"trace_id": span.trace_id.hex(), "span_id": span.span_id.hex()},
                            "parent_id": span.parent_span_id.hex() or None,
                            "start_time": datetime.fromtimestamp(span.start_time_unix_nano / 1e9, UTC).isoformat(),
                            "status": span.status.code,
                            "attributes": {a.key: _value(a.value) for a in span.attributes}})
        return spans, projects


def _value(value: Any) -> Any:
    return getattr(value, value.WhichOneof("value"))


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = Collector()
    yield server
    server.httpd.shutdown()


def _rag(index, endpoint: str | None, **trace: Any) -> BuiltinRAG:
    settings = RagSettings(top_k=2, retrieval_mode="bm25",
                           trace=None if endpoint is None else TraceSettings(otlp_endpoint=endpoint, **trace))
    return BuiltinRAG(index, HashEmbedder(), RecordingLLM(LLMSettings(model="gpt-4o-mini", cache=False)), settings)


def test_tracing_is_off_by_default_and_a_bad_endpoint_is_named():
    assert RagSettings().trace is None
    with pytest.raises(ValidationError, match="otlp_endpoint must be an http"):
        RagSettings(trace={"otlp_endpoint": "127.0.0.1:6006"})
    with pytest.raises(ValidationError, match="endpoint"):  # a wrong key is an error naming it
        RagSettings(trace={"otlp_endpoint": "http://127.0.0.1:6006/v1/traces", "endpoint": "x"})


def test_each_answer_is_one_openinference_trace_that_reads_back_as_the_same_answer(index, collector):
    rag = _rag(index, collector.url, project="shop-rag")
    questions = ["How do I register a secret?", "What is a stack?"]
    answers = rag.answer_many(questions, mock_response="Use zenml secret create.")
    spans, projects = collector.spans()
    assert collector.bodies[0][:2] == ("/v1/traces", "application/x-protobuf") and projects == {"shop-rag"}
    assert sorted(s["attributes"]["openinference.span.kind"] for s in spans) == ["CHAIN"] * 2 + ["LLM"] * 2 + [
        "RETRIEVER"] * 2
    llm = next(s for s in spans if s["attributes"]["openinference.span.kind"] == "LLM")["attributes"]
    assert llm["llm.model_name"] == "gpt-4o-mini" and "Query: " in llm["llm.input_messages.0.message.content"]
    assert llm["llm.token_count.total"] == llm["llm.token_count.prompt"] + llm["llm.token_count.completion"] > 0

    log = read_spans([(s["context"]["span_id"], s) for s in spans], LogReadResult(source="collector", format="x"))
    assert log.bad == [] and len(log.records) == 2
    by_question = {r.question: r for r in log.records}
    for answer in answers:
        record = by_question[answer.question]
        assert record.answer == answer.answer == "Use zenml secret create."
        assert [(c.text, c.id, c.source) for c in record.contexts] == [
            (c.text, c.chunk_id, c.source) for c in answer.contexts]
        assert [c.score for c in record.contexts] == pytest.approx([c.score for c in answer.contexts])
        assert record.system_version == rag.fingerprint()[:12]
    assert {c.source for r in log.records for c in r.contexts} <= set(DOCS)


def test_tracing_leaves_the_fingerprint_alone(index, collector):
    assert _rag(index, collector.url).fingerprint() == _rag(index, None).fingerprint()


def test_a_collector_that_is_down_never_fails_an_answer(index, caplog):
    rag = _rag(index, "http://127.0.0.1:9/v1/traces", timeout_s=1.0)  # port 9: nothing listens
    with caplog.at_level(logging.WARNING):
        answers = rag.answer_many(["What is a stack?"], mock_response="A set of tools.")
    assert [a.answer for a in answers] == ["A set of tools."] and answers[0].ok
    said = [r.getMessage() for r in caplog.records if r.name == "ragwatch.rag.tracing"]
    assert said == ["tracing: 3 spans not delivered to http://127.0.0.1:9/v1/traces (is `phoenix serve` running "
                    "there?); the answers are unaffected"]
    assert rag.tracer is not None and rag.tracer.exporter.failed_spans == 3


def test_opentelemetry_is_imported_only_when_tracing_is_on():
    code = ("import sys, ragwatch.rag, ragwatch.config; from ragwatch.rag import RagSettings; "
            "RagSettings(trace={'otlp_endpoint': 'http://127.0.0.1:6006/v1/traces'}); "
            "print(sorted({m.split('.')[0] for m in sys.modules if m.startswith(('opentelemetry', 'openinference'))}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_tracing_leaves_the_configs_system_fingerprint_alone():
    from ragwatch.config import FullConfig, system_fingerprint

    config = FullConfig()
    plain = system_fingerprint(config.evaluate.system, config.ingest.embedding, config.ingest.chunking)
    config.evaluate.system.rag.trace = TraceSettings(otlp_endpoint="http://127.0.0.1:6006/v1/traces")
    assert system_fingerprint(config.evaluate.system, config.ingest.embedding, config.ingest.chunking) == plain


def test_a_large_batch_is_sent_in_slices_and_loses_no_span(index, collector, monkeypatch):
    monkeypatch.setattr("ragwatch.rag.tracing.FLUSH_EVERY", 2)  # the batch processor's queue is bounded
    questions = ["What is a stack?", "What is a pipeline?", "How do I register a secret?"]
    _rag(index, collector.url).answer_many(questions, mock_response="An answer.")
    spans, _ = collector.spans()
    assert len(collector.bodies) == 2 and len(spans) == 9  # flushed after answers 2 and 3
