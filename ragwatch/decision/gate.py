"""The regression gate: promote a run or not, from its comparison with production.

`GateThresholds` (`ragwatch.decision.thresholds`) is the team's rule: how far each metric may drop, which
metrics gate, and what an "inconclusive" gated metric does (`inconclusive`): "promote" (only clear
regressions block), "hold" (any inconclusive gated metric holds the promotion), "min_n" (the default:
inconclusive holds only when fewer than `min_n` items were compared, i.e. when the evaluation set is
too small to decide).

A gated judge whose measured agreement is below `min_judge_kappa` does not decide alone
(`_weak_judge`): with `weak_judge: paired` its own paired difference still blocks a clear regression
(`weak_judge_blocks`, the one rule; both runs scored by the same judge and calibration, else the row is
not comparable); a drop it sees but cannot decide (its interval below 0, or its point drop beyond the
allowed drop) makes the verdict "needs_labels", with how many labels decide it and the `review serve`
command (`ragwatch.decision.labels_plan`); once this run has labels, the prediction-powered paired
difference decides. Human labels on both runs make it gate as any metric (`ragwatch.decision.compare`).
A prompted judge of unknown agreement is shown, not gated, unless `trust_unknown_agreement` names it
(`GateThresholds.judge_standing`, the one rule for a judge's standing).

`gate_decision` is the one policy function: it reads the thresholds and the settled rows and returns a
`GateDecision` of typed findings (`ragwatch.decision.reasons.GateReason`: which metric, which rule, the
figures, the labels plan); `ragwatch.report.verdicts` words them, so the printout, the reports, the run's
metadata, `ragwatch.testing` and the exit code read one decision. `settle` writes the gate's outcome into
the comparison's rows (a verdict the labels decided, "needs_labels"), so that the table and the verdict
line show what decided. A gated metric that this config does not measure is a warning in `flags`, said
once, and the gate decides on what was measured (`ragwatch.measured`; listed by the user's own config
file it is an error before the run, `ragwatch.preflight`).

Example:
    >>> comparison = compare_runs(new_metrics, production_metrics, thresholds=GateThresholds())
    >>> comparison = settle(comparison, GateThresholds(), plans)  # what the table shows
    >>> decision = gate_decision(comparison, GateThresholds(), plans=plans)
    >>> decision.promote, decision.status, [r.kind for r in decision.reasons]
    >>> reason_lines(decision)  # ragwatch.report.verdicts: the words
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, model_validator

from ragwatch.decision.compare import VERDICT_ORDER, Comparison, MetricComparison
from ragwatch.decision.reasons import GateReason, LabelsCall, ReasonKind
from ragwatch.decision.thresholds import GateThresholds, matches, weak_judge_blocks

if TYPE_CHECKING:
    from ragwatch.decision.labels_plan import LabelsPlan

# "not_evaluated": the run could not be evaluated (system unreachable, budget reached, ...); reasons: cause, action
# "needs_labels": a weak judge sees a drop it cannot size; reasons say how many labels and the command
# "not_applied": the run is too small to decide (a --quick look); reasons[0] says why
# "promotion_off": the gate passed, and the config's `evaluate.promote: false` promotes nothing
GateStatus = Literal["promote", "regressed", "hold", "no_baseline", "not_evaluated", "needs_labels", "not_applied",
                     "promotion_off"]
REFUSED: tuple[GateStatus, ...] = ("regressed", "hold", "needs_labels")
PASSED: tuple[GateStatus, ...] = ("promote", "no_baseline", "promotion_off")


class GateDecision(BaseModel):
    """Promote or not, and why (one reason per regressed or held metric, or why it passed).

    `status`: "promote", "regressed" (a gated metric got worse), "hold" (nothing regressed but the
    team's inconclusive rule asks for more evidence), "no_baseline" (first evaluation: promoted),
    "needs_labels" (a judge below the agreement bar sees a drop it cannot decide: human labels will);
    "not_evaluated" (the run could not evaluate the system: unreachable, stopped by its budget, or
    judges that failed; `reasons` are the cause and what to do; see `not_evaluated`);
    "not_applied" (the run is too small to decide anything, a `--quick` look: never promoted, never a
    refusal; `reasons[0]` says why; see `not_applied`); "promotion_off" (the gate passed, and
    `evaluate.promote: false` promotes nothing; see `promotion_off`).
    `reasons`: typed findings (`GateReason`), in the order they are said; `flags`: warnings that do not
    decide, e.g. a constant judge that was excluded from gating, a gated metric this config does not
    measure. `unmeasured`: the gated metrics (or patterns) the decision was made without, each explained
    in `flags`. Words: `ragwatch.report.verdicts` (`reason_lines`, `flag_lines`). A decision stored with
    its reasons as words (older runs) loads with them as "said" reasons.
    """

    promote: bool
    reasons: list[GateReason] = Field(default_factory=list)
    status: GateStatus = "promote"
    flags: list[GateReason] = Field(default_factory=list)
    unmeasured: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _status_agrees(self) -> GateDecision:
        # a decision built by hand with promote=False and no status is a refusal
        if not self.promote and self.status in ("promote", "no_baseline"):
            self.status = "regressed"
        if self.promote and self.status in (*REFUSED, "not_evaluated", "not_applied", "promotion_off"):
            raise ValueError(f"promote=True contradicts status {self.status!r}")
        return self

    def __setstate__(self, state: dict[str, Any]) -> None:
        # a pickle of an older decision (reasons as words) is read as its JSON would be
        fresh = type(self).model_validate(dict(state["__dict__"]))
        super().__setstate__({**state, "__dict__": fresh.__dict__})

    @property
    def evaluated(self) -> bool:
        """False when the run could not evaluate the system: it is nobody's baseline."""
        return self.status != "not_evaluated"

    @property
    def passed(self) -> bool:
        """The gate looked and found nothing against the run (promoted, or promotion turned off)."""
        return self.status in PASSED

    @property
    def refused(self) -> bool:
        """The gate looked and said no (a regression, a hold, labels needed): a failing job's exit code."""
        return self.status in REFUSED


def not_evaluated(cause: str, action: str) -> GateDecision:
    """The decision of a run that could not evaluate the system (`ragwatch.decision.outcome`)."""
    return GateDecision(promote=False, status="not_evaluated",
                        reasons=[GateReason(kind="cause", text=cause), GateReason(kind="action", text=action)])


def not_applied(reason: str) -> GateDecision:
    """The decision of a run too small to decide (`ragwatch.quick`): not promoted, and not a refusal."""
    return GateDecision(promote=False, reasons=[GateReason(kind="not_applied", text=reason)], status="not_applied")


def gate_decision(comparison: Comparison | None, thresholds: GateThresholds | None = None, *,
                  plans: Mapping[str, LabelsPlan] | None = None,
                  unmeasured: Mapping[str, str] | None = None) -> GateDecision:
    """The one policy: promote unless a gated metric regressed beyond its allowed drop (or vanished), or the
    team's inconclusive rule holds the promotion, or a judge below the agreement bar needs labels.

    The decision reads the rows of `settle(comparison, ...)`, the rows the table shows, and only rows
    that gate (`MetricComparison.gated`). Refuses also when a gated metric has no scored item in the new
    run, and when a metric named in `gated_metrics` is missing from the new run although this config
    measures it. A gated metric this config does not measure (`unmeasured`: gated pattern -> why and the
    setting to change, `ragwatch.measured`; or a `not_available` row) is a warning in `flags`, said once,
    and the gate decides on what was measured. Constant judges never gate; they are flagged.
    `plans` (`ragwatch.decision.labels_plan.labels_plans`): labels needed per below-the-bar judge.
    """
    thresholds = thresholds or GateThresholds()
    if comparison is None or not comparison.has_baseline:
        return GateDecision(promote=True, reasons=[GateReason(kind="no_baseline")], status="no_baseline")
    comparison = settle(comparison, thresholds, plans)
    lists: dict[str, list[GateReason]] = {"reason": [], "needs": [], "opinion": [], "held": []}
    flags: list[GateReason] = []
    missing: list[str] = []
    explicit = thresholds.gated_metrics is not None
    for r in comparison.rows:
        if r.constant_value is not None:
            flags.append(GateReason(kind="constant", metric=r.metric, constant_value=r.constant_value, note=r.note))
        if r.verdict == "not_comparable" and r.n_new > 0:
            flags.append(GateReason(kind="not_comparable", metric=r.metric, note=r.note))
        if not thresholds.is_gated(r.metric):
            continue
        if r.gate_role is not None and r.gate_reason is not None:
            lists[r.gate_role].append(r.gate_reason)
        elif r.standing is not None and r.standing.kind == "unknown" and explicit:
            flags.append(GateReason(kind="unknown_agreement", metric=r.metric, standing=r.standing))
        elif r.verdict == "not_available" and r.new_score is None and explicit:
            missing.append(r.metric)
            flags.append(GateReason(kind="unmeasured_row", metric=r.metric, note=r.note))
        elif not r.gated:
            continue
        elif (what := _refusal(r, thresholds)) is not None:
            lists["reason"].append(what)
        elif r.verdict == "inconclusive" and _holds(r, thresholds):
            lists["held"].append(_figures(r, "held", rule="hold" if thresholds.inconclusive == "hold" else "min_n",
                                          min_n=thresholds.min_n))
    for pattern in thresholds.gated_metrics or []:
        if any(matches(r.metric, pattern) for r in comparison.rows):
            continue
        missing.append(pattern)
        flags.append(GateReason(kind="unmeasured_gated", metric=pattern, text=(unmeasured or {}).get(pattern, ""),
                                metrics=[r.metric for r in comparison.rows]))
    reasons, needs, opinions, held = lists["reason"], lists["needs"], lists["opinion"], lists["held"]
    common: dict[str, Any] = {"flags": flags, "unmeasured": missing}
    if reasons:
        return GateDecision(promote=False, reasons=reasons + needs + held + opinions, status="regressed", **common)
    if needs:
        return GateDecision(promote=False, reasons=needs + held + opinions, status="needs_labels", **common)
    if held:
        return GateDecision(promote=False, reasons=[*held, GateReason(kind="hold_advice"), *opinions], status="hold",
                            **common)
    passed = GateReason(kind="passed", baseline=comparison.old_label, counts=comparison.counts())
    return GateDecision(promote=True, reasons=[passed, *opinions], status="promote", **common)


def promotion_off(decision: GateDecision) -> GateDecision:
    """The decision of a run whose config sets `evaluate.promote: false`: a gate that passed promotes
    nothing ("promotion_off"); any other decision is kept as it is."""
    if not decision.promote:
        return decision
    return decision.model_copy(update={
        "promote": False, "status": "promotion_off", "reasons": [*decision.reasons, GateReason(kind="promotion_off")]})


def other_eval_set(decision: GateDecision) -> GateDecision:
    """The decision with a note that production was evaluated on another evaluation set (metrics compared
    on the questions both share, paired by id); a run that could not be evaluated is kept as it is."""
    if not decision.evaluated:
        return decision
    return decision.model_copy(update={"reasons": [*decision.reasons, GateReason(kind="other_eval_set")]})


def settle(comparison: Comparison, thresholds: GateThresholds, plans: Mapping[str, LabelsPlan] | None = None
           ) -> Comparison:
    """The comparison as the gate decides it, for the table and the verdict line to show: a copy in which
    each gated row whose judge is below the agreement bar carries the gate's outcome (`gate_role`,
    `gate_reason`) and, where the gate decides it otherwise than the judge's own interval, the verdict it
    decided: "needs_labels" for a drop the judge sees but cannot size; the verdict of the human labels'
    paired difference (`basis="labelled"`, its interval) once this run has labels. Rows already settled
    are kept, so settling twice changes nothing."""
    if not comparison.has_baseline:
        return comparison
    rows = []
    for row in comparison.rows:
        row = row.model_copy()
        if (row.gate_role is None and row.standing is not None and row.standing.kind == "below_bar"
                and row.basis != "labelled" and thresholds.is_gated(row.metric)):
            row.gate_role, row.gate_reason = _weak_judge(row, thresholds, (plans or {}).get(row.metric))
        rows.append(row)
    rows.sort(key=lambda r: (VERDICT_ORDER.index(r.verdict), r.metric))
    return comparison.model_copy(update={"rows": rows})


def _figures(row: MetricComparison, kind: ReasonKind, **more: Any) -> GateReason:
    """A finding about `row` with the figures that decided it (its decided interval, n, allowed drop)."""
    diff, low, high = row.decided_interval
    return GateReason(kind=kind, metric=row.metric, diff=diff, low=low, high=high, basis=row.basis,
                      old_score=row.old_score, new_score=row.new_score, method=row.method, n=row.n_compared,
                      allowed_drop=row.allowed_drop, higher_is_better=row.higher_is_better, **more)


def _refusal(row: MetricComparison, thresholds: GateThresholds) -> GateReason | None:
    """Why a gated row that decides as any metric refuses the promotion, else None."""
    if row.verdict == "regressed":
        return _figures(row, "regressed")
    if row.verdict == "not_comparable" and row.n_new == 0 and row.n_old > 0:
        return GateReason(kind="unscored", metric=row.metric, note=row.note)
    if row.verdict == "removed" and thresholds.gated_metrics is not None:
        return GateReason(kind="missing", metric=row.metric)
    return None


Role = Literal["reason", "needs", "opinion"]


def _weak_judge(row: MetricComparison, thresholds: GateThresholds, plan: LabelsPlan | None
                ) -> tuple[Role, GateReason]:
    """What a gated metric whose judge is below `min_judge_kappa` does (see the module doc): a reason
    to refuse, a call for labels, or an opinion that does not decide; the row's verdict is set to what
    decided it (in place: `settle` passes a copy)."""
    assert row.standing is not None
    if row.verdict not in ("regressed", "inconclusive", "unchanged", "improved"):
        return "opinion", _figures(row, "below_bar", standing=row.standing)
    if plan is not None and plan.paired is not None:
        return _labelled_paired(row, plan, thresholds)
    if weak_judge_blocks(row.standing, row.verdict, thresholds.weak_judge):
        return "reason", _figures(row, "regressed", rule="weak_judge_paired", standing=row.standing)
    if sees_drop(row):
        row.verdict, row.gated = "needs_labels", True
        return "needs", _figures(row, "needs_labels", standing=row.standing, labels=_call(plan))
    return "opinion", _figures(row, "below_bar", standing=row.standing)


def sees_drop(row: MetricComparison) -> bool:
    """The judge sees a drop: its interval lies below 0 (in the bad direction), or its point drop
    exceeds the allowed drop."""
    if row.diff is None or row.diff_low is None or row.diff_high is None:
        return False
    gain, gain_high = (row.diff, row.diff_high) if row.higher_is_better else (-row.diff, -row.diff_low)
    return gain_high < 0 or gain < -row.allowed_drop


def _call(plan: LabelsPlan | None) -> LabelsCall | None:
    """The labels plan as a finding carries it (None: no plan, the generic `review serve` call)."""
    if plan is None:
        return None
    return LabelsCall(labels=plan.labels, power=plan.power, command=plan.command, n_changed=plan.n_changed,
                      n_paired=plan.n_paired, n_labels=plan.paired.n_labels if plan.paired else 0, note=plan.note)


def _labelled_paired(row: MetricComparison, plan: LabelsPlan, thresholds: GateThresholds
                     ) -> tuple[Role, GateReason]:
    """The decision on the prediction-powered paired difference from this run's labels; an undecided one
    follows the team's inconclusive rule, as any metric's. The row takes the labels' interval and verdict
    (`basis="labelled"`), so the table shows what decided."""
    p = plan.paired
    assert p is not None
    row.basis, row.gated = "labelled", True
    row.labelled_diff, row.labelled_low, row.labelled_high = p.diff, p.low, p.high

    def found(kind: ReasonKind) -> GateReason:
        return GateReason(kind=kind, metric=row.metric, diff=p.diff, low=p.low, high=p.high, basis="labelled",
                          n=p.n_labels, allowed_drop=row.allowed_drop, higher_is_better=row.higher_is_better,
                          labels=_call(plan))

    if p.verdict == "regressed":
        row.verdict = "regressed"
        return "reason", found("labelled_regressed")
    if p.verdict == "cleared":
        gain_low = p.low if row.higher_is_better else -p.high
        row.verdict = "improved" if gain_low > 0 else "unchanged"
        return "opinion", found("labelled_cleared")
    if not _holds(row, thresholds):
        row.verdict = "inconclusive"
        return "opinion", found("labelled_undecided")
    row.verdict = "needs_labels"
    return "needs", found("labelled_needs")


def _holds(row: MetricComparison, thresholds: GateThresholds) -> bool:
    if thresholds.inconclusive == "hold":
        return True
    if thresholds.inconclusive == "min_n":
        return row.n_compared < thresholds.min_n
    return False
