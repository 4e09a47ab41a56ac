"""Reading earlier evaluations back from ZenML: the previous run, the production model version, the
latest human labels.

Not a step: the one module that reads the run history back, imported by the steps (`track_evaluation`,
`attach_human_labels`, at pipeline run time on any orchestrator) and by `orchestration/` (run.py's
printout, comparisons, review export and the review page). It imports neither, so both point down at it.

Every evaluation run stores its metrics as the `all_metrics` artifact of the `track_evaluation`
step, and logs `evaluation.run_id` on its model version, so both lookups are artifact loads. Human
labels are `human_labels` artifact versions, tagged with the model they label (`model_name` metadata).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from zenml.client import Client
from zenml.enums import ExecutionStatus, ModelStages

from ragwatch.artifacts import MetricGroup
from ragwatch.quick import QUICK_TAG
from ragwatch.review import HumanLabels

TRACK_STEP = "track_evaluation"
METRICS_OUTPUT = "all_metrics"
EVALUATION_PIPELINES = ("evaluate", "full")
LABELS_ARTIFACT = "human_labels"


def run_metrics(run: Any) -> MetricGroup | None:
    """The `all_metrics` artifact of a pipeline run, or None when the run has none."""
    step = run.steps.get(TRACK_STEP)
    if step is None or METRICS_OUTPUT not in step.outputs:
        return None
    return step.outputs[METRICS_OUTPUT][0].load()


def evaluation_runs(limit: int = 50) -> list[Any]:
    """Completed evaluation runs (evaluate and full pipelines), newest first."""
    client = Client()
    runs: list[Any] = []
    for name in EVALUATION_PIPELINES:
        try:
            pipeline = client.get_pipeline(name)
        except KeyError:
            continue
        runs.extend(
            client.list_pipeline_runs(
                pipeline_id=pipeline.id, sort_by="desc:created", size=limit, hydrate=True
            ).items
        )
    runs = [r for r in runs if r.status in (ExecutionStatus.COMPLETED, ExecutionStatus.RUNNING)]
    return sorted(runs, key=lambda r: r.created, reverse=True)


def previous_evaluation(
    exclude_run_id: UUID | None = None, before: datetime | None = None
) -> tuple[Any, MetricGroup] | None:
    """The newest completed evaluation run that stored metrics, other than `exclude_run_id` and
    created before `before` when given. Metrics are loaded only for the run returned (and for
    newer runs that turn out to have none)."""
    for run in evaluation_runs():
        if run.id == exclude_run_id or run.status != ExecutionStatus.COMPLETED:
            continue
        if any(tag.name == QUICK_TAG for tag in run.tags or []):  # a quick look is never a baseline
            continue
        if before is not None and run.created >= before:
            continue
        metrics = run_metrics(run)
        if metrics is not None:
            return run, metrics
    return None


def production_version(model_name: str) -> Any | None:
    try:
        return Client().get_model_version(model_name, ModelStages.PRODUCTION)
    except KeyError:
        return None


def version_evaluation(model_version: Any) -> tuple[Any, MetricGroup] | None:
    """The last evaluation run logged on a model version, with its metrics."""
    evaluation = model_version.run_metadata.get("evaluation")
    if not isinstance(evaluation, dict) or "run_id" not in evaluation:
        return None
    try:
        run = Client().get_pipeline_run(evaluation["run_id"])
    except KeyError:
        return None
    metrics = run_metrics(run)
    return (run, metrics) if metrics is not None else None


def production_evaluation(model_name: str) -> tuple[Any, Any, MetricGroup] | None:
    """(production model version, its last evaluation run, that run's metrics), or None."""
    version = production_version(model_name)
    if version is None:
        return None
    found = version_evaluation(version)
    return (version, *found) if found else None


def production_baseline(model_name: str, new_run_id: UUID) -> tuple[str, Any, MetricGroup] | None:
    """(label, run, metrics) of the production evaluation to compare run `new_run_id` with.

    Normally the production version's last evaluation. When that evaluation IS the new run (the run
    that was just promoted), the baseline it replaced, recorded at promotion (`promotion` metadata),
    so that "vs production" never compares a run with itself. None: no production to compare with.
    """
    version = production_version(model_name)
    if version is None:
        return None
    found = version_evaluation(version)
    if found is not None and found[0].id != new_run_id:
        return f"production {version.name}", *found
    promotion = version.run_metadata.get("promotion")
    if not isinstance(promotion, dict) or "baseline_run_id" not in promotion:
        return None  # the first production version: nothing was in production before it
    try:
        run = Client().get_pipeline_run(promotion["baseline_run_id"])
    except KeyError:
        return None
    metrics = run_metrics(run)
    if metrics is None or run.id == new_run_id:
        return None
    return f"previous production {promotion.get('baseline_version', '?')}", run, metrics


def run_label(run: Any) -> str:
    return f"{run.name} ({run.created:%Y-%m-%d %H:%M})"


def step_timings(run_id: Any) -> dict[str, float]:
    """Seconds per finished step of a run, in run order (cached steps take about no time)."""
    steps = Client().get_pipeline_run(run_id).steps.values()
    done = [s for s in steps if s.start_time is not None and s.end_time is not None]
    return {s.name: (s.end_time - s.start_time).total_seconds() for s in sorted(done, key=lambda s: s.start_time)}


def latest_human_labels(model_name: str) -> tuple[HumanLabels | None, Any]:
    """The newest `human_labels` artifact version imported for `model_name`, and that version."""
    versions = Client().list_artifact_versions(name=LABELS_ARTIFACT, sort_by="desc:created", size=50,
                                               hydrate=True)
    for version in versions.items:
        if version.run_metadata.get("model_name") == model_name:
            return version.load(), version
    return None, None
