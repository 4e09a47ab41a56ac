"""Tracking steps: merge metrics, compare with the previous run and production, gate, report.

Both steps are never cached, so run-level and model-version metadata are logged on every run,
also when every evaluation step before them came from the cache.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import pandas as pd
from zenml import get_step_context, log_metadata, step
from zenml.enums import ModelStages
from zenml.types import HTMLString, MarkdownString

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
from ragwatch.evalset.assemble import generation_samples
from ragwatch.measured import unmeasured_gated, unmeasured_of
from ragwatch.quick import quick_gate_reason
from ragwatch.report.markdown import build_markdown_summary
from ragwatch.report.page import build_html_report
from ragwatch.report.summary import judge_models, verdict_line
from ragwatch.report.verdicts import flag_lines, reason_lines
from ragwatch.zenml.readback import (
    PRODUCTION_RECORD,
    SystemKey,
    previous_evaluation,
    production_evaluation,
    run_label,
    step_timings,
)
from ragwatch.zenml.steps.materializers import RunComparisonsMaterializer


def _metadata_scores(group: MetricGroup) -> dict[str, Any]:
    """Per metric: score, interval and counts; ZenML metadata takes no None, so those are left out."""
    return {
        name: {k: v for k, v in result.summary().items() if v is not None}
        for name, result in group.metrics.items()
    }


def gated_metadata(metrics: dict[str, Any], comparisons: RunComparisons, thresholds: Any) -> dict[str, Any]:
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


@step(enable_cache=False, output_materializers={"comparisons": RunComparisonsMaterializer})
def track_evaluation(
    retrieval: MetricGroup,
    e2e: MetricGroup,
    judges: MetricGroup,
    eval_set: EvalSet,
    answers: AnswerSet,
    config: EvaluateConfig,
    system_fingerprint: str,
) -> tuple[
    Annotated[MetricGroup, "all_metrics"],
    Annotated[RunComparisons, "comparisons"],
    Annotated[GateDecision, "gate"],
]:
    """Compare with this system's previous run and production; promote when nothing regressed.

    A run that could not evaluate the system (`ragwatch.decision.outcome`) gets the gate status
    "not_evaluated", is not promoted and logs nothing on the model version: it is nobody's baseline.
    """
    context = get_step_context()
    run = context.pipeline_run
    key = SystemKey(config.system.model_name, config.system.rag.target)
    samples = generation_samples(eval_set.samples)
    # the system as it ran: the contexts it used (at the top_k it reported) and its answers, no LLM needed
    unavailable = dict(judges.unavailable)
    if answers.answers:
        system = system_metrics(samples, answers.answers,
                                match=config.retrieval.match, k=reported_top_k(answers.system))
    else:  # retrieval only: seven empty rows would read as failures in every report and comparison
        system = {}
        unavailable.update(dict.fromkeys(SYSTEM_METRICS, NOTHING_ANSWERED))
    metrics = {**retrieval.metrics, **system, **e2e.metrics, **judges.metrics}
    merged = MetricGroup(group="all", metrics=metrics, unavailable=unavailable)

    comparisons = RunComparisons()

    def not_here(old: dict[str, Any]) -> dict[str, str]:
        # what this run lacks because its system cannot have it, or because this config does not measure it
        return {**unmeasured_of([m for m in old if m not in metrics], config), **merged.unavailable}

    previous = previous_evaluation(exclude_run_id=run.id, system=key)
    if previous is not None:
        prev_run, prev_metrics = previous
        comparisons.previous_run = run_label(prev_run)
        comparisons.previous = compare_runs(
            metrics, prev_metrics.metrics, thresholds=config.gate, new_label="this run", old_label="previous",
            new_unavailable=not_here(prev_metrics.metrics), old_unavailable=prev_metrics.unavailable,
        )
    model_version = context.model_version
    production = production_evaluation(key)
    if production is not None:
        prod_version, prod_run, prod_metrics = production
        comparisons.production_version = str(prod_version.name)
        comparisons.production_run = run_label(prod_run)
        prod_eval_set = prod_version.run_metadata.get("evaluation", {}).get("eval_set_fingerprint")
        comparisons.same_eval_set_as_production = prod_eval_set == eval_set.fingerprint
        comparisons.production = compare_runs(
            metrics, prod_metrics.metrics, thresholds=config.gate, new_label="this run", old_label="production",
            new_unavailable=not_here(prod_metrics.metrics), old_unavailable=prod_metrics.unavailable,
        )
    blocked = could_not_evaluate(answers.answers, [s.id for s in samples], answers.calls, metrics, config.gate)
    if blocked:
        decision = not_evaluated(*blocked)
    elif config.quick:
        decision = not_applied(quick_gate_reason(len(samples) or len(eval_set.samples)))
    else:
        plans = labels_plans(comparisons.production, metrics, production[2].metrics if production else {},
                             run=str(run.name), thresholds=config.gate)
        if comparisons.production is not None:  # the table shows what the gate decided (labels, needs labels)
            comparisons.production = settle(comparisons.production, config.gate, plans)
        decision = gate_decision(comparisons.production, config.gate, plans=plans,
                                 unmeasured=unmeasured_gated(config, unavailable=unavailable))
        if not config.promote:
            decision = promotion_off(decision)
    if comparisons.production is not None and not comparisons.same_eval_set_as_production:
        decision = other_eval_set(decision)

    promoted = False
    if model_version is not None and config.promote and decision.promote:
        # systems that share a ZenML model take its production stage in turn; each keeps its own record
        if model_version.stage != ModelStages.PRODUCTION:
            model_version.set_stage("production", force=True)
        promoted = True
        # this system's production is now this run; the record keeps the baseline it replaced for compare
        record = {"run_id": str(run.id), "target": key.target, "promoted_at": datetime.now(UTC).isoformat()}
        if production is not None and production[1].id != run.id:
            record.update(baseline_version=str(production[0].name), baseline_run_id=str(production[1].id))
        log_metadata(metadata={PRODUCTION_RECORD: record}, infer_model=True)

    comparisons.gate = decision
    gate_metadata = {
        "promote": decision.promote,
        "promoted": promoted,
        "status": decision.status,
        "reasons": reason_lines(decision),
        "flags": flag_lines(decision),
        "production_version": comparisons.production_version or "none",
        "verdict": verdict_line(comparisons.named(), decision)[1],
    }
    usage = {"generator": answers.usage, "judge": judges.details.get("usage", {})}
    run_metadata = {
        "verdict": gate_metadata["verdict"],
        "retrieval": _metadata_scores(retrieval),
        "system_metrics": _metadata_scores(MetricGroup(group="system", metrics=system)),
        "e2e": _metadata_scores(e2e),
        "judges": _metadata_scores(judges),
        "usage": usage,
        "gate": gate_metadata,
        "gated_metrics": gated_metadata(metrics, comparisons, config.gate),
        "eval_set": {"fingerprint": eval_set.fingerprint, "size": len(eval_set.samples)},
        "system": {"fingerprint": system_fingerprint, "model_name": key.model_name, "target": key.target},
        **({"system_calls": answers.calls.model_dump()} if answers.calls is not None else {}),
    }
    log_metadata(metadata=run_metadata, run_id_name_or_prefix=run.id)
    log_metadata(metadata={"metrics": merged.scores()}, artifact_name="all_metrics", infer_artifact=True)
    if model_version is not None and decision.evaluated:
        log_metadata(
            metadata={
                **run_metadata,
                "evaluation": {"run_id": str(run.id), "eval_set_fingerprint": eval_set.fingerprint},
                "configuration": {
                    "rag": config.system.rag.model_dump(mode="json", exclude_none=True),
                    "generator_model": config.system.generator.model,
                    "answers_system": answers.system,
                },
            },
            infer_model=True,
        )
    return merged, comparisons, decision


@step(enable_cache=False)
def build_report_step(
    metrics: MetricGroup,
    comparisons: RunComparisons,
    gate: GateDecision,
    results: pd.DataFrame,
    agreement: pd.DataFrame,
    eval_set: EvalSet,
    config: EvaluateConfig,
    system_fingerprint: str,
) -> tuple[Annotated[HTMLString, "report"], Annotated[MarkdownString, "summary"]]:
    """The HTML report (plots, worst items, comparisons) and a short Markdown summary."""
    run = get_step_context().pipeline_run
    run_info = {
        "run": run.name,
        "system fingerprint": system_fingerprint[:16],
        "generator": config.system.generator.model,
        "judge": judge_models(metrics.metrics),
        "retrieval": f"{config.system.rag.retrieval_mode}, top {config.system.rag.top_k}",
        "evaluation set": f"{len(eval_set.samples)} samples, {eval_set.fingerprint[:16]}",
    }
    timings = step_timings(run.id)
    run_info["step timings (s)"] = {name: round(seconds, 1) for name, seconds in timings.items()}
    title = f"ragwatch evaluation: {run.name}"
    # short labels: they head the headline table's columns; the run and version are in run_info
    named = comparisons.named()
    if comparisons.previous_run:
        run_info["previous run"] = comparisons.previous_run
    if comparisons.production_version:
        run_info["production"] = f"{comparisons.production_version}, evaluated in {comparisons.production_run}"
    html = build_html_report(
        title, metrics.metrics, results, comparisons=named, agreement=agreement if len(agreement) else None,
        run_info=run_info, gate=gate, settings=config.report, unavailable=metrics.unavailable,
    )
    summary = build_markdown_summary(title, metrics.metrics, comparisons=named, gate=gate, run_info=run_info,
                                     settings=config.report, timings=timings, unavailable=metrics.unavailable)
    return HTMLString(html), MarkdownString(summary)
