"""Agreement of a judge with human labels: greedy and probability-weighted, with intervals.

`calibrate` runs a judge on labelled items and reports accuracy, balanced accuracy, F1 (of
"hallucinated", the class a judge must catch), Cohen's kappa and ROC AUC against the labels, each
with a bootstrap 95% interval. A prediction is "faithful" when the judge's item score (greedy) or
`weighted_score` (weighted, P(yes)) is >= `threshold`. With `tune_threshold`, the threshold of
the weighted mode is chosen on one seeded half of the items (see `ragwatch.calibration.threshold`)
and its agreement reported on the other half. For a faithfulness judge with shipped calibration data,
the level the run's headline would print is set beside the labels' mean item faithfulness
(`ragwatch.calibration.level`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from ragwatch.calibration.level import LevelCheck, level_check
from ragwatch.calibration.loaders import FAITHFUL, HALLUCINATED, CalibrationItem, to_eval_pairs
from ragwatch.calibration.threshold import ThresholdChoice, choose_threshold
from ragwatch.statistics.agreement import Estimate, balanced_accuracy, cohen_kappa, f1, roc_auc, with_interval
from ragwatch.statistics.agreement import accuracy as accuracy_of


class ModeMetrics(BaseModel):
    """Agreement of one reading of the judge (greedy or weighted) with the human labels."""

    n: int
    accuracy: Estimate
    balanced_accuracy: Estimate
    f1_hallucinated: Estimate
    cohen_kappa: Estimate
    confusion: dict[str, int]  # true/false positives/negatives, "positive" = hallucinated
    predicted_hallucinated_rate: float
    roc_auc: Estimate | None = None  # of the score for "faithful"; threshold-free


class CalibrationItemResult(BaseModel):
    id: str
    label: str
    score: float | None = None
    weighted_score: float | None = None
    greedy: str | None = None
    weighted: str | None = None
    reason: str | None = None
    error: str | None = None


class CalibrationReport(BaseModel):
    """Greedy and probability-weighted agreement with human labels, plus every item's outcome."""

    judge: str
    model: str
    dataset: str
    n_items: int
    n_failed: int
    threshold: float
    label_counts: dict[str, int]
    modes: dict[str, ModeMetrics | None]
    unavailable: dict[str, str] = Field(default_factory=dict)  # mode -> why it has no figures
    items: list[CalibrationItemResult]
    usage: dict[str, Any] = Field(default_factory=dict)
    threshold_choice: ThresholdChoice | None = None  # weighted-mode threshold tuned on one split
    level: LevelCheck | None = None  # faithfulness: the level estimate beside the labels' mean item faithfulness

    def to_markdown(self) -> str:
        def cell(e: Estimate) -> str:
            return f"{e.value:.3f} [{e.ci_low:.3f}, {e.ci_high:.3f}]"

        lines = [
            f"### Judge calibration: {self.judge} ({self.model or 'unknown model'}) on {self.dataset}",
            "",
            f"{self.n_items} items ({self.label_counts.get(HALLUCINATED, 0)} hallucinated), "
            f"{self.n_failed} failed to judge; faithful when score >= {self.threshold}; "
            "F1 of the hallucinated class; 95% bootstrap intervals.",
            "",
            "| mode | n | accuracy | balanced accuracy | F1 (hallucinated) | Cohen's kappa | pred. halluc. "
            "| ROC AUC |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for mode, m in self.modes.items():
            if m is None:
                lines.append(f"| {mode} | 0 | {self.unavailable.get(mode, 'n/a')} | | | | | |")
                continue
            lines.append(f"| {mode} | {m.n} | {cell(m.accuracy)} | {cell(m.balanced_accuracy)} | "
                         f"{cell(m.f1_hallucinated)} | {cell(m.cohen_kappa)} | "
                         f"{m.predicted_hallucinated_rate:.2f} | {cell(m.roc_auc) if m.roc_auc else 'n/a'} |")
        if self.threshold_choice is not None:
            lines += ["", self.threshold_choice.to_markdown()]
        if self.level is not None:
            lines += ["", self.level.describe()]
        failures = [it for it in self.items if it.error]
        if failures:
            lines += ["", "Failed items:"] + [f"- {it.id}: {it.error}" for it in failures[:20]]
        return "\n".join(lines)


def _mode_metrics(
    truth: list[str], pred: list[str], *, seed: int, resamples: int, scores: list[float] | None = None
) -> ModeMetrics:
    kw = {"seed": seed, "resamples": resamples}
    auc = with_interval(roc_auc, truth, scores, positive=FAITHFUL, **kw) if scores is not None else None
    pairs = list(zip(truth, pred, strict=True))
    return ModeMetrics(
        n=len(truth),
        accuracy=with_interval(accuracy_of, truth, pred, **kw),
        balanced_accuracy=with_interval(balanced_accuracy, truth, pred, **kw),
        f1_hallucinated=with_interval(f1, truth, pred, positive=HALLUCINATED, **kw),
        cohen_kappa=with_interval(cohen_kappa, truth, pred, **kw),
        confusion={
            "tp": pairs.count((HALLUCINATED, HALLUCINATED)), "fp": pairs.count((FAITHFUL, HALLUCINATED)),
            "fn": pairs.count((HALLUCINATED, FAITHFUL)), "tn": pairs.count((FAITHFUL, FAITHFUL)),
        },
        predicted_hallucinated_rate=pred.count(HALLUCINATED) / len(pred),
        roc_auc=auc,
    )


def calibrate(judge: Any, items: Sequence[CalibrationItem], *, threshold: float = 0.5, dataset: str = "",
              seed: int = 0, resamples: int = 2000, tune_threshold: bool = True) -> CalibrationReport:
    """Run `judge` (any `Judge`: `evaluate(samples, answers) -> MetricResult`) and compare with labels.

    Items the judge fails on are listed with their reason and left out of the agreement figures
    (their number is `n_failed`); the weighted mode uses the items that carry a `weighted_score`.
    """
    if not items:
        raise ValueError("no calibration items: load a labelled set first")
    samples, answers = to_eval_pairs(items)
    result = judge.evaluate(samples, answers)
    if len(result.items) != len(items):
        raise ValueError(f"judge {getattr(judge, 'name', judge)!r} returned {len(result.items)} items "
                         f"for {len(items)}")

    def verdict(score: float | None) -> str | None:
        return None if score is None else FAITHFUL if score >= threshold else HALLUCINATED

    rows = []
    for item, scored in zip(items, result.items, strict=True):
        weighted = scored.details.get("weighted_score") if scored.ok else None
        rows.append(CalibrationItemResult(
            id=item.id, label=item.label, score=scored.score if scored.ok else None,
            weighted_score=weighted, greedy=verdict(scored.score) if scored.ok else None,
            weighted=verdict(weighted), reason=scored.details.get("reason"), error=scored.error,
        ))
    modes: dict[str, ModeMetrics | None] = {}
    unavailable: dict[str, str] = {}
    for mode in ("greedy", "weighted"):
        done = [r for r in rows if getattr(r, mode) is not None]
        if done:
            scores = [r.score if mode == "greedy" else r.weighted_score for r in done]
            modes[mode] = _mode_metrics([r.label for r in done], [getattr(r, mode) for r in done],
                                        seed=seed, resamples=resamples, scores=scores)
        else:
            modes[mode] = None
            unavailable[mode] = ("every item failed" if mode == "greedy" else
                                 "no weighted scores: enable logprobs (the provider must return them)")
    usage = result.details.get("usage", {})
    weighted_rows = [r for r in rows if r.weighted_score is not None]
    choice = None
    if tune_threshold and weighted_rows:
        choice = choose_threshold([r.weighted_score for r in weighted_rows],
                                  [r.label == FAITHFUL for r in weighted_rows], seed=seed, resamples=resamples)
    return CalibrationReport(
        judge=getattr(judge, "name", type(judge).__name__), model=str(usage.get("model", "")),
        dataset=dataset, n_items=len(items), n_failed=sum(r.error is not None for r in rows),
        threshold=threshold,
        label_counts={FAITHFUL: sum(it.faithful for it in items),
                      HALLUCINATED: sum(not it.faithful for it in items)},
        modes=modes, unavailable=unavailable, items=rows, usage=usage, threshold_choice=choice,
        level=level_check(judge, items, result),
    )

