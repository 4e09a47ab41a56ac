"""One evaluation tracked: its metrics merged, compared with the previous run and with production, gated,
and said as run metadata. Runs without ZenML.

The ZenML step (`ragwatch_zenml.steps.track.track_evaluation`) reads the two baselines from the store,
calls `track`, then writes what it returns: the promotion and `tracking_metadata`.

Example:
    >>> from ragwatch.artifacts import AnswerSet, EvalSet, MetricGroup
    >>> from ragwatch.config import EvaluateConfig
    >>> empty = MetricGroup(group="g", metrics={})
    >>> tracked = track(empty, empty, empty, EvalSet(samples=[]), AnswerSet(answers=[]),
    ...                 EvaluateConfig(), run="run-1", previous=None, production=None)
    >>> tracked.comparisons.previous is None, tracked.decision.status
    (True, 'no_baseline')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragwatch.artifacts import AnswerSet, EvalSet, MetricGroup, RunComparisons
from ragwatch.checks.system_metrics import NOTHING_ANSWERED, SYSTEM_METRICS, reported_top_k, system_metrics
from ragwatch.config import EvaluateConfig
from ragwatch.decision.compare import compare_runs
from ragwatch.decision.gate import (
    GateDecision,
    gate_decision,
    not_applied,
    not_evaluated,
    other_eval_set,
    promotion_off,
    settle,
)
from ragwatch.decision.labels_plan import labels_plans
from ragwatch.decision.outcome import could_not_evaluate
from ragwatch.decision.thresholds import GateThresholds
from ragwatch.evalset.assemble import generation_samples
from ragwatch.measured import unmeasured_gated, unmeasured_of
from ragwatch.quick import quick_gate_reason
from ragwatch.report.summary import verdict_line
from ragwatch.report.verdicts import flag_lines, reason_lines
from ragwatch.results import MetricResult


@dataclass(frozen=True)
class Baseline:
    """A run to compare with, as read back from the store: its label and metrics; for production also its
    model version and the evaluation set that version was measured on."""

    run: str
    metrics: MetricGroup
    version: str | None = None
    eval_set_fingerprint: str | None = None


@dataclass(frozen=True)
class Tracked:
    """What `track` decided: the merged metrics (`system`: the part computed here from the answers), the
    comparisons with the gate's decision in them, and whether to promote (the gate and `evaluate.promote`)."""

    metrics: MetricGroup
    system: dict[str, MetricResult]
    comparisons: RunComparisons
    decision: GateDecision
    promote: bool


def track(retrieval: MetricGroup, e2e: MetricGroup, judges: MetricGroup, eval_set: EvalSet, answers: AnswerSet,
          config: EvaluateConfig, *, run: str, previous: Baseline | None, production: Baseline | None) -> Tracked:
    """Merge the metrics, compare with `previous` and `production`, and gate on the production comparison.

    A run that could not evaluate the system (`ragwatch.decision.outcome`) gets the status "not_evaluated"
    and is not promoted: it is nobody's baseline. A `--quick` run is never gated (`not_applied`).
    """
    samples = generation_samples(eval_set.samples)
    # the system as it ran: the contexts it used (at the top_k it reported) and its answers, no LLM needed
    unavailable = dict(judges.unavailable)
    if answers.answers:
        system = system_metrics(samples, answers.answers, match=config.retrieval.match,
                                k=reported_top_k(answers.system))
    else:  # retrieval only: seven empty rows would read as failures in every report and comparison
        system = {}
        unavailable.update(dict.fromkeys(SYSTEM_METRICS, NOTHING_ANSWERED))
    metrics = {**retrieval.metrics, **system, **e2e.metrics, **judges.metrics}
    merged = MetricGroup(group="all", metrics=metrics, unavailable=unavailable)

    def not_here(old: dict[str, Any]) -> dict[str, str]:
        # what this run lacks because its system cannot have it, or because this config does not measure it
        return {**unmeasured_of([m for m in old if m not in metrics], config), **merged.unavailable}

    comparisons = RunComparisons()
    for baseline, label in ((previous, "previous"), (production, "production")):
        if baseline is None:
            continue
        compared = compare_runs(metrics, baseline.metrics.metrics, thresholds=config.gate, new_label="this run",
                                old_label=label, new_unavailable=not_here(baseline.metrics.metrics),
                                old_unavailable=baseline.metrics.unavailable)
        if label == "previous":
            comparisons.previous_run, comparisons.previous = baseline.run, compared
        else:
            comparisons.production_version, comparisons.production_run = baseline.version, baseline.run
            comparisons.same_eval_set_as_production = baseline.eval_set_fingerprint == eval_set.fingerprint
            comparisons.production = compared

    blocked = could_not_evaluate(answers.answers, [s.id for s in samples], answers.calls, metrics, config.gate)
    if blocked:
        decision = not_evaluated(*blocked)
    elif config.quick:
        decision = not_applied(quick_gate_reason(len(samples) or len(eval_set.samples)))
    else:
        plans = labels_plans(comparisons.production, metrics, production.metrics.metrics if production else {},
                             run=run, thresholds=config.gate)
        if comparisons.production is not None:  # the table shows what the gate decided (labels, needs labels)
            comparisons.production = settle(comparisons.production, config.gate, plans)
        decision = gate_decision(comparisons.production, config.gate, plans=plans,
                                 unmeasured=unmeasured_gated(config, unavailable=unavailable))
        if not config.promote:
            decision = promotion_off(decision)
    if comparisons.production is not None and not comparisons.same_eval_set_as_production:
        decision = other_eval_set(decision)
    comparisons.gate = decision
    return Tracked(merged, system, comparisons, decision, promote=config.promote and decision.promote)


def metadata_scores(group: MetricGroup) -> dict[str, Any]:
    """Per metric: score, interval and counts; ZenML metadata takes no None, so those are left out."""
    return {name: {k: v for k, v in result.summary().items() if v is not None}
            for name, result in group.metrics.items()}


def gated_metadata(metrics: dict[str, Any], comparisons: RunComparisons, thresholds: GateThresholds) -> dict[str, Any]:
    """The gated metrics, one stable key each (the metric's name): score, 95% interval, n, and the
    difference with its interval and verdict vs the previous run and vs production. Two runs'
    metadata tabs read side by side, metric by metric."""
    out: dict[str, Any] = {}
    for name, result in metrics.items():
        if not thresholds.is_gated(name):
            continue
        entry: dict[str, Any] = {k: v for k, v in result.summary().items() if v is not None}
        for label, cmp in (("vs_previous", comparisons.previous), ("vs_production", comparisons.production)):
            row = next((r for r in cmp.rows if r.metric == name), None) if cmp is not None else None
            if row is not None:  # the interval that decided (human labels' when they did), as the table shows
                diff, low, high = row.decided_interval
                entry[label] = {k: v for k, v in {"diff": diff, "diff_low": low, "diff_high": high,
                                                  "verdict": row.verdict, "basis": row.basis,
                                                  "gated": row.gated}.items() if v is not None}
        out[name] = entry
    return out


def tracking_metadata(tracked: Tracked, groups: dict[str, MetricGroup], eval_set: EvalSet, answers: AnswerSet,
                      config: EvaluateConfig, *, system_fingerprint: str, promoted: bool) -> dict[str, Any]:
    """The run's metadata: verdict, scores per group (`groups`: retrieval, e2e, judges), usage, the gate,
    the gated metrics side by side, the evaluation set and the system."""
    decision, comparisons = tracked.decision, tracked.comparisons
    gate = {
        "promote": decision.promote,
        "promoted": promoted,
        "status": decision.status,
        "reasons": reason_lines(decision),
        "flags": flag_lines(decision),
        "production_version": comparisons.production_version or "none",
        "verdict": verdict_line(comparisons.named(), decision)[1],
    }
    judges = groups["judges"]
    return {
        "verdict": gate["verdict"],
        "retrieval": metadata_scores(groups["retrieval"]),
        "system_metrics": metadata_scores(MetricGroup(group="system", metrics=tracked.system)),
        "e2e": metadata_scores(groups["e2e"]),
        "judges": metadata_scores(judges),
        "usage": {"generator": answers.usage, "judge": judges.details.get("usage", {})},
        "gate": gate,
        "gated_metrics": gated_metadata(tracked.metrics.metrics, comparisons, config.gate),
        "eval_set": {"fingerprint": eval_set.fingerprint, "size": len(eval_set.samples)},
        "system": {"fingerprint": system_fingerprint, "model_name": config.system.model_name,
                   "target": config.system.rag.target},
        **({"system_calls": answers.calls.model_dump()} if answers.calls is not None else {}),
    }
