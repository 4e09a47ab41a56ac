"""The team's gate rule, `GateThresholds`: how far each metric may drop, which metrics gate, and what an
inconclusive gated metric does; `matches`, how a metric name is matched against the rule's patterns.

It sits below both `ragwatch.decision.compare` (a comparison row carries its metric's allowed drop and whether it
gates) and `ragwatch.decision.gate` (which decides from the comparison), so neither imports the other to get it.
The configs validate it (`gate:` in `configs/evaluate.yaml`); `ragwatch.decision.gate` explains the rules.
"""

from __future__ import annotations

import math
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

if TYPE_CHECKING:
    from ragwatch.results import MetricInfo

InconclusiveRule = Literal["promote", "hold", "min_n"]
WeakJudgeRule = Literal["paired", "labels"]


class JudgeStanding(NamedTuple):
    """Why a judged metric does not decide as any metric: its judge is `below_bar` (measured agreement
    under `min_judge_kappa`) or of `unknown` agreement (never measured, not trusted by the team).
    `reason` is the short form a comparison row's note carries, `bar` the long one the gate's reasons use."""

    kind: Literal["below_bar", "unknown"]
    reason: str
    bar: str


def matches(name: str, pattern: str) -> bool:
    """True when `pattern` equals `name`, is a prefix of it, or matches it as a glob (`hit_rate@*`)."""
    return name == pattern or name.startswith(pattern) or fnmatchcase(name, pattern)


def weak_judge_blocks(standing: JudgeStanding | None, verdict: str, rule: WeakJudgeRule) -> bool:
    """The one rule for what a judge below the agreement bar still decides alone: with `weak_judge: paired`,
    its own paired difference blocks a clear regression (the same judge and calibration scored both runs, else
    the row is not comparable); nothing else. Read by `ragwatch.decision.compare` (the row gates) and
    `ragwatch.decision.gate` (the refusal)."""
    return standing is not None and standing.kind == "below_bar" and verdict == "regressed" and rule == "paired"


def unknown_agreement(info: MetricInfo) -> bool:
    """A prompted judge (an LLM's opinion, `prompt_version` set) never measured against labels of its kind;
    an embedding cosine or token probabilities are measurements, not opinions, and never "unknown"."""
    return info.is_judge and info.prompt_version is not None and info.agreement is None


class GateThresholds(BaseModel):
    """How much each metric may drop before the gate refuses a promotion.

    Drops are absolute, in the metric's own units (0.02 on a 0-1 rate is two points). Names in
    `per_metric` and `gated_metrics` match exactly, by prefix or as globs. Whether a drop is a fall or
    a rise is the metric's own `MetricInfo.direction`, set where the metric is made; the gate has no
    say in it (a former `lower_is_better` list is refused with what to do instead).
    `inconclusive`, `min_n`, `min_judge_kappa` and `weak_judge`: see `ragwatch.decision.gate`. A prompted
    judge whose agreement with labels is unknown is shown, marked "agreement unknown", and does not gate
    unless `trust_unknown_agreement` names it (`judge_standing`, the one rule).

    When a run could not evaluate the system at all, the gate says "not evaluated", never
    "regression" (`ragwatch.decision.outcome`): the LLM budget stopped it, or more than
    `max_unreachable` of the questions found the system unreachable (every attempt failed to connect
    or timed out; default 0.5: most questions), or the judges failed on more than
    `max_judge_failures` of the answered items (default 0.5). Fewer failures are measured:
    `system/availability` (share of questions answered) gates like any other metric.

    Example:
        >>> GateThresholds(default_allowed_drop=0.02, per_metric={"faithfulness": 0.05},
        ...                gated_metrics=["system/hit_rate", "faithfulness"], inconclusive="min_n", min_n=30)
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    default_allowed_drop: float = Field(0.0, ge=0.0)
    """How much a gated metric may drop, in its own units, before it counts as a regression."""
    per_metric: dict[str, float] = Field(default_factory=dict)
    """Allowed drop per metric name (exact, prefix or glob)."""
    gated_metrics: list[str] | None = None  # None: every metric present in both runs
    """Metrics that decide the promotion (exact, prefix or glob); null: every metric in both runs."""
    inconclusive: InconclusiveRule = "min_n"
    """Undecided gated metrics: promote, hold, or min_n (hold when fewer than `min_n` items were compared)."""
    min_n: int = Field(30, ge=2)
    """Items compared below which an undecided metric holds (`inconclusive: min_n`)."""
    min_judge_kappa: float = Field(0.6, ge=-1.0, le=1.0)
    """A judge whose measured agreement (Cohen's kappa) with labels of its kind is below this does not decide alone."""
    weak_judge: WeakJudgeRule = "paired"
    """What a judge below `min_judge_kappa` still does: paired (its own paired difference blocks a clear regression
    when the same judge and calibration scored both runs; a drop it sees but cannot size asks for labels) or labels
    (every drop it sees asks for labels)."""
    trust_unknown_agreement: list[str] = Field(default_factory=list)
    """Judges of unknown agreement with labels (none measured for this judge model and prompt) that gate anyway
    (exact, prefix or glob); by default such a judge is shown, marked "agreement unknown", and does not gate."""
    max_unreachable: float = Field(0.5, ge=0.0, le=1.0)
    """Share of questions that found the system unreachable above which the run could not be evaluated (exit 3)."""
    max_judge_failures: float = Field(0.5, ge=0.0, le=1.0)
    """Share of answered items the judges failed on above which the run could not be evaluated (exit 3)."""

    @model_validator(mode="before")
    @classmethod
    def _no_direction_here(cls, data: Any) -> Any:
        # One source for a metric's direction: its MetricInfo. An empty list (a dump of the old
        # default) says nothing and is dropped; a non-empty one would be silently ignored, so it is refused.
        if isinstance(data, dict) and "lower_is_better" in data:
            if data["lower_is_better"]:
                raise ValueError(
                    f"lower_is_better ({data['lower_is_better']!r}) is no longer read: a metric's direction is "
                    "declared where the metric is made (MetricInfo.direction). Remove the key; for a custom "
                    "rubric judge set `higher_is_better: false` in its YAML entry"
                )
            data = {k: v for k, v in data.items() if k != "lower_is_better"}
        return data

    @field_validator("per_metric")
    @classmethod
    def _non_negative(cls, value: dict[str, float]) -> dict[str, float]:
        bad = {k: v for k, v in value.items() if not (math.isfinite(v) and v >= 0)}
        if bad:
            raise ValueError(f"allowed drops must be finite and >= 0 (a drop, not a change): {bad}")
        return value

    def allowed_drop(self, metric: str) -> float:
        if metric in self.per_metric:
            return self.per_metric[metric]
        for pattern, drop in self.per_metric.items():
            if matches(metric, pattern):
                return drop
        return self.default_allowed_drop

    def is_gated(self, metric: str) -> bool:
        return self.gated_metrics is None or any(matches(metric, p) for p in self.gated_metrics)

    def judge_standing(self, metric: str, info: MetricInfo, *, labelled: bool) -> JudgeStanding | None:
        """The one rule for a judged metric's standing in the gate: None when it decides as any metric;
        else why not (`JudgeStanding`). A metric decides when it is no judge, when human labels in both
        runs decide it (`labelled`), when its judge's measured agreement is at `min_judge_kappa`, or when
        its agreement is unknown and either `trust_unknown_agreement` names it or it is no prompted judge
        (an embedding cosine or token probabilities: a measurement, not an LLM's opinion)."""
        if not info.is_judge or labelled:
            return None
        agreement = info.agreement
        if agreement is None:
            if not unknown_agreement(info) or any(matches(metric, p) for p in self.trust_unknown_agreement):
                return None
            return JudgeStanding("unknown", "agreement unknown (gate.trust_unknown_agreement does not name it)",
                                 "its judge's agreement with labels of its kind is unknown (no calibration for "
                                 "this judge model and prompt) and gate.trust_unknown_agreement does not name it")
        if agreement.kappa >= self.min_judge_kappa:
            return None
        bar = f"gate.min_judge_kappa {self.min_judge_kappa:.2f}"
        return JudgeStanding(
            "below_bar", f"judge agreement kappa {agreement.kappa:.2f} < {bar}",
            f"its judge's measured agreement, kappa {agreement.kappa:.2f} on {agreement.n} {agreement.data}, "
            f"is below {bar}")
