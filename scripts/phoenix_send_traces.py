"""Send logged answers to an Arize Phoenix server as OpenInference traces (run it with Phoenix's
Python: the `arize-phoenix-otel` package; ragwatch itself only speaks Phoenix's REST API).

Each answer of a ragwatch JSONL log becomes one trace, at the answer's own time: a CHAIN root span
(`input.value` the question, `output.value` the answer, `metadata` the system version and feedback),
a RETRIEVER child (`retrieval.documents.N.document.content/id/metadata`) and an LLM child, exactly the
span tree `openinference-instrumentation-*` emits for a RAG query. A record without contexts is sent
without its retriever span (the monitor reports it: "a span tree without a retriever span").

Usage:
    /path/to/phoenix-venv/bin/python scripts/phoenix_send_traces.py LOG.jsonl[.gz] --url http://127.0.0.1:6006
"""

from __future__ import annotations

import argparse
import gzip
import json
from datetime import datetime
from pathlib import Path

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode
from phoenix.otel import register


def _ns(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1e9)


def send(path: str, url: str, project: str) -> int:
    provider = register(endpoint=f"{url.rstrip('/')}/v1/traces", project_name=project, batch=False,
                        set_global_tracer_provider=False, verbose=False)
    tracer = provider.get_tracer("ragwatch.phoenix_send_traces")
    sent = 0
    raw = Path(path).read_bytes()
    lines = (gzip.decompress(raw) if path.endswith(".gz") else raw).decode("utf-8").splitlines()  # .gz as is
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue  # the monitor reads the file's bad lines itself; Phoenix gets the answers
        if not isinstance(row, dict) or "timestamp" not in row:
            continue
        start = _ns(row["timestamp"])
        meta = {k: row[k] for k in ("system_version", "feedback", "reference_answer") if row.get(k) is not None}
        root = tracer.start_span("rag query", start_time=start, attributes={
            "openinference.span.kind": "CHAIN", "input.value": row["question"],
            "output.value": row.get("answer", ""), "metadata": json.dumps(meta)})
        context = trace.set_span_in_context(root)
        if row.get("contexts") is not None:
            attributes = {"openinference.span.kind": "RETRIEVER", "input.value": row["question"]}
            for i, c in enumerate(row["contexts"]):
                c = c if isinstance(c, dict) else {"text": c}
                attributes[f"retrieval.documents.{i}.document.content"] = c["text"]
                if c.get("id"):
                    attributes[f"retrieval.documents.{i}.document.id"] = str(c["id"])
                if c.get("source"):
                    attributes[f"retrieval.documents.{i}.document.metadata"] = json.dumps({"source": c["source"]})
            tracer.start_span("retrieve", context=context, start_time=start, attributes=attributes).end(start + 1000)
        llm = tracer.start_span("generate", context=context, start_time=start, attributes={
            "openinference.span.kind": "LLM", "output.value": row.get("answer", ""), "llm.model_name": "logged"})
        llm.end(start + 2000)
        root.set_status(Status(StatusCode.OK))
        root.end(start + 3000)
        sent += 1
    provider.force_flush()
    return sent


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log")
    parser.add_argument("--url", default="http://127.0.0.1:6006")
    parser.add_argument("--project", default="default")
    args = parser.parse_args()
    print(f"sent {send(args.log, args.url, args.project)} traces to {args.url} project {args.project}")
