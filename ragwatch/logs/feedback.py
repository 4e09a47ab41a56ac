"""Users' feedback in a log: labels where it means what a metric means, reported beside otherwise.

Which metric a feedback labels (`FeedbackSettings`, documented in docs/monitoring.md):
- thumbs (up/down) say "this answer served me": they label `answer_relevance/pass`, the answer
  relevance judge's verdict that the answer addresses the question (its 1-5 score >= 4), a 0/1 metric
  derived here from the judge's items (`pass_metric`);
- ratings (with their scale) label `answer_relevance` itself, rescaled onto its 1-5 scale;
- never faithfulness or a context metric: a user does not see the retrieved passages.
Labels feed the prediction-powered estimate (`ragwatch.review.labelled.attach_labelled`) exactly as
`review` labels do. A feedback whose metric this run does not measure labels nothing and is reported
beside the metrics (`FeedbackSummary`: share of thumbs up, mean rating, each with its interval and n).

Caveat, stated in the report: users choose which answers they rate, so feedback is not a random
sample of the answers; the estimate assumes that whether a user gives feedback does not depend on
the answer's quality once the judge's score is known.

Example:
    >>> metrics, summary = attach_feedback(group.metrics, samples, FeedbackSettings())  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from ragwatch.logs.records import Feedback
from ragwatch.logs.settings import FeedbackSettings
from ragwatch.results import ItemScore, MetricResult
from ragwatch.review.labelled import attach_labelled
from ragwatch.review.labels import HumanLabel, HumanLabels
from ragwatch.statistics.intervals import mean_interval
from ragwatch.types import EvalSample

SELF_SELECTED = ("feedback labels are the answers users chose to rate, not a random sample: the estimate "
                 "assumes rating does not depend on quality beyond what the judge sees")


class FeedbackFigure(BaseModel):
    """One kind of feedback, as reported beside the metrics: mean on 0..1, its interval and n."""

    kind: str  # "thumbs up share" or "rating (0..1 of its scale)"
    score: float
    ci_low: float
    ci_high: float
    n: int
    labels: str | None = None  # the metric it labelled, or None
    note: str = ""


class FeedbackSummary(BaseModel):
    n_answers: int = 0
    figures: list[FeedbackFigure] = Field(default_factory=list)
    skipped: dict[str, str] = Field(default_factory=dict)  # metric -> why its labels gave no estimate

    def text(self) -> str:
        if not self.figures:
            return f"user feedback: none on the {self.n_answers} answers evaluated"
        lines = ["user feedback (beside the metrics, not mixed into them):"]
        for f in self.figures:
            use = f"labels {f.labels}" if f.labels else "labels no metric"
            lines.append(f"  {f.kind}: {f.score:.3f} [{f.ci_low:.3f}, {f.ci_high:.3f}] n={f.n} of "
                         f"{self.n_answers} answers; {use}{'; ' + f.note if f.note else ''}")
        lines += [f"  {metric}: {reason}" for metric, reason in self.skipped.items()]
        return "\n".join(lines)


def pass_metric(result: MetricResult, threshold: float) -> MetricResult:
    """`<metric>/pass`: 1 where the judge's score reaches `threshold`, else 0 (its failures stay failures)."""
    items = [ItemScore(item_id=it.item_id, score=float(it.score >= threshold), passed=it.score >= threshold,
                       details={"judged_key": it.details.get("judged_key"), "score": it.score})
             if it.ok and it.score is not None else ItemScore(item_id=it.item_id, error=it.error or "not scored")
             for it in result.items]
    info = result.info.model_copy(update={"scale": (0.0, 1.0), "binary": True, "threshold": 1.0,
                                          "description": f"{result.name} >= {threshold:g} (pass)"})
    return MetricResult.from_items(f"{result.name}/pass", items, info=info)


def _feedback_of(sample: EvalSample) -> Feedback | None:
    raw = sample.metadata.get("feedback")
    return Feedback.model_validate(raw) if raw else None


def _label(sample_id: str, feedback: Feedback, metric: str, result: MetricResult) -> HumanLabel:
    low, high = result.info.scale or (0.0, 1.0)
    return HumanLabel(item_id=sample_id, metric=metric, value=low + feedback.share * (high - low),
                      source="user feedback", stratum="feedback")


def attach_feedback(metrics: dict[str, MetricResult], samples: Sequence[EvalSample], settings: FeedbackSettings
                    ) -> tuple[dict[str, MetricResult], FeedbackSummary]:
    """Metrics with feedback-labelled estimates attached (and `<metric>/pass` added when thumbs label it),
    and the feedback summary reported beside them."""
    metrics = dict(metrics)
    target = {"thumbs": settings.thumbs_metric, "rating": settings.rating_metric}
    thumbs_target = settings.thumbs_metric
    if thumbs_target and thumbs_target.endswith("/pass") and thumbs_target not in metrics:
        base = thumbs_target.removesuffix("/pass")
        if base in metrics:
            metrics[thumbs_target] = pass_metric(metrics[base], settings.pass_threshold)
    labels: list[HumanLabel] = []
    summary = FeedbackSummary(n_answers=len(samples))
    for kind, title in (("thumbs", "thumbs up share"), ("rating", "rating (0..1 of its scale)")):
        given = [(s.id, f) for s in samples if (f := _feedback_of(s)) is not None and f.kind == kind]
        if not given:
            continue
        mean, low, high, _ = mean_interval([f.share for _, f in given], scale=(0.0, 1.0))
        metric = target[kind]
        note = ""
        if metric is not None and metric in metrics:
            labels += [_label(i, f, metric, metrics[metric]) for i, f in given]
            note = SELF_SELECTED
        elif metric is not None:
            note = f"{metric} is not measured in this run (enable its judge to use feedback as its labels)"
            metric = None
        assert low is not None and high is not None
        summary.figures.append(FeedbackFigure(kind=title, score=mean, ci_low=low, ci_high=high, n=len(given),
                                              labels=metric, note=note))
    if labels:
        metrics, summary.skipped = attach_labelled(metrics, HumanLabels().merge(labels, source="user feedback"))
    return metrics, summary
