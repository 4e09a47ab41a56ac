"""Users' feedback in a log, per window: what users said as a share with its interval, its change
across windows, and, where a judge scores the same answers, a prediction-powered level of the metric
the feedback labels.

Which metric a feedback labels (`FeedbackSettings`, documented in docs/monitoring.md):
- thumbs (up/down) say "this answer served me": they label `answer_relevance/pass`, the answer
  relevance judge's verdict that the answer addresses the question (its 1-5 score >= 4), a 0/1 metric
  derived here from the judge's items (`pass_metric`);
- ratings (with their scale) label `answer_relevance` itself, rescaled onto its 1-5 scale;
- never faithfulness or a context metric: a user does not see the retrieved passages.

Per window (`FeedbackSummary`):
- each kind's share (thumbs up, or the rating on 0..1 of its scale) over every answer of the window
  that has one, with its interval (`mean_interval`: Agresti-Coull for thumbs) and n;
- its unpaired change against an earlier window (`feedback_changes`: `unpaired_diff_interval`, MOVER);
- the prediction-powered level (`FeedbackLevel`, PPI++ of `ragwatch.statistics.ppi`): the judge's
  score of every judged answer, corrected by the feedback on the judged answers that have one, beside
  the judge's raw mean. The labels' variance given the judge is floored (`label_noise`) so that a few
  agreeing thumbs do not claim that no label varies.

What feedback measures (`SELF_SELECTED`, printed with it): only some users click, and not at random.
The share is what the users who chose to rate said; the level treats the rated answers as a random
sample of the judged ones. Neither is a careful label: both are shown beside the metrics, and the
level never fills a metric's `labelled` estimate (that slot is for labels of a sample drawn at random,
`run.py review`).

Example:
    >>> metrics, summary = attach_feedback(group.metrics, samples, FeedbackSettings())  # doctest: +SKIP
    >>> print(summary.text())  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist

import numpy as np
from pydantic import BaseModel, Field

from ragwatch.fmt import fmt_num, fmt_signed
from ragwatch.logsources.records import Feedback
from ragwatch.monitoring.settings import FeedbackSettings
from ragwatch.results import ItemScore, MetricResult
from ragwatch.statistics.intervals import mean_interval, unpaired_diff_interval
from ragwatch.statistics.ppi import ppi_mean
from ragwatch.types import EvalSample

SELF_SELECTED = ("what users chose to rate, not a random sample of the answers: only some users click, and "
                 "the annoyed (or the pleased) click more, so the share is the raters' verdict, not the "
                 "answers' quality. The prediction-powered level treats the rated answers as a random sample of the "
                 "judged ones; when rating depends on the answer, no number of thumbs corrects that: labels "
                 "of a random sample do (review serve). Shown beside the metrics, not instead of them")
KINDS = (("thumbs", "thumbs up share"), ("rating", "rating (0..1 of its scale)"))
MIN_LABELS = 2  # an interval needs a variance
MAX_STRATA = 10  # judge scores with more distinct values are cut into quintiles for the label noise


class FeedbackFigure(BaseModel):
    """One kind of feedback in one window: its mean on 0..1, interval and n (over every answer of the
    window that has one), and the values themselves for the change between windows."""

    kind: str  # "thumbs up share" or "rating (0..1 of its scale)"
    score: float
    ci_low: float
    ci_high: float
    n: int
    labels: str | None = None  # the metric it labels, or None
    note: str = ""
    values: list[float] = Field(default_factory=list)  # each feedback on 0..1


class FeedbackLevel(BaseModel):
    """The prediction-powered level of the metric a feedback labels, in one window: the judge on every
    judged answer, corrected by the feedback on those of them that have one (PPI++), beside the judge's
    raw mean."""

    metric: str
    kind: str
    score: float
    ci_low: float
    ci_high: float
    n_labels: int
    n_judged: int
    lam: float  # PPI++'s weight on the judge (0: the labels alone)
    judge_mean: float
    judge_ci_low: float | None = None
    judge_ci_high: float | None = None
    judge_mean_rated: float  # the judge's mean on the rated answers: far from judge_mean, raters are not random
    labels_only: float
    labels_only_ci: tuple[float, float]
    confidence: float = 0.95


class FeedbackChange(BaseModel):
    """A feedback share of one window minus that of an earlier one (unpaired: different answers)."""

    kind: str
    label: str  # "vs previous window", "vs reference window"
    new_window: str
    old_window: str
    diff: float
    ci_low: float
    ci_high: float
    n_new: int
    n_old: int
    confidence: float = 0.95

    @property
    def shown(self) -> bool:
        """The interval excludes 0: a change is shown (at this interval's level, for this one comparison)."""
        return self.ci_low > 0 or self.ci_high < 0

    def text(self) -> str:
        word = ("up" if self.diff > 0 else "down") if self.shown else "no change shown"
        return (f"{self.label} ({self.old_window}): {fmt_signed(self.diff)} [{fmt_signed(self.ci_low)}, "
                f"{fmt_signed(self.ci_high)}] n={self.n_new}/{self.n_old}, {word}")


class FeedbackSummary(BaseModel):
    """What users said in one window (`window`: its name), beside the metrics."""

    window: str = ""
    n_answers: int = 0  # answers of the window (the shares are over all of them)
    n_judged: int = 0  # answers the judges scored (the levels are over those)
    figures: list[FeedbackFigure] = Field(default_factory=list)
    levels: list[FeedbackLevel] = Field(default_factory=list)
    skipped: dict[str, str] = Field(default_factory=dict)  # metric -> why its feedback gave no level

    def figure(self, kind: str) -> FeedbackFigure | None:
        return next((f for f in self.figures if f.kind == kind), None)

    def text(self) -> str:
        if not self.figures:
            return f"user feedback: none on the {self.n_answers} answers of the window"
        lines = ["user feedback (beside the metrics, not mixed into them):"]
        for f in self.figures:
            use = f"labels {f.labels}" if f.labels else "labels no metric"
            lines.append(f"  {f.kind}: {f.score:.3f} [{f.ci_low:.3f}, {f.ci_high:.3f}] n={f.n} of "
                         f"{self.n_answers} answers; {use}{'; ' + f.note if f.note else ''}")
        lines += [f"  {level_text(level, '  ')}" for level in self.levels]
        lines += [f"  {metric}: {reason}" for metric, reason in self.skipped.items()]
        return "\n".join(lines)


def level_text(level: FeedbackLevel, indent: str = "") -> str:
    """The level with its interval and n; on a second line the judge's raw mean and the labels alone."""
    judge = f"{fmt_num(level.judge_mean)} [{fmt_num(level.judge_ci_low)}, {fmt_num(level.judge_ci_high)}]"
    return (f"{level.metric} from judge + {level.kind}: {fmt_num(level.score)} [{fmt_num(level.ci_low)}, "
            f"{fmt_num(level.ci_high)}] (prediction-powered, {level.confidence:.0%}), n labels={level.n_labels}, "
            f"n judged={level.n_judged}, lambda={level.lam:.2f}\n{indent}  beside it: raw judge mean {judge}; the "
            f"judge on the rated answers {fmt_num(level.judge_mean_rated)}; the labels alone "
            f"{fmt_num(level.labels_only)} [{fmt_num(level.labels_only_ci[0])}, {fmt_num(level.labels_only_ci[1])}]")


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


def label_noise(y: np.ndarray, f: np.ndarray, confidence: float = 0.95) -> np.ndarray:
    """The standard deviation of each label (on 0..1) given the judge's score, per stratum of the score
    (its distinct values, or quintiles beyond `MAX_STRATA` of them), with Agresti-Coull's z^2/2
    pseudo-labels at each end of the scale shared among the strata by their size (for 0/1 labels in one
    stratum the variance is Agresti-Coull's p~(1 - p~)). A floor under the prediction-powered variance:
    Var(y - lambda f) >= E Var(y | f) for every lambda, and without the pseudo-labels a stratum whose
    few labels agree would claim that no label varies."""
    y, f = np.asarray(y, dtype=float), np.asarray(f, dtype=float)
    if np.unique(f).size <= MAX_STRATA:
        keys = f
    else:
        keys = np.searchsorted(np.quantile(f, [0.2, 0.4, 0.6, 0.8]), f, side="right").astype(float)
    pseudo = NormalDist().inv_cdf(0.5 + confidence / 2) ** 2 / 2
    out = np.empty_like(y)
    for key in np.unique(keys):
        inside = keys == key
        ys = y[inside]
        a = pseudo * ys.size / y.size
        total = ys.size + 2 * a
        mean = (ys.sum() + a) / total
        out[inside] = np.sqrt((((ys - mean) ** 2).sum() + a * mean**2 + a * (1 - mean) ** 2) / total)
    return out


def feedback_level(result: MetricResult, given: Sequence[tuple[str, Feedback]], kind: str,
                   confidence: float = 0.95) -> tuple[FeedbackLevel | None, str | None]:
    """The prediction-powered level of `result` from the feedback `given` ((item id, feedback) pairs) on
    its scored items, or None and the reason."""
    scored = {it.item_id: float(it.score) for it in result.items if it.ok and it.score is not None}
    used = [(i, fb) for i, fb in given if i in scored]
    if len(used) < MIN_LABELS:
        return None, (f"{len(used)} of the judged answers have {kind} feedback; at least {MIN_LABELS} are needed "
                      "for a level (a larger window.budget judges more of the rated answers)")
    low, high = result.info.scale or (0.0, 1.0)
    share = np.array([fb.share for _, fb in used])
    f_rated = np.array([scored[i] for i, _ in used])
    f_all = np.array(list(scored.values()))
    noise = label_noise(share, f_rated, confidence) * (high - low)
    est = ppi_mean(low + share * (high - low), f_rated, f_all, confidence=confidence, bounds=(low, high),
                   noise=noise)
    assert result.score is not None  # two scored items at least
    return FeedbackLevel(metric=result.name, kind=kind, score=est.estimate, ci_low=est.ci_low, ci_high=est.ci_high,
                         n_labels=est.n_labels, n_judged=est.n_items, lam=est.lam, judge_mean=result.score,
                         judge_ci_low=result.ci_low, judge_ci_high=result.ci_high,
                         judge_mean_rated=float(f_rated.mean()), labels_only=est.labelled_only,
                         labels_only_ci=est.labelled_only_ci, confidence=confidence), None


def attach_feedback(metrics: dict[str, MetricResult], samples: Sequence[EvalSample], settings: FeedbackSettings,
                    *, window_samples: Sequence[EvalSample] | None = None, window: str = "",
                    confidence: float = 0.95) -> tuple[dict[str, MetricResult], FeedbackSummary]:
    """The metrics (with `<metric>/pass` added when thumbs label it) and the window's feedback summary.

    `samples` are the judged answers (the levels use the feedback on those); `window_samples` every
    answer of the window (the shares use all of them; default: `samples`)."""
    metrics = dict(metrics)
    target = {"thumbs": settings.thumbs_metric, "rating": settings.rating_metric}
    thumbs_target = settings.thumbs_metric
    if thumbs_target and thumbs_target.endswith("/pass") and thumbs_target not in metrics:
        base = thumbs_target.removesuffix("/pass")
        if base in metrics:
            metrics[thumbs_target] = pass_metric(metrics[base], settings.pass_threshold)
    every = list(window_samples) if window_samples is not None else list(samples)
    summary = FeedbackSummary(window=window, n_answers=len(every), n_judged=len(samples))
    for kind, title in KINDS:
        given = [(s.id, f) for s in every if (f := _feedback_of(s)) is not None and f.kind == kind]
        if not given:
            continue
        values = [f.share for _, f in given]
        mean, low, high, _ = mean_interval(values, scale=(0.0, 1.0), confidence=confidence)
        metric = target[kind]
        note = SELF_SELECTED
        if metric is not None and metric in metrics:
            level, reason = feedback_level(metrics[metric], given, title, confidence)
            if level is not None:
                summary.levels.append(level)
            else:
                summary.skipped[metric] = reason or ""
        elif metric is not None:
            note = f"{metric} is not measured in this run (enable its judge for a level from the feedback)"
            metric = None
        assert low is not None and high is not None
        summary.figures.append(FeedbackFigure(kind=title, score=mean, ci_low=low, ci_high=high, n=len(given),
                                              labels=metric, note=note, values=values))
    return metrics, summary


def feedback_changes(new: FeedbackSummary, old: FeedbackSummary, label: str, confidence: float = 0.95
                     ) -> list[FeedbackChange]:
    """Each kind of feedback of `new` minus that of `old` (unpaired, MOVER interval), where both have it."""
    out = []
    for figure in new.figures:
        before = old.figure(figure.kind)
        if before is None or not figure.values or not before.values:
            continue
        diff, low, high = unpaired_diff_interval(figure.values, before.values, confidence=confidence,
                                                 scale=(0.0, 1.0))
        out.append(FeedbackChange(kind=figure.kind, label=label, new_window=new.window, old_window=old.window,
                                  diff=diff, ci_low=low, ci_high=high, n_new=figure.n, n_old=before.n,
                                  confidence=confidence))
    return out
