"""Human labels: the `human_labels` collection and how imports accumulate.

A label is one person's score of one item (by its stable `item_id`) on one judged metric, on the
metric's own scale (0/1 for pass/fail metrics, 1-5 for Likert judges). Labels accumulate across
imports: a later label for the same item and metric replaces the earlier one, and the change is
kept in `history`; `remove_labels` takes labels back (an undo on the review page), also kept in
`history`. Each label keeps how its item was sampled (`stratum`, `inclusion_prob`) so estimates
can weight a stratified review sample back to the population (`ragwatch.review.labelled`).

Example:
    >>> labels = HumanLabels().merge([HumanLabel(item_id="q1", metric="faithfulness", value=1.0)],
    ...                              source="round1.csv")
    >>> labels.merge([HumanLabel(item_id="q1", metric="faithfulness", value=0.0)], source="round2.csv").history[0].old
    1.0
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from pydantic import BaseModel, Field


def now() -> str:
    """When a label is given: UTC, to the second (the labels file and the log write the same form)."""
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
        at = at or now()
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


def remove_labels(labels: HumanLabels, keys: Iterable[tuple[str, str]], *, source: str, at: str | None = None
                  ) -> HumanLabels:
    """`labels` without the (item, metric) labels of `keys` that came from `source`; each removal is
    kept in `history` (new = None). A label another source gave since is left alone."""
    at = at or now()
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
