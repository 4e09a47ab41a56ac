"""What human labels estimate: prediction-powered estimates of judged metrics.

`attach_labelled` fills `MetricResult.labelled` with a prediction-powered estimate (PPI++, see
`ragwatch.statistics.ppi`; each label weighted by 1 / its inclusion probability, so an active or
stratified review sample is weighted back, and the labels' variance floored at what the judge's own
probabilities imply, `ragwatch.review.spread`) for every metric that has human labels on at least 2
of its scored items. The judge's prediction of an item is its score, or its value of the level when
the metric's score is a level (`MetricResult.level_values`: faithfulness's calibrated share). A label
carries the `judged_key` of the item it labelled (the hash of the answer and its statements) and is
not used for a different answer of the same item id (`labels_of_changed_answers`).

Example:
    >>> metrics, skipped = attach_labelled(judged, labels)  # doctest: +SKIP
    >>> labelled_summary(metrics)["faithfulness"]["score"]  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from ragwatch.results import LabelledEstimate, MetricResult
from ragwatch.review.labels import HumanLabel, HumanLabels
from ragwatch.review.spread import spreads_of
from ragwatch.statistics.ppi import ppi_mean

MIN_LABELS = 2  # an interval needs a variance, so at least two labelled items


def labelled_estimate(result: MetricResult, labels: dict[str, HumanLabel], *, confidence: float = 0.95
                      ) -> tuple[LabelledEstimate | None, str | None]:
    """The PPI++ estimate of `result` from `labels` (item id -> label), or None and the reason."""
    # the judge's value of each item: of the level when the score is one (the estimate then starts from
    # the headline's own quantity), else the item score
    scored = result.level_values() or {it.item_id: float(it.score) for it in result.items
                                       if it.ok and it.score is not None}
    stale = _stale(result, labels)
    used = usable_labels(result, labels)
    on_failed = sum(1 for it in result.items if not it.ok and it.item_id in labels)
    if len(used) < MIN_LABELS:
        changed = (f"; {len(stale)} label(s) were given for an earlier answer of the same question and no "
                   "longer apply (label the new answers)") if stale else ""
        return None, (f"{len(used)} human label(s) on this run's scored items; at least {MIN_LABELS} are "
                      f"needed (python run.py review export, then review import){changed}")
    noise = spreads_of(result)
    est = ppi_mean([lab.value for lab in used], [scored[lab.item_id] for lab in used], list(scored.values()),
                   weights=[1.0 / lab.inclusion_prob for lab in used], confidence=confidence,
                   bounds=result.info.scale, noise=[noise[lab.item_id][1] for lab in used])
    details: dict[str, Any] = {
        "lambda": est.lam,
        "labelled_only": est.labelled_only,
        "judge_mean_on_labelled": sum(scored[lab.item_id] for lab in used) / len(used),
        "label_mean": sum(lab.value for lab in used) / len(used),
        "labels_on_failed_items": on_failed,
        "labels_of_changed_answers": len(stale),
        "labels_not_in_run": len(labels) - len(used) - on_failed - len(stale),
        "interval": f"t interval, {est.confidence:.0%}, weighted by inclusion probability",
        # the labels behind it (item id -> [label, inclusion probability]): what the gate's paired
        # difference against production is computed from (`ragwatch.decision.labels_plan`)
        "labels": {lab.item_id: [lab.value, lab.inclusion_prob] for lab in used},
    }
    return LabelledEstimate(method="ppi++", score=est.estimate, ci_low=est.ci_low, ci_high=est.ci_high,
                            n_labels=est.n_labels, n_items=est.n_items,
                            labelled_only_ci=est.labelled_only_ci, details=details), None


def usable_labels(result: MetricResult, labels: dict[str, HumanLabel]) -> list[HumanLabel]:
    """The labels the estimate uses: on scored items, given for the answer the run judged."""
    stale = set(_stale(result, labels))
    return [labels[it.item_id] for it in result.items
            if it.ok and it.score is not None and it.item_id in labels and it.item_id not in stale]


def _stale(result: MetricResult, labels: dict[str, HumanLabel]) -> list[str]:
    """Scored items whose label was given for an earlier answer of the same item id."""
    return [it.item_id for it in result.items if it.ok and it.score is not None and it.item_id in labels
            and not _same_item(labels[it.item_id], it.details.get("judged_key"))]


def _same_item(label: HumanLabel, judged_key: Any) -> bool:
    """A label applies to an item when it was given for the same answer (and statements), or is keyless."""
    return label.judged_key is None or judged_key is None or label.judged_key == judged_key


def attach_labelled(metrics: dict[str, MetricResult], labels: HumanLabels | None, *, confidence: float = 0.95
                    ) -> tuple[dict[str, MetricResult], dict[str, str]]:
    """Copies of `metrics` with `labelled` filled where labels allow; and why not, per labelled metric.

    Metrics without any human label are returned unchanged and not mentioned.
    """
    if labels is None:
        return dict(metrics), {}
    out: dict[str, MetricResult] = {}
    skipped: dict[str, str] = {}
    for name, result in metrics.items():
        by_item = labels.for_metric(name)
        if not by_item:
            out[name] = result
            continue
        estimate, reason = labelled_estimate(result, by_item, confidence=confidence)
        out[name] = result.model_copy(update={"labelled": estimate})
        if reason is not None:
            skipped[name] = reason
    return out, skipped


def labelled_summary(metrics: dict[str, MetricResult]) -> dict[str, dict[str, Any]]:
    """Flat figures of every labelled estimate, for run and model-version metadata."""
    out = {}
    for name, result in metrics.items():
        est = result.labelled
        if est is None:
            continue
        out[name] = {
            "method": est.method, "score": est.score, "ci_low": est.ci_low, "ci_high": est.ci_high,
            "n_labels": est.n_labels, "n_items": est.n_items,
            **({"judge_only_score": result.score} if result.score is not None else {}),
            **({"labelled_only_ci_low": est.labelled_only_ci[0], "labelled_only_ci_high": est.labelled_only_ci[1]}
               if est.labelled_only_ci else {}),
        }
    return out
