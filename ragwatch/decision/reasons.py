"""What the gate found, as data: which metric, which rule fired, the figures that decided, the labels plan.

`ragwatch.decision.gate` decides and returns a list of `GateReason`s (its reasons and its warnings);
`ragwatch.report.verdicts` words each kind, the one place its sentence lives, so the printout, the
reports, the run's metadata and `ragwatch.testing` all say the same decision. A reason an older run
stored as words (`GateDecision.reasons` was a list of strings) loads as kind "said" and is shown as it
was written.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from ragwatch.decision.thresholds import JudgeStanding

ReasonKind = Literal[
    # why the gate decided as it did (GateDecision.reasons)
    "regressed",  # a gated metric's interval lies beyond its allowed drop; rule "weak_judge_paired": a weak judge's
    "unscored",  # no item of a gated metric could be scored in the new run (`note`: the row's)
    "missing",  # a gated metric missing from the new run, although this config measures it
    "held",  # an inconclusive gated metric the team's rule holds (rule "hold" or "min_n")
    "hold_advice",  # what to do about a hold
    "needs_labels",  # a judge below the agreement bar sees a drop it cannot size (`labels`: how many, the command)
    "labelled_regressed",  # this run's labels' paired difference shows a regression
    "labelled_cleared",  # ... rules one out
    "labelled_undecided",  # ... decides neither, and the team's inconclusive rule promotes it
    "labelled_needs",  # ... decides neither, and more labels are needed
    "below_bar",  # a judge below the agreement bar sees nothing it could decide: shown, not gated
    "passed",  # no gated metric regressed (`baseline`, `counts`)
    "no_baseline",  # nothing to compare with: promoted
    "promotion_off",  # the gate passed and `evaluate.promote: false` promoted nothing
    "other_eval_set",  # production was evaluated on another evaluation set: compared on the shared questions
    "cause",  # not evaluated: why (`text`, `ragwatch.decision.outcome`)
    "action",  # not evaluated: what to do (`text`)
    "not_applied",  # the run is too small to decide (`text`: why)
    # warnings that do not decide (GateDecision.flags)
    "constant",  # a judge gave every item one score (`constant_value`, `note`)
    "not_comparable",  # a metric the runs cannot compare (`note`: why)
    "unknown_agreement",  # a gated prompted judge of unknown agreement: shown, not gated (`standing`)
    "unmeasured_row",  # a gated metric this run's system cannot have (`note`: why)
    "unmeasured_gated",  # a gated pattern this config does not measure (`text`: why and the setting; else `metrics`)
    "said",  # words an older run stored (`text`)
]
GateRule = Literal["weak_judge_paired", "hold", "min_n"]


class LabelsCall(BaseModel):
    """What human labels would decide a weak judge's gated metric, from its labels plan
    (`ragwatch.decision.labels_plan.LabelsPlan`): how many (`labels`; None: no number promises a decision),
    what that buys (`power`), the `review serve` command, the answers that changed, and `n_labels`, the
    labels already on changed answers behind a paired difference."""

    labels: int | None = None
    power: str = ""
    command: str = ""
    n_changed: int = 0
    n_paired: int = 0
    n_labels: int = 0
    note: str = ""


class GateReason(BaseModel):
    """One finding of the gate (see `ReasonKind`): the metric, the rule that fired and the figures behind it.

    Figures are in the metric's own units, `new - old` (`diff`, `low`, `high`: the interval that decided,
    `basis` says whose); `n` the items behind it; `allowed_drop` the team's."""

    kind: ReasonKind
    metric: str = ""
    rule: GateRule | None = None
    diff: float | None = None
    low: float | None = None
    high: float | None = None
    basis: Literal["judge", "labelled"] = "judge"
    old_score: float | None = None
    new_score: float | None = None
    method: str | None = None
    n: int = 0
    allowed_drop: float = 0.0
    higher_is_better: bool = True
    min_n: int | None = None
    standing: JudgeStanding | None = None
    labels: LabelsCall | None = None
    constant_value: float | None = None
    baseline: str = ""  # the old run's label ("production")
    counts: dict[str, int] = Field(default_factory=dict)  # verdict -> rows
    metrics: list[str] = Field(default_factory=list)  # the metrics both runs have (a pattern that matches none)
    note: str = ""  # the comparison row's own note
    text: str = ""  # words written elsewhere: an older run's, the outcome's cause, why a metric is not measured

    @model_validator(mode="before")
    @classmethod
    def _words(cls, data: Any) -> Any:
        # an older run stored its reasons as words
        return {"kind": "said", "text": data} if isinstance(data, str) else data
