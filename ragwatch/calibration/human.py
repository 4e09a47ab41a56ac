"""Agreement of a run's judges with the team's own human labels (no LLM call: the scores exist).

Per labelled metric: for pass/fail labels, accuracy, balanced accuracy and Cohen's kappa of the
judge's verdict (score >= the metric's threshold, 0.5 when it has none) and the ROC AUC of its
score; for graded labels (e.g. 1-5), Spearman correlation, quadratic-weighted kappa and exact
accuracy. Bootstrap 95% intervals over items.

Example:
    >>> rows = agreement_with_labels(run_metrics, labels)  # doctest: +SKIP
    >>> print(agreement_markdown(rows))  # doctest: +SKIP
"""

from __future__ import annotations

from pydantic import BaseModel

from ragwatch.results import MetricResult
from ragwatch.review import HumanLabels
from ragwatch.statistics.agreement import (
    Estimate,
    balanced_accuracy,
    cohen_kappa,
    roc_auc,
    spearman,
    weighted_kappa,
    with_interval,
)
from ragwatch.statistics.agreement import accuracy as accuracy_of


class HumanAgreement(BaseModel):
    metric: str
    n: int
    kind: str  # "pass/fail" or "graded"
    measures: dict[str, Estimate]


def agreement_with_labels(metrics: dict[str, MetricResult], labels: HumanLabels, *, seed: int = 0,
                          resamples: int = 2000) -> list[HumanAgreement]:
    """One row per metric with at least 2 labelled, judged items."""
    rows = []
    kw = {"seed": seed, "resamples": resamples}
    for name, result in sorted(metrics.items()):
        by_item = labels.for_metric(name)
        pairs = [(by_item[it.item_id].value, float(it.score)) for it in result.items
                 if it.ok and it.score is not None and it.item_id in by_item]
        if len(pairs) < 2:
            continue
        human = [h for h, _ in pairs]
        judge = [j for _, j in pairs]
        if set(human) <= {0.0, 1.0}:
            cut = result.info.threshold if result.info.threshold is not None else 0.5
            verdicts = [float(j >= cut) for j in judge]
            measures = {
                "accuracy": with_interval(accuracy_of, human, verdicts, **kw),
                "balanced accuracy": with_interval(balanced_accuracy, human, verdicts, **kw),
                "Cohen's kappa": with_interval(cohen_kappa, human, verdicts, **kw),
                "ROC AUC": with_interval(roc_auc, human, judge, positive=1.0, **kw),
            }
            kind = "pass/fail"
        else:
            rounded = [float(round(j)) for j in judge]
            measures = {
                "Spearman": with_interval(spearman, human, judge, **kw),
                "weighted kappa": with_interval(weighted_kappa, human, rounded, **kw),
                "exact accuracy": with_interval(accuracy_of, human, rounded, **kw),
            }
            kind = "graded"
        rows.append(HumanAgreement(metric=name, n=len(pairs), kind=kind, measures=measures))
    return rows


def agreement_markdown(rows: list[HumanAgreement], title: str = "Judges against your human labels") -> str:
    if not rows:
        return f"### {title}\n\nNo metric has 2 or more labelled, judged items yet."
    lines = [f"### {title}", "", "95% bootstrap intervals over items.", "", "| metric | kind | n | measure | value |",
             "|---|---|---|---|---|"]
    for row in rows:
        for measure, e in row.measures.items():
            lines.append(f"| {row.metric} | {row.kind} | {row.n} | {measure} | "
                         f"{e.value:.3f} [{e.ci_low:.3f}, {e.ci_high:.3f}] |")
    return "\n".join(lines)
