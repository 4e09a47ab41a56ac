"""The monitor's verdicts written back to Phoenix: an annotation on each evaluated trace's root span,
which a Phoenix user sees in its UI (`POST /v1/span_annotations`).

Example:
    >>> annotate_window(PhoenixSource(), report, current)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from ragwatch.logsources.phoenix import call
from ragwatch.logsources.settings import PhoenixSource
from ragwatch.monitoring.monitor import MonitorReport, WindowEvaluation


def window_annotations(source: PhoenixSource, report: MonitorReport, current: WindowEvaluation
                       ) -> list[dict[str, Any]]:
    """One annotation per evaluated trace (on its root span): the window's verdict vs the previous
    window as the label, the answer's context support as the score, every metric's verdict explained."""
    first = report.comparisons[0] if report.comparisons else None
    verdicts = first.verdicts() if first else {}
    label = first.verdict.verdict if first else "undecided"
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
        call(f"{source.url.rstrip('/')}/v1/span_annotations?sync=true", {"data": annotations})
    return len(annotations) if source.annotate else 0
