"""Langfuse trace exports -> records.

Reads what Langfuse gives out: a trace downloaded from its UI (`trace-<id>.json`: the trace with its
`observations` and `scores`), a list of such traces (or `{"data": [...]}` from the public API, or JSONL,
one trace per line), and a flat observation export (objects with `traceId` and `type`, grouped by trace).

One trace is one answer: the question is the trace's `input` (else the root observation's), the answer
the trace's `output` (else the last GENERATION's output), the contexts the output of the retriever
observation (`type` RETRIEVER, or a span whose name says retriev/search): a list of strings or of
documents (`page_content` / `content` / `text`, with `id` and `metadata.source`). A trace without a
retriever observation is a `missing_contexts` bad row. The system version is the trace's `version`
(else `release`); feedback is the score named in `feedback_scores` (BOOLEAN / 0-1 thumbs, NUMERIC
with `feedback_scale`, CATEGORICAL up/down).

Example:
    >>> print(read_langfuse("traces.json").describe())  # doctest: +SKIP
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragwatch.logsources.feedback_parse import parse_feedback
from ragwatch.logsources.records import (
    Feedback,
    LogContext,
    LogReadResult,
    LogRecord,
    collect,
    parse_timestamp,
    string_list,
)
from ragwatch.logsources.traces import ANSWER_KEYS, QUESTION_KEYS, load_objects, maybe_json, text_of

EXPECTED = ("Langfuse traces: objects with id, input, output, timestamp and observations (a retriever among "
            "them), or a flat observation export (objects with traceId and type)")
FEEDBACK_SCORES = ("user_feedback", "user-feedback", "feedback", "thumbs", "rating")
_DOC_TEXT = ("page_content", "content", "text", "document", "pageContent")


def read_langfuse(path: str | Path, *, feedback_scores: Sequence[str] = FEEDBACK_SCORES,
                  feedback_scale: tuple[float, float] | None = None) -> LogReadResult:
    """Every trace of a Langfuse export as a record or a bad row, with counts."""
    path = Path(path)
    result = LogReadResult(source=str(path), format="langfuse", expected=EXPECTED)
    objects = load_objects(path, result, ("data", "traces", "observations"))
    traces: list[tuple[str, dict[str, Any] | str]] = []  # a string: why the trace is unusable
    loose: dict[str, list[dict[str, Any]]] = defaultdict(list)
    spoilt: dict[str, str] = {}  # trace id -> why one of its observations is unusable
    for where, obj, error in objects:
        if "observations" in obj or "traceId" not in obj:
            label = f"trace {obj['id']}" if obj.get("id") and isinstance(obj["id"], str | int) else where
            traces.append((label, obj if error is None else f"{where}: {error}"))
        else:  # a flat observation export
            loose[str(obj["traceId"])].append(obj)
            if error is not None:
                spoilt.setdefault(str(obj["traceId"]), f"its observation at {where}: {error}")
    traces += [(f"trace {tid}", spoilt.get(tid) or {"id": tid, "observations": obs}) for tid, obs in loose.items()]
    return collect(result, traces, lambda trace, where: _record(trace, where, feedback_scores, feedback_scale))


def _record(trace: dict[str, Any], where: str, feedback_scores: Sequence[str],
            feedback_scale: tuple[float, float] | None) -> LogRecord | str:
    if not trace.get("id"):
        raise ValueError(f"a trace without an id (fields: {', '.join(map(repr, list(trace)[:12]))})")
    observations = [o for o in trace.get("observations") or [] if isinstance(o, dict)]
    observations.sort(key=lambda o: str(o.get("startTime") or ""))
    ids = {o.get("id") for o in observations}
    roots = [o for o in observations if o.get("parentObservationId") not in ids]
    question = text_of(trace.get("input"), QUESTION_KEYS) or next(
        (q for o in roots if (q := text_of(o.get("input"), QUESTION_KEYS))), None)
    if question is None:
        raise ValueError("no question: the trace has no input (nor its root observation)")
    retrievers = [o for o in observations if _is_retriever(o)]
    if not retrievers:
        kinds = sorted({f"{o.get('type', '?')} {o.get('name', '')}".strip() for o in observations})
        return ("no retriever observation (type RETRIEVER, or a span named retriev*/search*); "
                f"observations: {', '.join(kinds) or 'none'}")
    generations = [o for o in observations if str(o.get("type", "")).upper() == "GENERATION"]
    answer = text_of(trace.get("output"), ANSWER_KEYS)
    if answer is None and generations:
        answer = text_of(generations[-1].get("output"), ANSWER_KEYS)
    when = trace.get("timestamp") or (observations[0].get("startTime") if observations else None)
    if when is None:
        raise ValueError("no timestamp: the trace has none and no observation has a startTime")
    metadata = maybe_json(trace.get("metadata"))
    metadata = metadata if isinstance(metadata, dict) else {}
    version = trace.get("version") or trace.get("release") or metadata.get("system_version")
    record = LogRecord(
        trace_id=str(trace["id"]), question=question, answer=str(answer or ""),
        contexts=[c for o in retrievers for c in _documents(o)], timestamp=parse_timestamp(when),
        reference_answer=metadata.get("reference_answer"), system_version=None if version is None else str(version),
        relevant=string_list(metadata.get("relevant"), "relevant"),
        feedback=_feedback(trace.get("scores") or [], feedback_scores, feedback_scale), where=where,
    )
    return record


def _is_retriever(obs: dict[str, Any]) -> bool:
    kind = str(obs.get("type", "")).upper()
    name = str(obs.get("name", "")).lower()
    return kind == "RETRIEVER" or (kind in ("SPAN", "TOOL", "CHAIN") and ("retriev" in name or "search" in name))


def _documents(obs: dict[str, Any]) -> list[LogContext]:
    output = maybe_json(obs.get("output"))
    if isinstance(output, dict):
        output = next((output[k] for k in ("documents", "nodes", "contexts", "results") if k in output), None)
    if output is None:
        return []
    if not isinstance(output, list):
        raise ValueError(f"retriever observation {obs.get('id')}: output is a {type(output).__name__}, "
                         "expected a list of documents")
    out = []
    for i, doc in enumerate(output):
        if isinstance(doc, str):
            out.append(LogContext(text=doc))
            continue
        if not isinstance(doc, dict):
            raise ValueError(f"retriever observation {obs.get('id')}: document {i} is a {type(doc).__name__}")
        if isinstance(doc.get("node"), dict):  # LlamaIndex NodeWithScore
            doc = {**doc["node"], "score": doc.get("score")}
        text = next((doc[k] for k in _DOC_TEXT if isinstance(doc.get(k), str)), None)
        if text is None:
            raise ValueError(f"retriever observation {obs.get('id')}: document {i} has no text "
                             f"({'/'.join(_DOC_TEXT)}); fields: {sorted(doc)}")
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
        source = next((str(meta[k]) for k in ("source", "file_path", "url") if meta.get(k)), None)
        ident = doc.get("id", doc.get("id_", meta.get("id")))
        score = doc.get("score")
        out.append(LogContext(text=text, id=None if ident is None else str(ident), source=source,
                              score=float(score) if isinstance(score, (int, float)) else None))
    return out


def _feedback(scores: list[Any], names: Sequence[str], scale: tuple[float, float] | None) -> Feedback | None:
    wanted = {n.lower() for n in names}
    for score in scores:
        if not isinstance(score, dict) or str(score.get("name", "")).lower() not in wanted:
            continue
        kind = str(score.get("dataType", "")).upper()
        value = score.get("stringValue") if kind == "CATEGORICAL" else score.get("value")
        if kind == "BOOLEAN":
            return Feedback(kind="thumbs", value=1.0 if value in (1, 1.0, True, "1", "true", "True") else 0.0)
        return parse_feedback(value, scale if kind == "NUMERIC" else None)
    return None
