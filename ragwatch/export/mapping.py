"""An evaluation run as OpenTelemetry GenAI evaluation results: what each span and event carries.

The semantic conventions' `gen_ai.evaluation.result` event carries `gen_ai.evaluation.name`,
`gen_ai.evaluation.score.value`, `gen_ai.evaluation.score.label`, `gen_ai.evaluation.explanation`,
`error.type` and `gen_ai.response.id`; it has no field for an interval, its n, its method, a judge's
agreement or a gate's verdict, so those are named in the `ragwatch.*` namespace until the convention
settles (docs/monitoring.md, "Export to OpenTelemetry", lists every key). This module only maps:
plain dicts of attributes, no OpenTelemetry import; `ragwatch.export.otlp` sends them.

Example:
    >>> links = trace_links(samples)  # doctest: +SKIP
    >>> run = RunExport(run_id="…", run_name="full-2026…", metrics=metrics, comparisons=comparisons, links=links)
    >>> metric_attributes(run, run.metrics["answer/context_support"])  # doctest: +SKIP
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from ragwatch.artifacts import RunComparisons
from ragwatch.decision.compare import MetricComparison
from ragwatch.report.summary import verdict_line
from ragwatch.report.verdicts import flag_lines, reason_lines
from ragwatch.results import ItemScore, MetricResult
from ragwatch.types import EvalSample

EVENT = "gen_ai.evaluation.result"  # the semantic conventions' event name
GATE_EVALUATION = "ragwatch.gate"  # gen_ai.evaluation.name of the run's verdict
SPAN_KIND = "EVALUATOR"  # openinference.span.kind: Phoenix shows it, Langfuse maps it to an evaluator observation
NOT_SCORED = "ragwatch.not_scored"  # error.type of a metric or item that could not be scored
ROOT_SPAN_KEY = "root_span_id"  # the logged trace's root span, when the log carried it (OpenInference, Phoenix)
_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_SPAN_ID = re.compile(r"[0-9a-f]{16}")

Attributes = dict[str, Any]


class TraceLink(BaseModel):
    """Where a logged answer lives in OpenTelemetry: its trace and (when the log kept it) its root span."""

    trace_id: str  # 32 lowercase hex digits
    span_id: str | None = None  # 16 lowercase hex digits


class RunExport(BaseModel):
    """What is exported of one evaluation run: its metrics (levels, intervals, per-item scores), its
    comparisons and gate, and, per item id, the logged trace it answers (`trace_links`)."""

    run_id: str
    run_name: str
    started: datetime | None = None
    ended: datetime | None = None
    model_name: str | None = None
    target: str | None = None
    metrics: dict[str, MetricResult]
    comparisons: RunComparisons = Field(default_factory=RunComparisons)
    links: dict[str, TraceLink] = Field(default_factory=dict)
    logged_ids: list[str] = Field(default_factory=list)  # items answered from a log, linkable or not

    @property
    def verdict(self) -> str:
        """The run's one verdict line, as the printout and report say it."""
        return verdict_line(self.comparisons.named(), self.comparisons.gate)[1]

    def row(self, metric: str) -> MetricComparison | None:
        """The metric's row of the production comparison (the one the gate decides on), else of the previous run."""
        for comparison in (self.comparisons.production, self.comparisons.previous):
            if comparison is not None:
                found = next((r for r in comparison.rows if r.metric == metric), None)
                if found is not None:
                    return found
        return None

    def baseline(self) -> str | None:
        return "production" if self.comparisons.production else "previous run" if self.comparisons.previous else None


def otel_trace_id(value: str) -> str | None:
    """The id as an OpenTelemetry trace id (32 hex digits, not all zero), else None. A UUID with dashes
    is not one: Langfuse and Phoenix would file its hex under another trace."""
    text = value.strip().lower()
    return text if _TRACE_ID.fullmatch(text) and text.strip("0") else None


def trace_links(samples: Sequence[EvalSample]) -> dict[str, TraceLink]:
    """Item id -> the logged trace it answers, for the samples read from a log (`kind` "logged", id = the
    log's trace id) whose id is an OpenTelemetry trace id; the root span when the log kept it."""
    links = {}
    for sample in samples:
        trace_id = otel_trace_id(sample.id) if sample.kind == "logged" else None
        if trace_id is None:
            continue
        span = str(sample.metadata.get(ROOT_SPAN_KEY) or "").lower()
        links[sample.id] = TraceLink(trace_id=trace_id, span_id=span if _SPAN_ID.fullmatch(span) and span.strip("0")
                                     else None)
    return links


def _clean(attributes: Attributes) -> Attributes:
    """OpenTelemetry takes no None: an absent figure is an absent key."""
    return {k: v for k, v in attributes.items() if v is not None and v != []}


def run_attributes(run: RunExport) -> Attributes:
    """The run span: its identity, the system, and the gate's verdict."""
    gate = run.comparisons.gate
    return _clean({
        "openinference.span.kind": SPAN_KIND,
        "ragwatch.run.id": run.run_id, "ragwatch.run.name": run.run_name,
        "ragwatch.system.model_name": run.model_name, "ragwatch.system.target": run.target,
        "ragwatch.gate.status": gate.status if gate else None,
        "ragwatch.gate.promote": gate.promote if gate else None,
        "ragwatch.gate.reasons": reason_lines(gate) if gate else None,
        "ragwatch.gate.flags": flag_lines(gate) if gate else None,
        "ragwatch.gate.verdict": run.verdict,
        "ragwatch.comparison.baseline": run.baseline(),
        "ragwatch.evaluation.metrics": len(run.metrics),
        "output.value": run.verdict,
    })


def gate_event(run: RunExport) -> Attributes:
    """The run's verdict as one evaluation result: the gate's status as the label, the verdict line as
    the explanation."""
    gate = run.comparisons.gate
    return _clean({"gen_ai.evaluation.name": GATE_EVALUATION,
                   "gen_ai.evaluation.score.label": gate.status if gate else "no_gate",
                   "gen_ai.evaluation.explanation": run.verdict,
                   "ragwatch.run.id": run.run_id})


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


def metric_explanation(result: MetricResult, row: MetricComparison | None, baseline: str | None) -> str:
    """One sentence: the level, its interval, n, and the verdict against the baseline."""
    interval = (f" [{_fmt(result.ci_low)}, {_fmt(result.ci_high)}] ({result.ci_method or 'interval'})"
                if result.ci_low is not None and result.ci_high is not None else "")
    text = (f"{result.name} {_fmt(result.score)}{interval}, n={result.n_scored} scored, {result.n_failed} failed")
    if result.labelled is not None:
        lab = result.labelled
        text += (f"; with {lab.n_labels} human labels ({lab.method}): {_fmt(lab.score)} "
                 f"[{_fmt(lab.ci_low)}, {_fmt(lab.ci_high)}]")
    if row is not None:
        diff = (f" (difference {_fmt(row.diff)} [{_fmt(row.diff_low)}, {_fmt(row.diff_high)}])"
                if row.diff is not None else "")
        text += f"; vs {baseline}: {row.verdict.replace('_', ' ')}{diff}"
    return text


def metric_attributes(run: RunExport, result: MetricResult) -> Attributes:
    """A metric's level as an evaluation result: the semantic conventions' keys, then the interval, n,
    method, the judge and its measured agreement, the labels' estimate and the verdict vs the baseline."""
    row, info, agreement, lab = run.row(result.name), result.info, result.info.agreement, result.labelled
    return _clean({
        "gen_ai.evaluation.name": result.name,
        "gen_ai.evaluation.score.value": result.score,
        "gen_ai.evaluation.score.label": row.verdict if row else None,
        "gen_ai.evaluation.explanation": metric_explanation(result, row, run.baseline()),
        "error.type": NOT_SCORED if result.score is None else None,
        "ragwatch.run.id": run.run_id,
        "ragwatch.evaluation.ci_low": result.ci_low, "ragwatch.evaluation.ci_high": result.ci_high,
        "ragwatch.evaluation.ci_method": result.ci_method,
        "ragwatch.evaluation.n": result.n_scored, "ragwatch.evaluation.n_failed": result.n_failed,
        "ragwatch.evaluation.n_skipped": result.n_skipped,
        "ragwatch.evaluation.family": info.family, "ragwatch.evaluation.direction": info.direction,
        "ragwatch.judge.model": info.judge_model, "ragwatch.judge.prompt_version": info.prompt_version,
        "ragwatch.judge.agreement": None if not info.is_judge else "measured" if agreement else "unknown",
        "ragwatch.judge.kappa": agreement.kappa if agreement else None,
        "ragwatch.judge.kappa_ci_low": agreement.kappa_ci[0] if agreement else None,
        "ragwatch.judge.kappa_ci_high": agreement.kappa_ci[1] if agreement else None,
        "ragwatch.judge.balanced_accuracy": agreement.balanced_accuracy if agreement else None,
        "ragwatch.judge.agreement_n": agreement.n if agreement else None,
        "ragwatch.labelled.score": lab.score if lab else None,
        "ragwatch.labelled.ci_low": lab.ci_low if lab else None,
        "ragwatch.labelled.ci_high": lab.ci_high if lab else None,
        "ragwatch.labelled.method": lab.method if lab else None,
        "ragwatch.labelled.n_labels": lab.n_labels if lab else None,
        "ragwatch.comparison.baseline": run.baseline() if row else None,
        "ragwatch.comparison.diff": row.diff if row else None,
        "ragwatch.comparison.diff_low": row.diff_low if row else None,
        "ragwatch.comparison.diff_high": row.diff_high if row else None,
        "ragwatch.comparison.method": row.method if row else None,
        "ragwatch.gate.verdict": row.verdict if row else None,
        "ragwatch.gate.gated": row.gated if row else None,
    })


def item_event(run: RunExport, result: MetricResult, item: ItemScore) -> Attributes:
    """One item's result of one metric: its score, pass/fail when the metric has one, its reason; a
    failed item carries `error.type` and the error as the explanation."""
    reason = item.details.get("reason") if isinstance(item.details.get("reason"), str) else None
    return _clean({
        "gen_ai.evaluation.name": result.name,
        "gen_ai.evaluation.score.value": item.score,
        "gen_ai.evaluation.score.label": None if item.passed is None else "pass" if item.passed else "fail",
        "gen_ai.evaluation.explanation": item.error or reason,
        "error.type": NOT_SCORED if item.error else None,
        "ragwatch.run.id": run.run_id,
        "ragwatch.item.id": item.item_id,
    })


def item_results(run: RunExport) -> dict[str, list[Attributes]]:
    """Item id -> its evaluation results, one per metric that scored it or failed on it, in metric
    order (skipped items, to which a metric does not apply, are left out)."""
    out: dict[str, list[Attributes]] = {}
    for result in run.metrics.values():
        for item in result.items:
            if not item.skipped:
                out.setdefault(item.item_id, []).append(item_event(run, result, item))
    return out


_OUTPUT_KEYS = {"gen_ai.evaluation.score.value": "value", "gen_ai.evaluation.score.label": "label",
                "gen_ai.evaluation.explanation": "explanation", "error.type": "error"}


def item_attributes(run: RunExport, item_id: str, events: Sequence[Attributes]) -> Attributes:
    """An item span: which run and item, each metric's score as `ragwatch.score.<metric>` (to filter on),
    all of them as JSON output (what Phoenix and Langfuse show as the span's output); an item answered
    from a log that cannot be linked to its trace carries the log's id as `gen_ai.response.id`."""
    output = {e["gen_ai.evaluation.name"]: {short: e[key] for key, short in _OUTPUT_KEYS.items() if key in e}
              for e in events}
    return _clean({
        "openinference.span.kind": SPAN_KIND,
        "ragwatch.run.id": run.run_id, "ragwatch.item.id": item_id,
        "gen_ai.response.id": item_id if item_id in run.logged_ids and item_id not in run.links else None,
        **{f"ragwatch.score.{e['gen_ai.evaluation.name']}": e["gen_ai.evaluation.score.value"]
           for e in events if "gen_ai.evaluation.score.value" in e},
        "output.value": json.dumps(output, sort_keys=True),
        "output.mime_type": "application/json",
    })
