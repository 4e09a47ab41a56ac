"""Human labels in the evaluation: the latest `human_labels` artifact of the system under test
(`readback.latest_human_labels`).

`attach_human_labels` is never cached: labels imported after a run must reach the next run even
when every step before it came from the cache.
"""

from __future__ import annotations

from typing import Annotated

from zenml import get_step_context, log_metadata, step

from ragwatch.artifacts import MetricGroup
from ragwatch.review import attach_labelled, labelled_summary
from ragwatch_zenml.readback import latest_human_labels


@step(enable_cache=False)
def attach_human_labels(judges: MetricGroup, model_name: str) -> Annotated[MetricGroup, "labelled_judge_metrics"]:
    """Fill `labelled` (PPI++ from human labels) on every judged metric that has labels on its items;
    `model_name` is the system under test's ZenML model, whose labels are used."""
    labels, version = latest_human_labels(model_name)
    metrics, skipped = attach_labelled(judges.metrics, labels)
    details = dict(judges.details)
    if labels is not None:
        summary = labelled_summary(metrics)
        details["human_labels"] = {"artifact_version": str(version.version), "labels": labels.counts(),
                                   "skipped": skipped}
        metadata = {"human_labels": {"artifact_version": str(version.version), "metrics": summary,
                                     "labels_per_metric": labels.counts(), "not_estimated": skipped}}
        log_metadata(metadata=metadata, run_id_name_or_prefix=get_step_context().pipeline_run.id)
        if get_step_context().model_version is not None:
            log_metadata(metadata=metadata, infer_model=True)
    return MetricGroup(group=judges.group, metrics=metrics, details=details)
