"""The budget planner: how many labels, chosen actively, buy a 95% interval of a wanted width on a
judged metric's prediction-powered level, how many judge calls that needs, and what was bought.

The interval is the one `ragwatch.review.labelled` computes once labels exist (PPI++ over the run's
N judged items, labels weighted by 1 / inclusion probability): its variance is the labels' part, the
design variance of the residuals `label - judge value` under the active draw `review serve` makes,
plus `Var(label) / N`, the sampling of the items, which no label reduces. `plan_width` predicts both
and asks `ragwatch.statistics.active.labels_needed` (the gate's power computation, at power 1/2 and
the interval's t quantile) for the fewest labels whose interval is no wider than wanted.

The prediction rests on an assumption about the judge's errors, which the plan states (`JudgeErrors`):
- `calibration`: the judge's calibrated P(supported) per statement (faithfulness, the shipped
  calibration): a reader's label of an answer varies by `noise` (`ragwatch.review.spread`) around the
  mean P(supported), and lands `expected - judge value` away from the value PPI corrects;
- `agreement`: a pass/fail judge with a measured agreement (`MetricInfo.agreement`): it errs on
  1 - balanced accuracy of the answers;
- `score`: nothing measured: the score read as a probability, `sqrt(s (1 - s))` (a rough prior);
- `labels`: at least `MIN_MEASURED_LABELS` of this run's labels: half the prior's residual variances
  scaled to the weighted residual variance the labels show (`variance_ratio`; 1 when the prior was
  right), half the labels' own design-based estimate of each residual (their squared residual times
  1 / inclusion probability, at the labelled items: right whatever the prior's shape, noisy from few
  labels); the labels' own variance for `Var(label)`. A judge overconfident against its calibration is
  caught here: label a few, plan again.
Active selection's gain is stated as the labels a uniform draw would need for the same width.

A window judged on a sample (`window.budget` of a log): more judge calls shrink `Var(label) / N`; the
plan then also gives the fewest answers to judge for the width to be reachable and the window judged
whole, each with its labels and costs (`PlanOption`), the judged answers' figures standing in for the
unjudged ones (a simple random sample of the window).

Example:
    >>> plan = plan_width(result, 0.10, labels=labels.for_metric("faithfulness"))  # doctest: +SKIP
    >>> plan.chosen.labels, plan.errors.describe()  # doctest: +SKIP
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import BaseModel

from ragwatch.results import LabelledEstimate, MetricResult
from ragwatch.review.labelled import labelled_estimate, usable_labels
from ragwatch.review.labels import HumanLabel
from ragwatch.review.spread import expected_label, spreads_of
from ragwatch.statements import statement_verdicts
from ragwatch.statistics.active import interval_reach, labels_needed

DEFAULT_SECONDS_PER_LABEL = 30.0  # a reader's time per answer labelled (reading it, its contexts, its statements)
MIN_MEASURED_LABELS = 10  # fewer of this run's labels measure the judge's errors too roughly to plan on
# measured on labels, the residual variances are this share the labels' design-based estimate, the rest the
# prior's shape scaled to the labels (benchmarks/label_plan_accuracy.py, the pilot flow, compared 0, 1/2, 1)
DESIGN_SHARE = 0.5
CONFIDENCE = 0.95  # the interval `review.labelled` reports
Basis = Literal["calibration", "agreement", "score", "labels"]


class JudgeErrors(BaseModel):
    """The assumption behind a count: how far a reader's label is expected to land from the judge."""

    basis: Basis
    prior: Basis  # what the residuals' shape comes from (equal to `basis` unless labels scaled it)
    variance_ratio: float = 1.0  # residual variance the labels show / the prior's prediction
    n_labels: int = 0  # this run's labels it was measured on
    agreement: str = ""  # the judge's shipped agreement, in words, when known

    def describe(self) -> str:
        prior = {
            "calibration": "the judge's calibrated P(supported) per statement (the shipped calibration"
                           + (f": {self.agreement}" if self.agreement else "") + ") is right for this run",
            "agreement": f"the judge errs on 1 - balanced accuracy of the answers ({self.agreement})",
            "score": "the judge's score read as a probability (nothing measured: a rough prior)",
            "labels": "",
        }[self.prior]
        if self.basis == "labels":
            return (f"measured on this run's {self.n_labels} labels: their residuals vary "
                    f"{self.variance_ratio:.2f}x as much as assuming {prior} predicts")
        return (f"assumed: {prior}; not yet checked on this run's labels ({self.n_labels} usable; label "
                f"{MIN_MEASURED_LABELS} or more and plan again to measure it)")


class UnitCost(BaseModel):
    """What judging one more answer costs (`ragwatch.review.plan_cost.judge_unit_cost`)."""

    model: str
    calls_per_answer: float
    seconds_per_call: float | None = None  # None: no recorded run of this stage on this machine
    dollars_per_answer: float | None = None  # None: the cost map does not price the model
    batch_dollars_per_answer: float | None = None  # None: the provider has no batch API (or local)
    rate: str = ""  # where the seconds come from (`StageRate.describe`)


class PlanOption(BaseModel):
    """One way to the width: answers judged, labels, and what they cost."""

    judged: int  # answers the estimate is over
    more_answers: int  # of them still to judge
    judge_calls: int
    labels: int | None  # None: not even every judged answer labelled gives the width
    labels_uniform: int | None  # what a uniform draw would need (active selection's gain)
    predicted_width: float  # at `labels` (at every judged answer labelled when `labels` is None)
    label_seconds: float | None = None
    judge_seconds: float | None = None
    judge_dollars: float | None = None
    judge_dollars_batch: float | None = None


class Bought(BaseModel):
    """After labelling: the labels the estimate used and the width they bought, against the promise."""

    labels: int
    estimate: float
    ci_low: float
    ci_high: float
    promised_width: float | None = None
    promised_labels: int | None = None

    @property
    def width(self) -> float:
        return self.ci_high - self.ci_low


class WidthPlan(BaseModel):
    """How many labels (and judge calls) buy `width` on `metric`, and, once labels exist, what they bought."""

    metric: str
    width: float
    scale: tuple[float, float] | None
    n_judged: int
    n_population: int  # answers the level is about (a window's, when it was judged on a sample)
    judge_level: float | None  # the judge-only figure the labels will correct
    labels_given: int  # usable labels the run already has
    errors: JudgeErrors
    options: list[PlanOption]
    chosen_index: int
    seconds_per_label: float = DEFAULT_SECONDS_PER_LABEL
    unit: UnitCost | None = None
    bought: Bought | None = None
    note: str = ""

    @property
    def chosen(self) -> PlanOption:
        return self.options[self.chosen_index]

    def promise(self) -> dict[str, float | int | None]:
        """What the plan promised, for run metadata (`Bought` reads it back)."""
        return {"width": self.width, "labels": self.chosen.labels, "predicted_width": self.chosen.predicted_width,
                "judged": self.chosen.judged, "basis": self.errors.basis}


class ErrorModel(BaseModel):
    """Per judged item: the draw's spread (`review_sample`'s), the planned residual size; and Var(label)."""

    draw: list[float]
    residual: list[float]
    label_variance: float
    errors: JudgeErrors


def error_model(result: MetricResult, labels: dict[str, HumanLabel] | None = None) -> ErrorModel:
    """The judge's expected errors on `result`'s scored items (see the module doc)."""
    spreads = spreads_of(result)
    judged = _judge_values(result)
    ids = [i for i in judged if i in spreads]
    if len(ids) < 2:
        raise ValueError(f"{result.name}: {len(ids)} scored item(s); a plan needs at least 2 judged answers")
    items = {it.item_id: it for it in result.items}
    f = np.array([judged[i] for i in ids])
    expected = np.array([_or(expected_label(items[i]), judged[i]) for i in ids])
    noise = np.array([spreads[i][1] for i in ids])
    draw = [spreads[i][0] for i in ids]
    agreement = result.info.agreement
    low, high = result.info.scale or (0.0, 1.0)
    scale_width = high - low if high > low else 1.0
    has_probs = all((vs := statement_verdicts(items[i].details)) and all(v.p_supported is not None for v in vs)
                    for i in ids)
    if has_probs:
        prior: Basis = "calibration"
        gap = expected - f
        var = noise**2 + (gap - gap.mean()) ** 2  # the Hajek estimate centres the residuals
    elif result.info.binary and agreement is not None:
        prior = "agreement"
        error_rate = min(max(1.0 - agreement.balanced_accuracy, 0.0), 1.0)
        var = np.full(f.size, error_rate * scale_width**2)
    else:
        prior = "score"
        var = noise**2
    label_var = float(np.var(expected, ddof=1) + var.mean())
    errors = JudgeErrors(basis=prior, prior=prior, agreement=agreement.describe() if agreement else "")
    used = usable_labels(result, labels or {})
    errors.n_labels = len(used)
    if len(used) >= MIN_MEASURED_LABELS:
        index = {i: k for k, i in enumerate(ids)}
        k = np.array([index[lab.item_id] for lab in used])
        y = np.array([lab.value for lab in used])
        w = np.array([1.0 / lab.inclusion_prob for lab in used])
        r = y - f[k]
        measured = float((w * (r - (w * r).sum() / w.sum()) ** 2).sum() / w.sum()) * len(r) / (len(r) - 1)
        predicted = float((w * var[k]).sum() / w.sum())
        ratio = measured / predicted if predicted > 0 else math.inf
        scaled = var * ratio if predicted > 0 else np.full(f.size, measured)
        # the labels' own design-based estimate of each item's squared residual (1 / inclusion probability,
        # rescaled to N): unbiased for the variance the next draw will have whatever the prior's shape, but
        # noisy from a few labels; the scaled prior is steady but wrong where the judge's shape is
        direct = np.zeros(f.size)
        direct[k] = (r - (w * r).sum() / w.sum()) ** 2 * w * (f.size / w.sum())
        var = (1 - DESIGN_SHARE) * scaled + DESIGN_SHARE * direct
        label_var = float((w * (y - (w * y).sum() / w.sum()) ** 2).sum() / w.sum()) * len(y) / (len(y) - 1)
        errors = errors.model_copy(update={"basis": "labels", "variance_ratio": ratio if predicted > 0 else 1.0})
    return ErrorModel(draw=draw, residual=np.sqrt(var).tolist(), label_variance=label_var, errors=errors)


def _judge_values(result: MetricResult) -> dict[str, float]:
    """The value PPI corrects per scored item, as `labelled_estimate` takes it."""
    return result.level_values() or {it.item_id: float(it.score) for it in result.items
                                     if it.ok and it.score is not None}


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def _resized(values: list[float], size: int) -> np.ndarray:
    """The judged answers' figures standing in for `size` answers of the window (seeded, in turn)."""
    arr = np.asarray(values, dtype=float)
    if size <= arr.size:
        return arr
    order = np.random.default_rng(0).permutation(arr.size)
    return np.resize(arr[order], size)


def _option(model: ErrorModel, judged: int, width: float, n_judged: int, calls_per_answer: float) -> PlanOption:
    draw, residual = _resized(model.draw, judged), _resized(model.residual, judged)
    kwargs = {"residual": residual, "extra_variance": model.label_variance / judged, "power": 0.5,
              "student": True, "confidence": CONFIDENCE}
    k = labels_needed(draw, width / 2, **kwargs)
    k_uniform = labels_needed(np.ones(judged), width / 2, **kwargs)
    reach = interval_reach(draw, k or judged, **kwargs)
    more = max(judged - n_judged, 0)
    return PlanOption(judged=judged, more_answers=more, judge_calls=math.ceil(more * calls_per_answer), labels=k,
                      labels_uniform=k_uniform, predicted_width=2 * reach)


def _fewest_judged(model: ErrorModel, width: float, n_judged: int, n_population: int) -> int | None:
    """The fewest answers of the window to judge for the width to be reachable with every one labelled."""
    def reachable(n: int) -> bool:
        return labels_needed(_resized(model.draw, n), width / 2, residual=_resized(model.residual, n),
                             extra_variance=model.label_variance / n, power=0.5, student=True) is not None

    if not reachable(n_population):
        return None
    low, high = n_judged, n_population
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if reachable(mid) else (mid, high)
    return high


def plan_width(result: MetricResult, width: float, *, labels: dict[str, HumanLabel] | None = None,
               n_population: int | None = None, unit: UnitCost | None = None,
               seconds_per_label: float = DEFAULT_SECONDS_PER_LABEL,
               promised: dict[str, float | int | None] | None = None) -> WidthPlan:
    """The plan for a 95% interval `width` wide on `result`'s prediction-powered level (module doc).

    `labels`: this run's labels of the metric (item id -> label), to measure the judge on and to say
    what was bought; `n_population`: answers in the window the run judged a sample of (None: the run
    is its own population); `unit`: what one more judged answer costs; `promised`: an earlier plan's
    `promise()`, to set what was bought against.
    """
    low, high = result.info.scale or (0.0, 1.0)
    if not math.isfinite(width) or width <= 0 or (result.info.scale and width >= high - low):
        raise ValueError(f"--width {width}: a width of the 95% interval in the metric's units, above 0 and below "
                         f"the scale's {high - low:g}")
    if seconds_per_label <= 0:
        raise ValueError(f"--seconds-per-label {seconds_per_label}: a reader's time per label must be above 0")
    model = error_model(result, labels)
    n_judged = len(model.draw)
    population = max(n_population or n_judged, n_judged)
    calls = unit.calls_per_answer if unit else 0.0
    options = [_option(model, n_judged, width, n_judged, calls)]
    note = ""
    if population > n_judged:
        fewest = _fewest_judged(model, width, n_judged, population) if options[0].labels is None else None
        for judged in sorted({j for j in (fewest, population) if j and j > n_judged}):
            options.append(_option(model, judged, width, n_judged, calls))
    if all(o.labels is None for o in options):
        note = (f"no number of labels gives a {width:g} interval over these {population} answers: their own "
                f"spread (Var(label) / N) leaves at best {options[-1].predicted_width:.3f}; judge more answers "
                "(a larger evaluation set or window.budget) or ask a wider interval")
    for option in options:
        _cost(option, unit, seconds_per_label)
    feasible = [k for k, o in enumerate(options) if o.labels is not None]
    chosen = min(feasible, key=lambda k: _total_seconds(options[k])) if feasible else len(options) - 1
    used = usable_labels(result, labels or {})
    plan = WidthPlan(metric=result.name, width=width, scale=result.info.scale, n_judged=n_judged,
                     n_population=population, judge_level=result.score, labels_given=len(used), errors=model.errors,
                     options=options, chosen_index=chosen, seconds_per_label=seconds_per_label, unit=unit, note=note)
    plan.bought = bought(result, labels, promised)
    return plan


def _cost(option: PlanOption, unit: UnitCost | None, seconds_per_label: float) -> None:
    option.label_seconds = (option.labels or option.judged) * seconds_per_label
    if unit is None or not option.more_answers:
        option.judge_seconds, option.judge_dollars = 0.0, 0.0
        option.judge_dollars_batch = 0.0 if unit is not None and unit.batch_dollars_per_answer is not None else None
        return
    if unit.seconds_per_call is not None:
        option.judge_seconds = option.judge_calls * unit.seconds_per_call
    if unit.dollars_per_answer is not None:
        option.judge_dollars = option.more_answers * unit.dollars_per_answer
    if unit.batch_dollars_per_answer is not None:
        option.judge_dollars_batch = option.more_answers * unit.batch_dollars_per_answer


def _total_seconds(option: PlanOption) -> float:
    """Labelling and judging time together (an unknown judge time counts as none: labels dominate)."""
    return (option.label_seconds or 0.0) + (option.judge_seconds or 0.0)


def bought(result: MetricResult, labels: dict[str, HumanLabel] | None,
           promised: dict[str, float | int | None] | None = None) -> Bought | None:
    """The estimate this run's labels give now (`labelled_estimate`, what `evaluate` reports), against
    the promise; None without at least 2 usable labels."""
    if not labels:
        return None
    estimate: LabelledEstimate | None
    estimate, _ = labelled_estimate(result, labels, confidence=CONFIDENCE)
    if estimate is None:
        return None
    promised = promised or {}
    width, count = promised.get("width"), promised.get("labels")
    return Bought(labels=estimate.n_labels, estimate=estimate.score, ci_low=estimate.ci_low, ci_high=estimate.ci_high,
                  promised_width=float(width) if width is not None else None,
                  promised_labels=int(count) if count is not None else None)
