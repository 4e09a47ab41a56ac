"""The regression gate: promote a run or not, from its comparison with production.

`GateThresholds` (`ragwatch.decision.thresholds`) is the team's rule: how far each metric may drop, which
metrics gate, and what an "inconclusive" gated metric does (`inconclusive`): "promote" (only clear
regressions block), "hold" (any inconclusive gated metric holds the promotion), "min_n" (the default:
inconclusive holds only when fewer than `min_n` items were compared, i.e. when the evaluation set is
too small to decide).

A gated judge whose measured agreement is below `min_judge_kappa` does not decide alone
(`_weak_judge`): with `weak_judge: paired` its own paired difference still blocks a clear regression
(both runs scored by the same judge and calibration, else the row is not comparable); a drop it sees
but cannot decide (its interval below 0, or its point drop beyond the allowed drop) makes the verdict
"needs_labels", naming how many labels decide it and the `review serve` command
(`ragwatch.decision.labels_plan`); once this run has labels, the prediction-powered paired difference
decides. Human labels on both runs make it gate as any metric (`ragwatch.decision.compare`). A prompted
judge of unknown agreement is shown, not gated, unless `trust_unknown_agreement` names it
(`GateThresholds.judge_standing`, the one rule for a judge's standing).

`settle` writes the gate's outcome into the comparison's rows (a verdict the labels decided, "needs_labels"),
so that the table and the verdict line show what decided; `gate_decision` decides from the settled rows
and returns a `GateDecision`. A gated metric that this config does not measure is a warning, said once in
`flags` with the setting to change, and the gate decides on what was measured
(`ragwatch.measured`; listed by the user's own config file it is an error before the run,
`ragwatch.preflight`).

Example:
    >>> comparison = compare_runs(new_metrics, production_metrics, thresholds=GateThresholds())
    >>> comparison = settle(comparison, GateThresholds(), plans)  # what the table shows
    >>> decision = gate_decision(comparison, GateThresholds(), plans=plans)
    >>> decision.promote, decision.status, decision.reasons
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field, model_validator

from ragwatch.decision.compare import VERDICT_ORDER, Comparison, MetricComparison
from ragwatch.decision.thresholds import GateThresholds, matches
from ragwatch.fmt import fmt_num, fmt_signed

if TYPE_CHECKING:
    from ragwatch.decision.labels_plan import LabelsPlan

# "not_evaluated": the run could not be evaluated (system unreachable, budget reached, ...); reasons[0] says why
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
    judges that failed; `reasons[0]` is the cause, `reasons[1]` what to do; see `not_evaluated`);
    "not_applied" (the run is too small to decide anything, a `--quick` look: never promoted, never a
    refusal; `reasons[0]` says why; see `not_applied`); "promotion_off" (the gate passed, and
    `evaluate.promote: false` promotes nothing; see `promotion_off`).
    `flags`: warnings that do not decide, e.g. a constant judge that was excluded from gating, a gated
    metric this config does not measure. `unmeasured`: the gated metrics (or patterns) the decision was
    made without, each explained in `flags`.
    """

    promote: bool
    reasons: list[str] = Field(default_factory=list)
    status: GateStatus = "promote"
    flags: list[str] = Field(default_factory=list)
    unmeasured: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _status_agrees(self) -> GateDecision:
        # a decision built by hand with promote=False and no status is a refusal
        if not self.promote and self.status in ("promote", "no_baseline"):
            self.status = "regressed"
        if self.promote and self.status in (*REFUSED, "not_evaluated", "not_applied", "promotion_off"):
            raise ValueError(f"promote=True contradicts status {self.status!r}")
        return self

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
    return GateDecision(promote=False, reasons=[cause, action], status="not_evaluated")


def not_applied(reason: str) -> GateDecision:
    """The decision of a run too small to decide (`ragwatch.quick`): not promoted, and not a refusal."""
    return GateDecision(promote=False, reasons=[reason], status="not_applied")


def gate_decision(comparison: Comparison | None, thresholds: GateThresholds | None = None, *,
                  plans: Mapping[str, LabelsPlan] | None = None,
                  unmeasured: Mapping[str, str] | None = None) -> GateDecision:
    """Promote unless a gated metric regressed beyond its allowed drop (or vanished), or the team's
    inconclusive rule holds the promotion, or a judge below the agreement bar needs labels.

    The decision reads the rows of `settle(comparison, ...)`, the rows the table shows, and only rows
    that gate (`MetricComparison.gated`). Refuses also when a gated metric has no scored item in the new
    run, and when a metric named in `gated_metrics` is missing from the new run although this config
    measures it. A gated metric this config does not measure (`unmeasured`: gated pattern -> why and the
    setting to change, `ragwatch.measured`; or a `not_available` row) is a warning in `flags`,
    said once, and the gate decides on what was measured. Constant judges never gate; they are flagged.
    `plans` (`ragwatch.decision.labels_plan.labels_plans`): labels needed per below-the-bar judge.
    """
    thresholds = thresholds or GateThresholds()
    if comparison is None or not comparison.has_baseline:
        return GateDecision(promote=True, reasons=["no production baseline"], status="no_baseline")
    comparison = settle(comparison, thresholds, plans)
    lists: dict[str, list[str]] = {"reason": [], "needs": [], "opinion": [], "held": []}
    flags: list[str] = []
    missing: list[str] = []
    for r in comparison.rows:
        if r.constant_value is not None:
            flags.append(_constant_flag(r))
        if r.verdict == "not_comparable" and r.n_new > 0:
            flags.append(f"{r.metric}: {r.note}")
        if not thresholds.is_gated(r.metric):
            continue
        if r.gate_role is not None:
            lists[r.gate_role].append(r.gate_note)
        elif r.standing is not None and r.standing.kind == "unknown" and thresholds.gated_metrics is not None:
            flags.append(f"{r.metric} is shown, not gated: {r.standing.bar}; name it in "
                         "gate.trust_unknown_agreement to gate on it")
        elif r.verdict == "not_available" and r.new_score is None and thresholds.gated_metrics is not None:
            missing.append(r.metric)
            flags.append(f"{r.metric} is gated but not measured in this run ({r.note}); the gate decides on the "
                         "metrics measured")
        elif not r.gated:
            continue
        elif (what := _refusal(r, thresholds)) is not None:
            lists["reason"].append(what)
        elif r.verdict == "inconclusive" and _holds(r, thresholds):
            lists["held"].append(_held(r, thresholds))
    for pattern in thresholds.gated_metrics or []:
        if any(matches(r.metric, pattern) for r in comparison.rows):
            continue
        missing.append(pattern)
        why = (unmeasured or {}).get(pattern) or (
            f"it matches no metric of either run (have {[r.metric for r in comparison.rows]}): a typo in "
            "evaluate.gate.gated_metrics?")
        flags.append(f"gated metric {pattern!r} is not measured by this config: {why}; the gate decides on the "
                     "metrics measured")
    reasons, needs, opinions, held = lists["reason"], lists["needs"], lists["opinion"], lists["held"]
    common = {"flags": flags, "unmeasured": missing}
    if reasons:
        return GateDecision(promote=False, reasons=reasons + needs + held + opinions, status="regressed", **common)
    if needs:
        return GateDecision(promote=False, reasons=needs + held + opinions, status="needs_labels", **common)
    if held:
        advice = ("add questions to the evaluation set, or set gate.inconclusive: promote to accept "
                  "undecided metrics")
        return GateDecision(promote=False, reasons=[*held, advice, *opinions], status="hold", **common)
    counts = comparison.counts()
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    reason = f"no gated metric regressed vs {comparison.old_label} ({summary})"
    return GateDecision(promote=True, reasons=[reason, *opinions], status="promote", **common)


def promotion_off(decision: GateDecision) -> GateDecision:
    """The decision of a run whose config sets `evaluate.promote: false`: a gate that passed promotes
    nothing ("promotion_off"); any other decision is kept as it is."""
    if not decision.promote:
        return decision
    return decision.model_copy(update={
        "promote": False, "status": "promotion_off",
        "reasons": [*decision.reasons, "evaluate.promote is false: the gate passed and nothing was promoted"]})


def settle(comparison: Comparison, thresholds: GateThresholds, plans: Mapping[str, LabelsPlan] | None = None
           ) -> Comparison:
    """The comparison as the gate decides it, for the table and the verdict line to show: a copy in which
    each gated row whose judge is below the agreement bar carries the gate's outcome (`gate_role`,
    `gate_note`) and, where the gate decides it otherwise than the judge's own interval, the verdict it
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
            row.gate_role, row.gate_note = _weak_judge(row, thresholds, (plans or {}).get(row.metric))
        rows.append(row)
    rows.sort(key=lambda r: (VERDICT_ORDER.index(r.verdict), r.metric))
    return comparison.model_copy(update={"rows": rows})


def _refusal(row: MetricComparison, thresholds: GateThresholds) -> str | None:
    """Why a gated row that decides as any metric refuses the promotion, else None."""
    basis = " from human labels (prediction-powered)" if row.basis == "labelled" else ""
    if row.verdict == "regressed":
        return _regressed(row, basis)
    if row.verdict == "not_comparable" and row.n_new == 0 and row.n_old > 0:
        return f"{row.metric}: no item could be scored in the new run ({row.note})"
    if row.verdict == "removed" and thresholds.gated_metrics is not None:
        return (f"{row.metric} is gated but missing from the new run, although this config measures it "
                "(its items may all have failed: see the run's log)")
    return None


def _held(row: MetricComparison, thresholds: GateThresholds) -> str:
    diff, low, high = row.decided_interval
    basis = " from human labels (prediction-powered)" if row.basis == "labelled" else ""
    why = ("the team's rule holds every inconclusive gated metric" if thresholds.inconclusive == "hold"
           else f"only {row.n_compared} items compared, fewer than min_n={thresholds.min_n}")
    return (f"{row.metric} inconclusive: diff {fmt_signed(diff)}, 95% CI{basis} [{fmt_signed(low)}, "
            f"{fmt_signed(high)}] neither rules out a drop beyond {fmt_num(row.allowed_drop)} nor shows one; {why}")


def _regressed(row: MetricComparison, basis: str, *, why: str = "") -> str:
    """The one wording of a regression."""
    diff, low, high = row.decided_interval
    worse = "dropped" if row.higher_is_better else "rose"
    return (f"{row.metric} regressed: {worse} by {fmt_num(abs(diff or 0.0))} "
            f"({fmt_num(row.old_score)} -> {fmt_num(row.new_score)}, diff {fmt_signed(diff)}, "
            f"95% CI{basis} [{fmt_signed(low)}, {fmt_signed(high)}], {row.method}, n={row.n_compared}), "
            f"beyond the allowed drop of {fmt_num(row.allowed_drop)}{why}")


Role = Literal["reason", "needs", "opinion"]


def _weak_judge(row: MetricComparison, thresholds: GateThresholds, plan: LabelsPlan | None) -> tuple[Role, str]:
    """What a gated metric whose judge is below `min_judge_kappa` does (see the module doc): a reason
    to refuse, a call for labels, or an opinion that does not decide; the row's verdict is set to what
    decided it (in place: `settle` passes a copy)."""
    assert row.standing is not None
    bar = row.standing.bar
    if row.verdict not in ("regressed", "inconclusive", "unchanged", "improved"):
        return "opinion", _below_agreement_bar(row, thresholds)
    if plan is not None and plan.paired is not None:
        return _labelled_paired(row, plan, thresholds)
    if thresholds.weak_judge == "paired" and row.verdict == "regressed":
        return "reason", _regressed(row, "", why=(
            f"; {bar}, but the same judge and calibration scored both runs and its own paired difference "
            "blocks a clear regression (gate.weak_judge: paired)"))
    if sees_drop(row):
        row.verdict, row.gated = "needs_labels", True
        text = _needs_labels(row, plan, bar)
        _note(row, "needs labels: the judge sees a drop it cannot size")
        return "needs", text
    return "opinion", _below_agreement_bar(row, thresholds)


def _note(row: MetricComparison, note: str) -> None:
    row.note = f"{row.note}; {note}" if row.note else note
def sees_drop(row: MetricComparison) -> bool:
    """The judge sees a drop: its interval lies below 0 (in the bad direction), or its point drop
    exceeds the allowed drop."""
    if row.diff is None or row.diff_low is None or row.diff_high is None:
        return False
    gain, gain_high = (row.diff, row.diff_high) if row.higher_is_better else (-row.diff, -row.diff_low)
    return gain_high < 0 or gain < -row.allowed_drop


def _needs_labels(row: MetricComparison, plan: LabelsPlan | None, bar: str) -> str:
    """The needs-labels wording: what the judge sees, why it cannot decide, how many labels and the command."""
    seen = (f"{row.metric} needs labels: its judge sees a drop (diff {fmt_signed(row.diff)}, 95% CI "
            f"[{fmt_signed(row.diff_low)}, {fmt_signed(row.diff_high)}], {row.method}, n={row.n_compared}; "
            f"allowed drop {fmt_num(row.allowed_drop)}) but {bar}, so it cannot size the drop alone")
    if plan is None:
        return seen + (f"; label this run's answers (python run.py review serve --metric {row.metric}), "
                       "then evaluate again")
    if plan.labels is None:
        return (seen + f"; {plan.n_changed} of {plan.n_paired} answers changed, and even labels on all of them may "
                f"not decide a difference this close to the allowed drop: {plan.command}, then evaluate again")
    more = f" ({plan.note})" if plan.note else ""
    return (seen + f"; label {plan.labels} of this run's answers ({plan.power}; active sampling; {plan.n_changed} "
            f"of {plan.n_paired} answers changed){more}: {plan.command}, then evaluate again")


def _labelled_paired(row: MetricComparison, plan: LabelsPlan, thresholds: GateThresholds) -> tuple[Role, str]:
    """The decision on the prediction-powered paired difference from this run's labels; an undecided one
    follows the team's inconclusive rule, as any metric's. The row takes the labels' interval and verdict
    (`basis="labelled"`), so the table shows what decided."""
    p = plan.paired
    assert p is not None
    interval = (f"diff {fmt_signed(p.diff)}, 95% CI [{fmt_signed(p.low)}, {fmt_signed(p.high)}] from {p.n_labels} "
                f"human labels on the {p.n_changed} of {p.n_paired} answers that changed (prediction-powered, "
                f"paired with production's judge scores); allowed drop {fmt_num(row.allowed_drop)}")
    row.basis, row.gated = "labelled", True
    row.labelled_diff, row.labelled_low, row.labelled_high = p.diff, p.low, p.high
    _note(row, f"decided on human labels: {interval}")
    if p.verdict == "regressed":
        row.verdict = "regressed"
        return "reason", f"{row.metric} regressed on human labels: {interval}"
    if p.verdict == "cleared":
        gain_low = p.low if row.higher_is_better else -p.high
        row.verdict = "improved" if gain_low > 0 else "unchanged"
        return "opinion", f"{row.metric} cleared by human labels: {interval}"
    undecided = f"{interval}: neither shows nor rules out a drop beyond the allowed one"
    if not _holds(row, thresholds):
        row.verdict = "inconclusive"
        return "opinion", f"{row.metric} undecided on human labels ({undecided}); gate.inconclusive promotes it"
    row.verdict = "needs_labels"
    more = f"{plan.labels} labels in all" if plan.labels else "more labels"
    return "needs", f"{row.metric} needs labels: {undecided}; {more} decide it: {plan.command}, then evaluate again"


def _below_agreement_bar(row: MetricComparison, thresholds: GateThresholds) -> str:
    """Why a judged metric is shown but not gated: its measured agreement is below the team's bar.

    Human labels on both runs (the prediction-powered interval decides) correct the judge's bias,
    so then it gates whatever its agreement (`GateThresholds.judge_standing`).
    """
    assert row.standing is not None
    diff, low, high = row.decided_interval
    change = f" (diff {fmt_signed(diff)} [{fmt_signed(low)}, {fmt_signed(high)}])" if diff is not None else ""
    return (f"{row.metric} is shown, not gated{change}: {row.standing.bar}; label items (review serve) to gate on "
            "a prediction-powered estimate")


def _holds(row: MetricComparison, thresholds: GateThresholds) -> bool:
    if thresholds.inconclusive == "hold":
        return True
    if thresholds.inconclusive == "min_n":
        return row.n_compared < thresholds.min_n
    return False


def _constant_flag(row: MetricComparison) -> str:
    return (f"{row.metric}: the judge gave every item {fmt_num(row.constant_value)} in this run; it measures "
            "nothing here and does not gate (check its prompt and threshold, or use a stronger judge model)"
            + (f"; {row.note}" if row.note else ""))
