"""OpenInference spans -> records: what Arize Phoenix exports and `openinference-instrumentation-*` emit.

A span carries `context.trace_id`, `context.span_id`, `parent_id`, `span_kind` (or the attribute
`openinference.span.kind`: CHAIN, RETRIEVER, LLM, ...), `start_time` and `attributes`, flat
(`"attributes.input.value"`, Phoenix's span dataframe) or nested (`{"attributes": {"input": {"value": ..}}}`).
One trace is one answer: the question is the root span's `input.value` (else the retriever's), the
answer the root's `output.value` (else the last LLM span's), the contexts the RETRIEVER spans'
`retrieval.documents.N.document.{content,id,score,metadata}` in rank order. A trace with no retriever
span is a `missing_contexts` bad row ("no retriever span"), never guessed.

Example:
    >>> print(read_openinference("spans.jsonl").describe())  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragwatch.logsources.feedback_parse import parse_feedback
from ragwatch.logsources.records import LogContext, LogReadResult, LogRecord, collect, parse_timestamp, string_list
from ragwatch.logsources.traces import ANSWER_KEYS, QUESTION_KEYS, Loaded, flatten, load_objects, maybe_json, text_of

EXPECTED = ("OpenInference spans: one object per span with context.trace_id, context.span_id, parent_id, "
            "span_kind and attributes (input.value, output.value, retrieval.documents.N.document.content)")
_DOC = re.compile(r"^retrieval\.documents\.(\d+)\.document\.(content|id|score|metadata)(?:\.(.+))?$")


class Span:
    """One span, its attributes flattened to dotted keys without the `attributes.` prefix."""

    def __init__(self, raw: dict[str, Any], where: str) -> None:
        flat = flatten(raw)
        self.where = where
        self.trace_id = _first(flat, "context.trace_id", "trace_id", "traceId", "context.traceId")
        self.span_id = _first(flat, "context.span_id", "span_id", "spanId", "context.spanId")
        self.parent_id = _first(flat, "parent_id", "parent_span_id", "parentSpanId")
        self.attributes = {k[len("attributes."):]: v for k, v in flat.items() if k.startswith("attributes.")}
        self.kind = str(_first(flat, "span_kind", "spanKind") or self.attributes.get("openinference.span.kind")
                        or "").upper()
        self.start_time = _first(flat, "start_time", "startTime")

    def value(self, name: str) -> Any:
        return self.attributes.get(name)

    def documents(self) -> list[LogContext]:
        docs: dict[int, dict[str, Any]] = defaultdict(dict)
        for key, value in self.attributes.items():
            if (m := _DOC.match(key)) is None:
                continue
            index, field, sub = int(m.group(1)), m.group(2), m.group(3)
            if field == "metadata":
                meta = docs[index].setdefault("metadata", {})
                if sub:
                    meta[sub] = value
                elif isinstance(parsed := maybe_json(value), dict):
                    meta.update(parsed)
            else:
                docs[index][field] = value
        out = []
        for index in sorted(docs):
            doc = docs[index]
            if not isinstance(doc.get("content"), str):
                raise ValueError(f"span {self.span_id}: retrieval document {index} has no document.content")
            meta = doc.get("metadata", {})
            source = next((str(meta[k]) for k in ("source", "file_path", "url", "file_name") if meta.get(k)), None)
            score = doc.get("score")
            out.append(LogContext(text=doc["content"], id=None if doc.get("id") is None else str(doc["id"]),
                                  source=source, score=float(score) if isinstance(score, (int, float)) else None))
        return out


def _first(flat: dict[str, Any], *keys: str) -> Any:
    return next((flat[k] for k in keys if flat.get(k) not in (None, "")), None)


def read_openinference(path: str | Path) -> LogReadResult:
    """Every trace of a span export as a record or a bad row, with counts."""
    path = Path(path)
    result = LogReadResult(source=str(path), format="openinference", expected=EXPECTED)
    return read_spans(load_objects(path, result, ("spans", "data")), result)


def read_spans(spans: Sequence[Loaded | tuple[str, dict[str, Any]]], result: LogReadResult) -> LogReadResult:
    """Spans (each with where it was read, and why it is unusable if it is) grouped by trace into records
    and bad rows, into `result`. An unusable span (bytes that are not UTF-8) costs its whole trace: the
    answer is not pieced together from the spans that are left."""
    traces: dict[str, list[Span]] = defaultdict(list)
    spoilt: dict[str, str] = {}  # trace id -> why one of its spans is unusable
    for where, raw, *rest in spans:
        error = rest[0] if rest else None
        span = Span(raw, where)
        if span.trace_id is None:
            result.reject(where, error or "a span without context.trace_id (nor trace_id / traceId)")
            continue
        traces[str(span.trace_id)].append(span)
        if error:
            spoilt.setdefault(str(span.trace_id), f"its span at {where}: {error}")
    items = ((f"trace {tid}", spoilt.get(tid, (tid, group))) for tid, group in traces.items())
    return collect(result, items, lambda trace, where: _record(*trace, where))


def _record(trace_id: str, spans: list[Span], where: str) -> LogRecord | str:
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if s.parent_id is None or s.parent_id not in ids]
    if len(roots) > 1:  # the same trace id twice in one export: two root spans
        raise ValueError(f"{len(roots)} root spans (at {', '.join(r.where for r in roots[:3])}): one trace is one "
                         "answer; export each request as its own trace")
    root = roots[0] if roots else spans[0]
    ordered = sorted(spans, key=lambda s: str(s.start_time or ""))
    retrievers = [s for s in ordered if s.kind == "RETRIEVER"]
    llms = [s for s in ordered if s.kind == "LLM"]
    question = text_of(root.value("input.value"), QUESTION_KEYS)
    if question is None and retrievers:
        question = text_of(retrievers[0].value("input.value"), QUESTION_KEYS)
    if question is None:
        raise ValueError("no question: neither the root span nor a retriever span has input.value")
    if not retrievers:
        kinds = sorted({s.kind or "?" for s in spans})
        return f"a span tree without a retriever span (span kinds: {', '.join(kinds)})"
    answer = text_of(root.value("output.value"), ANSWER_KEYS) if root.kind != "RETRIEVER" else None
    if answer is None and llms:
        last = llms[-1]
        answer = (text_of(last.value("output.value"), ANSWER_KEYS)
                  or last.value("llm.output_messages.0.message.content"))
    if root.start_time is None:
        raise ValueError("the root span has no start_time")
    metadata = maybe_json(root.value("metadata"))
    if not isinstance(metadata, dict):  # flattened, as Phoenix returns it: metadata.feedback.rating -> nested
        metadata = {}
        for key, value in root.attributes.items():
            if key.startswith("metadata."):
                *parents, leaf = key[len("metadata."):].split(".")
                node = metadata
                for part in parents:
                    node = node.setdefault(part, {})
                node[leaf] = value
    contexts = [c for s in retrievers for c in s.documents()]
    version = metadata.get("system_version") or metadata.get("version") or root.value("llm.model_name") \
        or (llms[-1].value("llm.model_name") if llms else None)
    record = LogRecord(
        trace_id=trace_id, question=question, answer=str(answer or ""), contexts=contexts,
        timestamp=parse_timestamp(root.start_time), system_version=None if version is None else str(version),
        reference_answer=metadata.get("reference_answer"), relevant=string_list(metadata.get("relevant"), "relevant"),
        feedback=parse_feedback(metadata.get("feedback"), metadata.get("feedback_scale")), where=where,
        metadata={"root_span_id": root.span_id},
    )
    return record
