"""The OTLP export, received by an in-process OTLP/HTTP receiver on 127.0.0.1 that decodes the protobuf
`ExportTraceServiceRequest` (opentelemetry-proto, which comes with the exporter): every span, event and
attribute as sent, the trace linkage of logged answers, a refused export counted, and the spans read the
way Langfuse's OTLP ingestion reads them (ids as hex, observation type, output), as far as that can be
checked offline.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ragwatch.artifacts import RunComparisons
from ragwatch.decision.compare import compare_runs
from ragwatch.decision.gate import gate_decision
from ragwatch.export import RunExport, export_run, otel_trace_id, trace_links, traces_endpoint
from ragwatch.export.mapping import EVENT, GATE_EVALUATION, NOT_SCORED
from ragwatch.report.verdicts import flag_lines, reason_lines
from ragwatch.results import ItemScore, JudgeAgreement, LabelledEstimate, MetricInfo, MetricResult
from ragwatch.types import EvalSample

LOGGED = "4bf92f3577b34da6a3ce929d0e0e4736"  # a logged trace with its root span kept (OpenInference)
ROOT_SPAN = "00f067aa0ba902b7"
LANGFUSE = "5c3e0f0bd5a34f7e9b1d2a4c6e8f0a1b"  # a logged trace without a root span id (Langfuse)
UUID_ID = "6f1c2d3e-4a5b-4c6d-8e9f-0a1b2c3d4e5f"  # logged, not an OpenTelemetry trace id


class Receiver:
    """An OTLP/HTTP traces endpoint: decodes each request, or answers `status` without reading it."""

    def __init__(self, status: int = 200) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        self.requests: list[Any] = []
        self.paths: list[str] = []
        self.content_types: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.paths.append(self.path)
                receiver.content_types.append(self.headers["Content-Type"])
                if status == 200:
                    request = ExportTraceServiceRequest()
                    request.ParseFromString(body)
                    receiver.requests.append(request)
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def spans(self) -> list[tuple[dict[str, Any], Any, Any]]:
        """(resource attributes, scope, span) of every span received."""
        return [(_attrs(rs.resource.attributes), ss.scope, span) for request in self.requests
                for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind)


def _attrs(attributes: Any) -> dict[str, Any]:
    return {a.key: _value(a.value) for a in attributes}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()


def _metrics(support_scores: list[float]) -> dict[str, MetricResult]:
    agreement = JudgeAgreement(kappa=0.61, kappa_ci=(0.48, 0.74), balanced_accuracy=0.8,
                               balanced_accuracy_ci=(0.72, 0.87), n=120, data="halueval", labels="human")
    ids = [LOGGED, LANGFUSE, UUID_ID, "q-4"]
    judged = [ItemScore(item_id=i, score=s, passed=s >= 0.5, details={"reason": f"reason {i}"})
              for i, s in zip(ids[:3], (1.0, 0.0, 1.0), strict=True)]
    judge = MetricInfo(family="judge", binary=True, judge_model="openai/judge", prompt_version="v3",
                       agreement=agreement)
    relevance = MetricResult.from_items(
        "answer_relevance", [*judged, ItemScore(item_id="q-4", error="judge reply unparsable")], info=judge)
    relevance.labelled = LabelledEstimate(method="ppi++", score=0.58, ci_low=0.41, ci_high=0.75, n_labels=30, n_items=4)
    support = MetricResult.from_items("answer/context_support", [
        ItemScore(item_id=i, score=s) for i, s in zip(ids, support_scores, strict=True)],
        info=MetricInfo(family="system"))
    reference = MetricResult.from_items("answer/reference_coverage", [
        ItemScore(item_id=i, skipped=True, error="no reference answer") for i in ids], info=MetricInfo(family="system"))
    return {m.name: m for m in (relevance, support, reference)}


def _run() -> RunExport:
    new, old = _metrics([0.9, 0.8, 0.7, 0.6]), _metrics([0.9, 0.85, 0.7, 0.65])
    production = compare_runs(new, old, new_label="this run", old_label="production")
    comparisons = RunComparisons(production=production, production_version="3", gate=gate_decision(production))
    samples = [EvalSample(id=LOGGED, question="q1", kind="logged", metadata={"root_span_id": ROOT_SPAN}),
               EvalSample(id=LANGFUSE.upper(), question="q2", kind="logged"),
               EvalSample(id=UUID_ID, question="q3", kind="logged"),
               EvalSample(id="q-4", question="q4", kind="synthetic")]
    links = trace_links(samples)
    links[LANGFUSE] = links.pop(LANGFUSE.upper())  # the items' ids, as the metrics name them
    return RunExport(run_id="run-uuid-1", run_name="full-run-1", model_name="rag", target="logged answers.jsonl",
                     metrics=new, comparisons=comparisons, links=links,
                     logged_ids=[s.id for s in samples if s.kind == "logged"] + [LANGFUSE])


def test_trace_ids_are_recognised_only_when_they_are_opentelemetry_ids():
    assert otel_trace_id(LOGGED.upper()) == LOGGED
    assert otel_trace_id(UUID_ID) is None and otel_trace_id("0" * 32) is None and otel_trace_id("q-4") is None
    links = _run().links
    assert links[LOGGED].span_id == ROOT_SPAN and links[LANGFUSE].span_id is None and UUID_ID not in links
    assert traces_endpoint("http://h:6006") == "http://h:6006/v1/traces"
    assert traces_endpoint("https://cloud.langfuse.com/api/public/otel/") == \
        "https://cloud.langfuse.com/api/public/otel/v1/traces"
    assert traces_endpoint("http://h/v1/traces") == "http://h/v1/traces"
    with pytest.raises(ValueError, match="http"):
        traces_endpoint("127.0.0.1:6006")


def test_every_span_event_and_attribute_reaches_an_otlp_receiver(receiver):
    run = _run()
    sent = export_run(run, receiver.url, project="ragwatch-test")
    assert receiver.paths and set(receiver.paths) == {"/v1/traces"}
    assert set(receiver.content_types) == {"application/x-protobuf"}
    spans = receiver.spans()
    assert sent.failed_spans == 0 and sent.spans == len(spans) == 1 + 3 + 4
    assert sent.items == 4 and sent.linked_items == 2
    assert sent.events == 1 + 3 + (4 + 4)  # the gate, 3 metrics, 4 items x 2 metrics (skipped items left out)
    resource, scope, _ = spans[0]
    assert resource["service.name"] == "ragwatch" and resource["openinference.project.name"] == "ragwatch-test"
    assert scope.name == "ragwatch.export.otlp"
    by_name = {span.name: span for _, _, span in spans}

    root = by_name["ragwatch evaluation full-run-1"]
    assert root.parent_span_id == b"" and root.trace_id.hex() == sent.run_trace_id
    attributes = _attrs(root.attributes)
    gate = run.comparisons.gate
    assert gate is not None and gate.status == "hold"  # 4 items cannot decide the drop
    assert attributes == {
        "openinference.span.kind": "EVALUATOR", "ragwatch.run.id": "run-uuid-1", "ragwatch.run.name": "full-run-1",
        "ragwatch.system.model_name": "rag", "ragwatch.system.target": "logged answers.jsonl",
        "ragwatch.gate.status": "hold", "ragwatch.gate.promote": False, "ragwatch.gate.reasons": reason_lines(gate),
        "ragwatch.gate.verdict": run.verdict, "ragwatch.comparison.baseline": "production",
        "ragwatch.evaluation.metrics": 3, "output.value": run.verdict,
        **({"ragwatch.gate.flags": flag_lines(gate)} if gate.flags else {})}
    [event] = root.events
    assert event.name == EVENT and _attrs(event.attributes) == {
        "gen_ai.evaluation.name": GATE_EVALUATION, "gen_ai.evaluation.score.label": "hold",
        "gen_ai.evaluation.explanation": run.verdict, "ragwatch.run.id": "run-uuid-1"}

    relevance = by_name["ragwatch metric answer_relevance"]
    assert relevance.trace_id == root.trace_id and relevance.parent_span_id == root.span_id
    attributes = _attrs(relevance.attributes)
    result = run.metrics["answer_relevance"]
    row = run.row("answer_relevance")
    assert row is not None
    expected = {
        "gen_ai.evaluation.name": "answer_relevance", "gen_ai.evaluation.score.value": pytest.approx(2 / 3),
        "gen_ai.evaluation.score.label": row.verdict,
        "ragwatch.run.id": "run-uuid-1",
        "ragwatch.evaluation.ci_low": result.ci_low, "ragwatch.evaluation.ci_high": result.ci_high,
        "ragwatch.evaluation.ci_method": result.ci_method, "ragwatch.evaluation.n": 3,
        "ragwatch.evaluation.n_failed": 1, "ragwatch.evaluation.n_skipped": 0,
        "ragwatch.evaluation.family": "judge", "ragwatch.evaluation.direction": "higher",
        "ragwatch.judge.model": "openai/judge", "ragwatch.judge.prompt_version": "v3",
        "ragwatch.judge.agreement": "measured", "ragwatch.judge.kappa": 0.61, "ragwatch.judge.kappa_ci_low": 0.48,
        "ragwatch.judge.kappa_ci_high": 0.74, "ragwatch.judge.balanced_accuracy": 0.8,
        "ragwatch.judge.agreement_n": 120,
        "ragwatch.labelled.score": 0.58, "ragwatch.labelled.ci_low": 0.41, "ragwatch.labelled.ci_high": 0.75,
        "ragwatch.labelled.method": "ppi++", "ragwatch.labelled.n_labels": 30,
        "ragwatch.comparison.baseline": "production", "ragwatch.comparison.diff": row.diff,
        "ragwatch.comparison.diff_low": row.diff_low, "ragwatch.comparison.diff_high": row.diff_high,
        "ragwatch.comparison.method": row.method, "ragwatch.gate.verdict": row.verdict,
        "ragwatch.gate.gated": row.gated}
    expected = {k: v for k, v in expected.items() if v is not None}
    explanation = attributes.pop("gen_ai.evaluation.explanation")
    assert attributes.pop("openinference.span.kind") == "EVALUATOR" and attributes.pop("output.value") == explanation
    assert attributes == expected
    assert result.ci_low is not None and f"[{result.ci_low:.3g}, {result.ci_high:.3g}]" in explanation
    assert "n=3 scored, 1 failed" in explanation and "30 human labels" in explanation
    assert f"vs production: {row.verdict}" in explanation
    [event] = relevance.events
    assert event.name == EVENT
    assert _attrs(event.attributes) == {**expected, "gen_ai.evaluation.explanation": explanation}

    support = _attrs(by_name["ragwatch metric answer/context_support"].attributes)
    support_row = run.row("answer/context_support")
    assert support_row is not None and support["gen_ai.evaluation.score.label"] == support_row.verdict
    assert support["gen_ai.evaluation.score.value"] == pytest.approx(0.75)
    assert "ragwatch.judge.agreement" not in support  # not a judge: no agreement to state
    unscored = _attrs(by_name["ragwatch metric answer/reference_coverage"].attributes)
    assert unscored["error.type"] == NOT_SCORED and "gen_ai.evaluation.score.value" not in unscored
    assert unscored["ragwatch.evaluation.n"] == 0 and unscored["ragwatch.evaluation.n_skipped"] == 4

    # a logged answer with its root span: a child of that span, in its trace, linked to the run
    item = by_name[f"ragwatch item {LOGGED}"]
    assert item.trace_id.hex() == LOGGED and item.parent_span_id.hex() == ROOT_SPAN
    assert [(link.trace_id, link.span_id) for link in item.links] == [(root.trace_id, root.span_id)]
    attributes = _attrs(item.attributes)
    assert json.loads(attributes.pop("output.value")) == {
        "answer_relevance": {"value": 1.0, "label": "pass", "explanation": f"reason {LOGGED}"},
        "answer/context_support": {"value": 0.9}}
    assert attributes == {"openinference.span.kind": "EVALUATOR", "ragwatch.run.id": "run-uuid-1",
                          "ragwatch.item.id": LOGGED, "ragwatch.score.answer_relevance": 1.0,
                          "ragwatch.score.answer/context_support": 0.9, "output.mime_type": "application/json"}
    assert [(e.name, _attrs(e.attributes)) for e in item.events] == [
        (EVENT, {"gen_ai.evaluation.name": "answer_relevance", "gen_ai.evaluation.score.value": 1.0,
                 "gen_ai.evaluation.score.label": "pass", "gen_ai.evaluation.explanation": f"reason {LOGGED}",
                 "ragwatch.run.id": "run-uuid-1", "ragwatch.item.id": LOGGED}),
        (EVENT, {"gen_ai.evaluation.name": "answer/context_support", "gen_ai.evaluation.score.value": 0.9,
                 "ragwatch.run.id": "run-uuid-1", "ragwatch.item.id": LOGGED})]

    # a logged trace without its root span: a span of its own at the top of that trace
    item = by_name[f"ragwatch item {LANGFUSE}"]
    assert item.trace_id.hex() == LANGFUSE and item.parent_span_id == b"" and len(item.links) == 1
    assert _attrs(item.events[0].attributes)["gen_ai.evaluation.score.label"] == "fail"
    # a logged id that is no trace id: under the run, the log's id as gen_ai.response.id
    item = by_name[f"ragwatch item {UUID_ID}"]
    assert item.trace_id == root.trace_id and item.parent_span_id == root.span_id and not item.links
    assert _attrs(item.attributes)["gen_ai.response.id"] == UUID_ID
    # an item of the evaluation set: under the run; its failed judgement says why
    item = by_name["ragwatch item q-4"]
    assert item.parent_span_id == root.span_id and "gen_ai.response.id" not in _attrs(item.attributes)
    failed = _attrs(item.events[0].attributes)
    assert failed == {"gen_ai.evaluation.name": "answer_relevance", "error.type": NOT_SCORED,
                      "gen_ai.evaluation.explanation": "judge reply unparsable", "ragwatch.run.id": "run-uuid-1",
                      "ragwatch.item.id": "q-4"}
    assert all(span.end_time_unix_nano >= span.start_time_unix_nano > 0 for _, _, span in spans)


# What Langfuse's OTLP ingestion (packages/shared/src/server/otel: OtelIngestionProcessor.ts,
# ObservationTypeMapper.ts) reads from a span, for the keys this export sets: ids are the hex of the
# id bytes; `openinference.span.kind` EVALUATOR maps to the EVALUATOR observation type (priority 2,
# no `langfuse.observation.type` set); `output.value` is the observation's output (OpenInference keys);
# metadata holds resource and scope attributes plus `langfuse.observation.metadata.*` only, and no
# attribute or span event becomes a score (langfuse/langfuse discussion 14652).
LANGFUSE_TYPES = {"CHAIN": "CHAIN", "RETRIEVER": "RETRIEVER", "LLM": "GENERATION", "EMBEDDING": "EMBEDDING",
                  "AGENT": "AGENT", "TOOL": "TOOL", "GUARDRAIL": "GUARDRAIL", "EVALUATOR": "EVALUATOR"}


def _as_langfuse(span: Any) -> dict[str, Any]:
    attributes = _attrs(span.attributes)
    return {"traceId": span.trace_id.hex(), "id": span.span_id.hex(),
            "parentObservationId": span.parent_span_id.hex() or None, "name": span.name,
            "type": LANGFUSE_TYPES.get(attributes.get("openinference.span.kind"), "SPAN"),
            "output": attributes.get("langfuse.observation.output", attributes.get("output.value")),
            "level": "ERROR" if span.status.code == 2 else "DEFAULT"}


def test_spans_read_as_langfuse_evaluator_observations_in_the_logged_traces(receiver):
    export_run(_run(), receiver.url)
    observations = [_as_langfuse(span) for _, _, span in receiver.spans()]
    assert all(len(o["traceId"]) == 32 and len(o["id"]) == 16 for o in observations)
    assert {o["type"] for o in observations} == {"EVALUATOR"} and {o["level"] for o in observations} == {"DEFAULT"}
    by_trace = {o["traceId"]: o for o in observations if o["name"].startswith("ragwatch item")}
    # the item of a Langfuse-logged trace is an observation of that very trace, at its top
    assert by_trace[LANGFUSE]["parentObservationId"] is None
    assert json.loads(by_trace[LANGFUSE]["output"])["answer_relevance"]["label"] == "fail"
    assert by_trace[LOGGED]["parentObservationId"] == ROOT_SPAN
    assert all(o["output"] for o in observations)


def test_a_refused_export_is_counted_not_hidden():
    refusing = Receiver(status=400)  # 4xx: not retried
    try:
        sent = export_run(_run(), refusing.url, timeout_s=5)
    finally:
        refusing.server.shutdown()
    assert sent.failed_spans == sent.spans == 8 and "8 spans NOT delivered" in sent.line()
