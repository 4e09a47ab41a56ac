"""The gate's findings in words: one function per kind of `GateReason`, the one place each sentence lives.

`ragwatch.decision.gate` decides with typed findings (which metric, which rule fired, the figures, the
labels plan); this module says them. The terminal summary, the Markdown and HTML reports, the run's
metadata (the dashboard), `ragwatch.testing.assert_no_regression` and the OTLP export all read
`reason_lines` / `flag_lines`, so they say the same decision; a comparison row's note, with what the gate
decided about it, is `row_note`.

Example:
    >>> decision = gate_decision(comparison, GateThresholds())
    >>> reason_lines(decision)[0]  # one sentence per finding
    'system/hit_rate regressed: dropped by 0.200 (0.800 -> 0.600, diff -0.200, 95% CI [...], paired, n=40), ...'
"""

from __future__ import annotations

from collections.abc import Callable

from ragwatch.decision.compare import MetricComparison
from ragwatch.decision.gate import GateDecision
from ragwatch.decision.reasons import GateReason, ReasonKind
from ragwatch.fmt import fmt_num, fmt_signed

_LABELLED = " from human labels (prediction-powered)"
_PAIRED_BLOCKS = "its own paired difference blocks a clear regression (gate.weak_judge: paired)"


def reason_lines(decision: GateDecision) -> list[str]:
    """The decision's reasons, one sentence each, in the order the gate gave them."""
    return [say(r) for r in decision.reasons]


def flag_lines(decision: GateDecision) -> list[str]:
    """The decision's warnings (findings that do not decide), one sentence each."""
    return [say(r) for r in decision.flags]


def say(reason: GateReason | str) -> str:
    """One finding in words (a reason an older pickle kept as a string is said as it was)."""
    if isinstance(reason, str):
        return reason
    return _SAY[reason.kind](reason)


def _interval(r: GateReason) -> str:
    basis = _LABELLED if r.basis == "labelled" else ""
    return f"95% CI{basis} [{fmt_signed(r.low)}, {fmt_signed(r.high)}]"


def _bar(r: GateReason) -> str:
    return r.standing.bar if r.standing is not None else ""


def regressed(r: GateReason) -> str:
    """A gated metric beyond its allowed drop (rule "weak_judge_paired": a judge below the bar, on its own
    paired difference)."""
    worse = "dropped" if r.higher_is_better else "rose"
    why = (f"; {_bar(r)}, but the same judge and calibration scored both runs and {_PAIRED_BLOCKS}"
           if r.rule == "weak_judge_paired" else "")
    return (f"{r.metric} regressed: {worse} by {fmt_num(abs(r.diff or 0.0))} "
            f"({fmt_num(r.old_score)} -> {fmt_num(r.new_score)}, diff {fmt_signed(r.diff)}, "
            f"{_interval(r)}, {r.method}, n={r.n}), beyond the allowed drop of {fmt_num(r.allowed_drop)}{why}")


def unscored(r: GateReason) -> str:
    return f"{r.metric}: no item could be scored in the new run ({r.note})"


def missing(r: GateReason) -> str:
    return (f"{r.metric} is gated but missing from the new run, although this config measures it "
            "(its items may all have failed: see the run's log)")


def held(r: GateReason) -> str:
    why = ("the team's rule holds every inconclusive gated metric" if r.rule == "hold"
           else f"only {r.n} items compared, fewer than min_n={r.min_n}")
    return (f"{r.metric} inconclusive: diff {fmt_signed(r.diff)}, {_interval(r)} neither rules out a drop beyond "
            f"{fmt_num(r.allowed_drop)} nor shows one; {why}")


def hold_advice(r: GateReason) -> str:
    return "add questions to the evaluation set, or set gate.inconclusive: promote to accept undecided metrics"


def needs_labels(r: GateReason) -> str:
    """What the judge sees, why it cannot decide, how many labels and the command."""
    seen = (f"{r.metric} needs labels: its judge sees a drop (diff {fmt_signed(r.diff)}, 95% CI "
            f"[{fmt_signed(r.low)}, {fmt_signed(r.high)}], {r.method}, n={r.n}; "
            f"allowed drop {fmt_num(r.allowed_drop)}) but {_bar(r)}, so it cannot size the drop alone")
    plan = r.labels
    if plan is None:
        return seen + (f"; label this run's answers (python run.py review serve --metric {r.metric}), "
                       "then evaluate again")
    if plan.labels is None:
        return (seen + f"; {plan.n_changed} of {plan.n_paired} answers changed, and even labels on all of them may "
                f"not decide a difference this close to the allowed drop: {plan.command}, then evaluate again")
    more = f" ({plan.note})" if plan.note else ""
    return (seen + f"; label {plan.labels} of this run's answers ({plan.power}; active sampling; {plan.n_changed} "
            f"of {plan.n_paired} answers changed){more}: {plan.command}, then evaluate again")


def _labelled(r: GateReason) -> str:
    """The prediction-powered paired difference from this run's labels, with what it rests on."""
    plan = r.labels
    n_changed, n_paired = (plan.n_changed, plan.n_paired) if plan is not None else (0, 0)
    return (f"diff {fmt_signed(r.diff)}, 95% CI [{fmt_signed(r.low)}, {fmt_signed(r.high)}] from {r.n} human labels "
            f"on the {n_changed} of {n_paired} answers that changed (prediction-powered, paired with production's "
            f"judge scores); allowed drop {fmt_num(r.allowed_drop)}")


def _undecided(r: GateReason) -> str:
    return f"{_labelled(r)}: neither shows nor rules out a drop beyond the allowed one"


def labelled_regressed(r: GateReason) -> str:
    return f"{r.metric} regressed on human labels: {_labelled(r)}"


def labelled_cleared(r: GateReason) -> str:
    return f"{r.metric} cleared by human labels: {_labelled(r)}"


def labelled_undecided(r: GateReason) -> str:
    return f"{r.metric} undecided on human labels ({_undecided(r)}); gate.inconclusive promotes it"


def labelled_needs(r: GateReason) -> str:
    plan = r.labels
    more = f"{plan.labels} labels in all" if plan is not None and plan.labels else "more labels"
    command = plan.command if plan is not None else f"python run.py review serve --metric {r.metric}"
    return f"{r.metric} needs labels: {_undecided(r)}; {more} decide it: {command}, then evaluate again"


def below_bar(r: GateReason) -> str:
    """A judged metric shown but not gated: its measured agreement is below the team's bar (human labels
    on both runs would correct the judge's bias, and then it gates whatever its agreement)."""
    change = f" (diff {fmt_signed(r.diff)} [{fmt_signed(r.low)}, {fmt_signed(r.high)}])" if r.diff is not None else ""
    return (f"{r.metric} is shown, not gated{change}: {_bar(r)}; label items (review serve) to gate on "
            "a prediction-powered estimate")


def passed(r: GateReason) -> str:
    summary = ", ".join(f"{v} {k}" for k, v in sorted(r.counts.items()))
    return f"no gated metric regressed vs {r.baseline} ({summary})"


def no_baseline(r: GateReason) -> str:
    return "no production baseline"


def promotion_off(r: GateReason) -> str:
    return "evaluate.promote is false: the gate passed and nothing was promoted"


def other_eval_set(r: GateReason) -> str:
    return ("production was evaluated on a different evaluation set: metrics were compared on the "
            "questions both sets share (paired by id)")


def text(r: GateReason) -> str:
    """Words written where the fact was found (the outcome's cause and action, the quick look's reason) or
    by an older run."""
    return r.text


def constant(r: GateReason) -> str:
    return (f"{r.metric}: the judge gave every item {fmt_num(r.constant_value)} in this run; it measures "
            "nothing here and does not gate (check its prompt and threshold, or use a stronger judge model)"
            + (f"; {r.note}" if r.note else ""))


def not_comparable(r: GateReason) -> str:
    return f"{r.metric}: {r.note}"


def unknown_agreement(r: GateReason) -> str:
    return (f"{r.metric} is shown, not gated: {_bar(r)}; name it in gate.trust_unknown_agreement to gate on it")


def unmeasured_row(r: GateReason) -> str:
    return f"{r.metric} is gated but not measured in this run ({r.note}); the gate decides on the metrics measured"


def unmeasured_gated(r: GateReason) -> str:
    why = r.text or (f"it matches no metric of either run (have {r.metrics}): a typo in "
                     "evaluate.gate.gated_metrics?")
    return f"gated metric {r.metric!r} is not measured by this config: {why}; the gate decides on the metrics measured"


_SAY: dict[ReasonKind, Callable[[GateReason], str]] = {
    "regressed": regressed, "unscored": unscored, "missing": missing, "held": held, "hold_advice": hold_advice,
    "needs_labels": needs_labels, "labelled_regressed": labelled_regressed, "labelled_cleared": labelled_cleared,
    "labelled_undecided": labelled_undecided, "labelled_needs": labelled_needs, "below_bar": below_bar,
    "passed": passed, "no_baseline": no_baseline, "promotion_off": promotion_off, "other_eval_set": other_eval_set,
    "cause": text, "action": text, "not_applied": text, "said": text,
    "constant": constant, "not_comparable": not_comparable, "unknown_agreement": unknown_agreement,
    "unmeasured_row": unmeasured_row, "unmeasured_gated": unmeasured_gated,
}


def row_note(row: MetricComparison) -> str:
    """A comparison row's note as the tables show it: the comparison's own note, what let a judge below the
    bar gate (rule "weak_judge_paired"), and what the gate decided about the row (`settle`)."""
    note = row.note
    if row.gate_rule == "weak_judge_paired":  # the note ends with the judge's standing (compare.decide_verdict)
        note += (", but its own paired difference (same judge and calibration in both runs) blocks a clear "
                 "regression (gate.weak_judge: paired)")
    settled = _settled(row.gate_reason) if row.gate_reason is not None else ""
    return "; ".join(n for n in (note, settled) if n)


def _settled(r: GateReason) -> str:
    if r.kind == "needs_labels":
        return "needs labels: the judge sees a drop it cannot size"
    if r.kind.startswith("labelled_"):
        return f"decided on human labels: {_labelled(r)}"
    return ""
