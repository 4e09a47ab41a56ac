"""The one shape every metric returns: aggregate, per-item scores, per-item details.

An item that could not be scored is an explicit failure with its reason (`error`), never NaN and
never a dropped row. Aggregates say how many items were scored and how many failed.

Example:
    >>> items = [ItemScore(item_id="q1", score=1.0), ItemScore(item_id="q2", error="judge reply unparsable")]
    >>> result = MetricResult.from_items("hit_rate@5", items)
    >>> (result.score, result.n_scored, result.n_failed)
    (1.0, 1, 1)
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from ragwatch.statistics.intervals import mean_interval

Direction = Literal["higher", "lower"]
# What made the metric: a retrieval ranking, the system as it ran, keyword tests, an LLM judge, or
# anything else (a metric of the user's own).
Family = Literal["retrieval", "system", "e2e", "judge", "other"]
# An item's own value of a score that is a level, not the mean of item scores: faithfulness's mean
# calibrated P(supported) of the item's statements (`ragwatch.judges.faithfulness.level.with_level`
# writes it; tests/unit/test_compare_level.py holds the two to the same key).
LEVEL_ITEM_KEY = "calibrated_share"
# Why a metric that compares with a reference answer skips an item asked without one (`ItemScore.skipped`).
NO_REFERENCE = "no reference answer"


class JudgeAgreement(BaseModel):
    """A judge's measured agreement with labels of the kind it scores: what its figures can be trusted for.

    `data` says what was labelled (e.g. "statements of RAG answers over the ZenML docs sample") and
    `labels` by whom ("reference labels: two careful readings by a strong LLM annotator", or human
    labels); intervals are 95% bootstrap intervals over `n` labelled statements or items; the verdicts
    scored are the shipped ones (the model's cut-off), fitted parts cross-fitted.
    """

    kappa: float
    kappa_ci: tuple[float, float]
    balanced_accuracy: float
    balanced_accuracy_ci: tuple[float, float]
    n: int
    data: str
    labels: str

    def describe(self) -> str:
        return (f"Cohen's kappa {self.kappa:.2f} [{self.kappa_ci[0]:.2f}, {self.kappa_ci[1]:.2f}], balanced "
                f"accuracy {self.balanced_accuracy:.2f} [{self.balanced_accuracy_ci[0]:.2f}, "
                f"{self.balanced_accuracy_ci[1]:.2f}] on {self.n} {self.data} ({self.labels})")


class MetricInfo(BaseModel):
    """What a metric is and means: the typed facts that the gate, compare, report and printout read.

    Identity is set where the metric is made, so that no consumer parses a metric's name: `family`
    (who made it), `measure` (e.g. "hit_rate", without mode or k), `mode` (the retrieval mode),
    `k` (the cut-off: the ranking depth of an at-k measure, the system's own top_k) and
    `judge_model` (the model behind an LLM judge's scores) and `agreement` (how far its verdicts agree
    with labelled data of the kind it scores, when measured).
    `scale` bounds an item's score ((0, 1) for rates and pass/fail, (1, 5) for Likert judges,
    None when unbounded, e.g. perplexity); `binary` says item scores are 0/1, which selects the
    interval (a proportion's vs a bounded mean's). `threshold` is the pass cut-off on the item score
    (None: the metric has no pass/fail reading). `prompt_version` ties a judge's figures to its prompt.

    Example:
        >>> MetricInfo(direction="lower", scale=(1.0, 5.0)).higher_is_better
        False
    """

    direction: Direction = "higher"
    scale: tuple[float, float] | None = (0.0, 1.0)
    binary: bool = False
    threshold: float | None = None
    prompt_version: str | None = None
    description: str = ""
    family: Family = "other"
    measure: str | None = None
    mode: str | None = None
    k: int | None = None
    judge_model: str | None = None
    agreement: JudgeAgreement | None = None  # a judge's measured agreement on labelled data of its kind
    # the calibration a score was levelled with (its model, prompt, features version and a digest of its fitted
    # model and labelled data): the same answers levelled by another calibration read differently
    calibration: str | None = None

    @property
    def higher_is_better(self) -> bool:
        return self.direction == "higher"

    @property
    def is_judge(self) -> bool:
        """An LLM-judged metric (the one answer to "is this a judge?")."""
        return self.family == "judge"

    def judge_change(self, old: MetricInfo) -> str | None:
        """How the judge behind these scores differs from `old`'s (model, prompt version, the calibration that
        levelled them), else None. A calibration recorded on one side only is a change: a run stored before
        calibrations were recorded was levelled by an earlier one."""
        if not (self.is_judge and old.is_judge):
            return None
        changes = [f"{label} {a} -> {b}" for label, a, b in (
            ("judge model", old.judge_model, self.judge_model),
            ("prompt", old.prompt_version, self.prompt_version)) if a and b and a != b]
        if self.calibration != old.calibration and (self.calibration or old.calibration):
            changes.append(f"level calibrated by {old.calibration or 'an unrecorded calibration'} -> "
                           f"{self.calibration or 'none'}")
        return ", ".join(changes) or None


class LabelledEstimate(BaseModel):
    """The metric re-estimated from human labels on some items plus the judge on all of them.

    Filled by prediction-powered inference (`method`, e.g. "ppi++"); unbiased however biased the
    judge is. `n_labels` items carry a human label, `n_items` carry a judge score.
    """

    method: str
    score: float
    ci_low: float
    ci_high: float
    n_labels: int
    n_items: int
    labelled_only_ci: tuple[float, float] | None = None  # the interval from the labels alone, for contrast
    details: dict[str, Any] = Field(default_factory=dict)


class ItemScore(BaseModel):
    """The score of one item, or the reason it has none.

    `skipped`: the metric does not apply to this item for want of an input the item lacks (e.g. "no
    reference answer" for correctness on a question asked without one): `error` says why, the item has
    no score and counts in `MetricResult.n_skipped`, apart from the metric's failures (`n_failed`).
    """

    item_id: str
    score: float | None = None
    passed: bool | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    skipped: bool = False

    @model_validator(mode="after")
    def _scored_or_failed(self) -> ItemScore:
        if self.skipped and self.error is None:
            raise ValueError(f"item {self.item_id!r}: a skipped item says why in `error`")
        if self.error is None:
            if self.score is None:
                raise ValueError(f"item {self.item_id!r}: a score or an error is required")
            if not math.isfinite(self.score):
                raise ValueError(f"item {self.item_id!r}: score {self.score} is not finite; record an error")
        return self

    @property
    def ok(self) -> bool:
        return self.error is None


class MetricResult(BaseModel):
    """Aggregate of one metric over a set of items, with a 95% interval of the mean.

    The interval follows `info.scale` (`ragwatch.statistics.intervals.mean_interval`); `ci_method` names it.
    """

    name: str
    score: float | None  # None only when no item could be scored
    ci_low: float | None = None
    ci_high: float | None = None
    ci_method: str | None = None  # how the interval was computed, e.g. "agresti-coull", "t"
    n_scored: int
    n_failed: int  # items the metric tried and could not score (skipped items are not among them)
    items: list[ItemScore]
    n_skipped: int = 0  # items the metric does not apply to (`ItemScore.skipped`), each with its reason
    info: MetricInfo = Field(default_factory=MetricInfo)
    labelled: LabelledEstimate | None = None  # set when human labels exist for some items
    details: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _identity_from_old_artifacts(cls, data: Any) -> Any:
        # runs stored before `MetricInfo.family` existed kept the family in `details`: carry it over,
        # so that a comparison with such a run still knows its judges
        if isinstance(data, dict) and isinstance(data.get("details"), dict) and "family" in data["details"]:
            details = dict(data["details"])
            family = details.pop("family")
            info = data.get("info", {})
            if isinstance(info, dict) and "family" not in info:
                data = {**data, "info": {**info, "family": family}, "details": details}
        return data

    @classmethod
    def from_items(
        cls,
        name: str,
        items: list[ItemScore],
        *,
        seed: int = 0,
        details: dict[str, Any] | None = None,
        info: MetricInfo | None = None,
    ) -> MetricResult:
        info = info or MetricInfo()
        scores = [it.score for it in items if it.ok and it.score is not None]
        mean = low = high = method = None
        if scores:
            scale = info.scale
            if scale is not None and not all(scale[0] <= s <= scale[1] for s in scores):
                # an undeclared scale must not crash a run: treat the scores as unbounded and say so
                method_note = f" (scores outside the declared scale {scale}: declare MetricInfo.scale)"
                mean, low, high, method = mean_interval(scores, scale=None)
                method += method_note
            else:
                mean, low, high, method = mean_interval(scores, scale=scale)
        return cls(
            name=name,
            score=mean,
            ci_low=low,
            ci_high=high,
            ci_method=method,
            n_scored=len(scores),
            n_failed=sum(1 for it in items if not it.ok and not it.skipped),
            n_skipped=sum(1 for it in items if it.skipped),
            items=items,
            info=info,
            details=details or {},
        )

    def constant_value(self) -> float | None:
        """The one score every scored item has, when a judge gave at least 2 items the same score (of a
        level, the items' values of it: verdicts that are all "supported" under a level that varies
        still measure something)."""
        level = self.level_values()
        values = set(level.values()) if level is not None else {
            float(it.score) for it in self.items if it.ok and it.score is not None}
        return values.pop() if self.info.is_judge and self.n_scored >= 2 and len(values) == 1 else None

    def level_values(self) -> dict[str, float] | None:
        """item id -> the item's value of the level, when the score is a level that every scored item
        carries a value of (`LEVEL_ITEM_KEY`): the values the score is the mean of, and what a paired
        comparison must difference. None when the score averages the item scores, or when ids repeat."""
        scored = [it for it in self.items if it.ok and it.score is not None]
        if not scored or not all(isinstance(it.details.get(LEVEL_ITEM_KEY), int | float) for it in scored):
            return None
        values = {it.item_id: float(it.details[LEVEL_ITEM_KEY]) for it in scored}
        return values if len(values) == len(scored) else None

    def summary(self) -> dict[str, Any]:
        """Flat figures for metadata and tables (no per-item rows)."""
        return {
            "score": self.score,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "n_scored": self.n_scored,
            "n_failed": self.n_failed,
            "n_skipped": self.n_skipped,
        }
