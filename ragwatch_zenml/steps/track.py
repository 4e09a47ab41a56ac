"""Tracking steps: the run tracked by the core (`ragwatch.tracking`), promoted and logged; the report.

Both steps are never cached, so run-level and model-version metadata are logged on every run,
also when every evaluation step before them came from the cache.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import pandas as pd
from zenml import get_step_context, log_metadata, step
from zenml.enums import ModelStages
from zenml.types import HTMLString, MarkdownString

from ragwatch.artifacts import AnswerSet, EvalSet, MetricGroup, RunComparisons
from ragwatch.config import EvaluateConfig
from ragwatch.decision.gate import GateDecision
from ragwatch.report.markdown import build_markdown_summary
from ragwatch.report.page import build_html_report
from ragwatch.report.summary import judge_models
from ragwatch.tracking import Baseline, track, tracking_metadata
from ragwatch_zenml.readback import (
    PRODUCTION_RECORD,
    SystemKey,
    previous_evaluation,
    production_evaluation,
    run_label,
    step_timings,
)
from ragwatch_zenml.steps.materializers import RunComparisonsMaterializer


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
    """Read this system's previous run and production from the store, let `ragwatch.tracking.track`
    compare and gate, then promote and log what it decided.

    A run that could not evaluate the system logs nothing on the model version: it is nobody's baseline.
    """
    context = get_step_context()
    run = context.pipeline_run
    key = SystemKey(config.system.model_name, config.system.rag.target)
    previous = previous_evaluation(exclude_run_id=run.id, system=key)
    production = production_evaluation(key)
    production_baseline = None
    if production is not None:
        version, prod_run, prod_metrics = production
        production_baseline = Baseline(
            run_label(prod_run), prod_metrics, version=str(version.name),
            eval_set_fingerprint=version.run_metadata.get("evaluation", {}).get("eval_set_fingerprint"))
    tracked = track(retrieval, e2e, judges, eval_set, answers, config, run=str(run.name),
                    previous=Baseline(run_label(previous[0]), previous[1]) if previous is not None else None,
                    production=production_baseline)

    model_version = context.model_version
    promoted = model_version is not None and tracked.promote
    if promoted:
        # systems that share a ZenML model take its production stage in turn; each keeps its own record
        if model_version.stage != ModelStages.PRODUCTION:
            model_version.set_stage("production", force=True)
        # this system's production is now this run; the record keeps the baseline it replaced for compare
        record = {"run_id": str(run.id), "target": key.target, "promoted_at": datetime.now(UTC).isoformat()}
        if production is not None and production[1].id != run.id:
            record.update(baseline_version=str(production[0].name), baseline_run_id=str(production[1].id))
        log_metadata(metadata={PRODUCTION_RECORD: record}, infer_model=True)

    run_metadata = tracking_metadata(tracked, {"retrieval": retrieval, "e2e": e2e, "judges": judges}, eval_set,
                                     answers, config, system_fingerprint=system_fingerprint, promoted=promoted)
    log_metadata(metadata=run_metadata, run_id_name_or_prefix=run.id)
    log_metadata(metadata={"metrics": tracked.metrics.scores()}, artifact_name="all_metrics", infer_artifact=True)
    if model_version is not None and tracked.decision.evaluated:
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
    return tracked.metrics, tracked.comparisons, tracked.decision


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
