"""Human labels: the `human_labels` collection, how imports accumulate, and what they estimate.

A label is one person's score of one item (by its stable `item_id`) on one judged metric, on the
metric's own scale (0/1 for pass/fail metrics, 1-5 for Likert judges). Labels accumulate across
imports: a later label for the same item and metric replaces the earlier one, and the change is
kept in `history`. Each label keeps how its item was sampled (`stratum`, `inclusion_prob`) so
estimates can weight a stratified review sample back to the population.

`attach_labelled` fills `MetricResult.labelled` with a prediction-powered estimate (PPI++, see
`ragwatch.statistics.ppi`) for every metric that has human labels on at least 2 of its scored items.

Example:
    >>> labels = HumanLabels().merge([HumanLabel(item_id="q1", metric="faithfulness", value=1.0)],
    ...                              source="round1.csv")
    >>> labels.merge([HumanLabel(item_id="q1", metric="faithfulness", value=0.0)], source="round2.csv").history[0].old
    1.0
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from ragwatch.results import LabelledEstimate, MetricResult
from ragwatch.statistics.ppi import ppi_mean

MIN_LABELS = 2  # an interval needs a variance, so at least two labelled items


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class HumanLabel(BaseModel):
    """One human label of one item on one metric, and where it came from."""

    item_id: str
    metric: str
    value: float
    stratum: str = "all"
    inclusion_prob: float = Field(default=1.0, gt=0, le=1)  # chance the item was drawn for review
    source_run: str | None = None  # the run whose items were exported for review
    source: str = ""  # the file it was imported from
    line: int | None = None
    reviewer: str | None = None
    imported_at: str = ""
    # what was labelled: the judged item's `judged_key` (answer text and statements); None for labels
    # from before keys existed, which attach to their item id as they always did
    judged_key: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.item_id, self.metric)


class LabelChange(BaseModel):
    """A label that an import replaced: old and new value, and where the new one came from."""

    item_id: str
    metric: str
    old: float
    new: float | None  # None: the label was taken back (an undo on the review page)
    source: str
    at: str


class ImportRecord(BaseModel):
    source: str
    at: str
    added: int
    changed: int
    unchanged: int


class HumanLabels(BaseModel):
    """Every human label of one system (ZenML model), newest value per item and metric."""

    labels: list[HumanLabel] = Field(default_factory=list)
    history: list[LabelChange] = Field(default_factory=list)
    imports: list[ImportRecord] = Field(default_factory=list)

    def merge(self, new: Iterable[HumanLabel], *, source: str, at: str | None = None) -> HumanLabels:
        """A new collection with `new` added; a later label for the same item and metric wins."""
        at = at or _now()
        current = {label.key: label for label in self.labels}
        history = list(self.history)
        added = changed = unchanged = 0
        for label in new:
            label = label.model_copy(update={"imported_at": label.imported_at or at,
                                             "source": label.source or source})
            old = current.get(label.key)
            if old is None:
                added += 1
            elif old.value != label.value:
                changed += 1
                history.append(LabelChange(item_id=label.item_id, metric=label.metric, old=old.value,
                                           new=label.value, source=label.source, at=at))
            else:
                unchanged += 1
            current[label.key] = label
        record = ImportRecord(source=source, at=at, added=added, changed=changed, unchanged=unchanged)
        return HumanLabels(labels=list(current.values()), history=history, imports=[*self.imports, record])

    def for_metric(self, metric: str) -> dict[str, HumanLabel]:
        return {label.item_id: label for label in self.labels if label.metric == metric}

    def counts(self) -> dict[str, int]:
        """Labels per metric."""
        out: dict[str, int] = {}
        for label in self.labels:
            out[label.metric] = out.get(label.metric, 0) + 1
        return dict(sorted(out.items()))


def labelled_estimate(result: MetricResult, labels: dict[str, HumanLabel], *, confidence: float = 0.95
                      ) -> tuple[LabelledEstimate | None, str | None]:
    """The PPI++ estimate of `result` from `labels` (item id -> label), or None and the reason."""
    scored = {it.item_id: float(it.score) for it in result.items if it.ok and it.score is not None}
    keys = {it.item_id: it.details.get("judged_key") for it in result.items}
    stale = [i for i in scored if i in labels and not _same_item(labels[i], keys.get(i))]
    used = [labels[i] for i in scored if i in labels and i not in stale]
    on_failed = sum(1 for it in result.items if not it.ok and it.item_id in labels)
    if len(used) < MIN_LABELS:
        changed = (f"; {len(stale)} label(s) were given for an earlier answer of the same question and no "
                   "longer apply (label the new answers)") if stale else ""
        return None, (f"{len(used)} human label(s) on this run's scored items; at least {MIN_LABELS} are "
                      f"needed (python run.py review export, then review import){changed}")
    est = ppi_mean([lab.value for lab in used], [scored[lab.item_id] for lab in used], list(scored.values()),
                   weights=[1.0 / lab.inclusion_prob for lab in used], confidence=confidence,
                   bounds=result.info.scale)
    details: dict[str, Any] = {
        "lambda": est.lam,
        "labelled_only": est.labelled_only,
        "judge_mean_on_labelled": sum(scored[lab.item_id] for lab in used) / len(used),
        "label_mean": sum(lab.value for lab in used) / len(used),
        "labels_on_failed_items": on_failed,
        "labels_of_changed_answers": len(stale),
        "labels_not_in_run": len(labels) - len(used) - on_failed - len(stale),
        "interval": f"t interval, {est.confidence:.0%}, weighted by inclusion probability",
    }
    return LabelledEstimate(method="ppi++", score=est.estimate, ci_low=est.ci_low, ci_high=est.ci_high,
                            n_labels=est.n_labels, n_items=est.n_items,
                            labelled_only_ci=est.labelled_only_ci, details=details), None


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


def remove_labels(labels: HumanLabels, keys: Iterable[tuple[str, str]], *, source: str, at: str | None = None
                  ) -> HumanLabels:
    """`labels` without the (item, metric) labels of `keys` that came from `source`; each removal is
    kept in `history` (new = None). A label another source gave since is left alone."""
    at = at or _now()
    drop = set(keys)
    history = list(labels.history)
    kept = []
    for label in labels.labels:
        if label.key in drop and label.source == source:
            history.append(LabelChange(item_id=label.item_id, metric=label.metric, old=label.value, new=None,
                                       source=source, at=at))
        else:
            kept.append(label)
    return HumanLabels(labels=kept, history=history, imports=list(labels.imports))
