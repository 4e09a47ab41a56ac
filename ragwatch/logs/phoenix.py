"""Arize Phoenix as a trace source, through its REST API (stdlib HTTP: no Phoenix package here):
pull a project's spans (OpenInference, read by `openinference.read_spans`), and write the monitor's
verdicts back to each evaluated trace's root span as an annotation a Phoenix user sees in its UI.

Example:
    >>> log = pull_spans(PhoenixSource(url="http://127.0.0.1:6006"))  # doctest: +SKIP
    >>> annotate_window(PhoenixSource(), report, current)  # doctest: +SKIP
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from typing import TYPE_CHECKING, Any

from ragwatch.log_settings import PhoenixSource
from ragwatch.logs.openinference import EXPECTED, read_spans
from ragwatch.logs.records import LogReadResult

if TYPE_CHECKING:
    from ragwatch.logs.monitor import MonitorReport, WindowEvaluation

TIMEOUT_S = 30.0


def _call(url: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="GET" if body is None else "POST",
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            text = response.read().decode()
    except OSError as exc:
        raise ValueError(f"Phoenix at {url}: {exc}; is `phoenix serve` running there?") from exc
    return json.loads(text) if text else {}


def pull_spans(source: PhoenixSource, page: int = 1000) -> LogReadResult:
    """Every span of the project (`GET /v1/projects/{project}/spans`, page by page), as records."""
    base = source.url.rstrip("/")
    spans: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        query = {"limit": page, **({"cursor": cursor} if cursor else {})}
        reply = _call(f"{base}/v1/projects/{urllib.parse.quote(source.project)}/spans?"
                      + urllib.parse.urlencode(query))
        spans += [s for s in reply.get("data", []) if isinstance(s, dict)]
        cursor = reply.get("next_cursor")
        if not cursor:
            break
    result = LogReadResult(source=f"{base} project {source.project}", format="phoenix", expected=EXPECTED,
                           found=f"{len(spans)} spans" if spans else "no span in the project yet")
    return read_spans([(f"span {(s.get('context') or {}).get('span_id', i)}", s) for i, s in enumerate(spans)], result)


def window_annotations(source: PhoenixSource, report: MonitorReport, current: WindowEvaluation
                       ) -> list[dict[str, Any]]:
    """One annotation per evaluated trace (on its root span): the window's verdict vs the previous
    window as the label, the answer's context support as the score, every metric's verdict explained."""
    first = report.comparisons[0] if report.comparisons else None
    verdicts = first.verdicts() if first else {}
    label = ("drift" if "drift" in verdicts.values() else "no drift" if verdicts and set(verdicts.values()) == {
        "no drift"} else "undecided")
    explanation = (f"ragwatch monitor, window {current.window.name}: {report.verdict_line()}. "
                   + (f"{first.label} ({first.old_window}, unpaired): "
                      + "; ".join(f"{m} {v}" for m, v in verdicts.items()) if first else "no earlier window"))
    support = current.metrics.metrics.get("answer/context_support")
    scores = {it.item_id: it.score for it in support.items} if support else {}
    out = []
    for record in current.window.records:
        span_id = record.metadata.get("root_span_id")
        if not span_id:
            continue
        result: dict[str, Any] = {"label": label, "explanation": explanation}
        if scores.get(record.trace_id) is not None:
            result["score"] = scores[record.trace_id]
        out.append({"span_id": span_id, "name": source.annotation_name, "annotator_kind": "CODE",
                    "result": result, "metadata": {"window": current.window.name}})
    return out


def annotate_window(source: PhoenixSource, report: MonitorReport, current: WindowEvaluation) -> int:
    """Write the window's verdicts to Phoenix (`POST /v1/span_annotations`); the number written."""
    annotations = window_annotations(source, report, current)
    if annotations and source.annotate:
        _call(f"{source.url.rstrip('/')}/v1/span_annotations?sync=true", {"data": annotations})
    return len(annotations) if source.annotate else 0
