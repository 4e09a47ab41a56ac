"""The budget planner's words: a `WidthPlan` as the terminal shows it, and what labels bought.

Example:
    >>> print(format_plan(plan_width(result, 0.10), run="evaluate-2026_01_01"))  # doctest: +SKIP
"""

from __future__ import annotations

from ragwatch.review.plan import Bought, PlanOption, WidthPlan


def duration(seconds: float | None) -> str:
    """`45 s`, `12 min`, `3.2 h`; "unknown" for None."""
    if seconds is None:
        return "unknown"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def dollars(value: float | None) -> str:
    return "not priced (the cost map has no price for the model)" if value is None else f"${value:,.2f}"


def _option_line(plan: WidthPlan, option: PlanOption) -> str:
    judged = (f"judge {option.more_answers} more answers ({option.judge_calls} calls) so {option.judged} are judged"
              if option.more_answers else f"the {option.judged} judged answers as they are")
    labels = (f"{option.labels} labels (uniformly drawn: {option.labels_uniform})" if option.labels is not None
              else f"no count of labels does it (best {option.predicted_width:.3f}, every answer labelled)")
    return f"{judged}: {labels}"


def _cost_lines(plan: WidthPlan, option: PlanOption) -> list[str]:
    unit = plan.unit
    count = option.labels if option.labels is not None else option.judged
    lines = [f"  labelling: {count} x {plan.seconds_per_label:g} s = {duration(option.label_seconds)} "
             "(--seconds-per-label; an assumed reading time per answer, not a measurement)"]
    if not option.more_answers:
        lines.append("  judge: no more calls")
        return lines
    if unit is None:
        lines.append(f"  judge: {option.more_answers} answers; cost unknown (the run's usage does not say its calls)")
        return lines
    batch = ("" if option.judge_dollars_batch is None
             else f", {dollars(option.judge_dollars_batch)} as a provider batch (batch: true)")
    lines.append(f"  judge ({unit.model}): {option.judge_calls} calls, {duration(option.judge_seconds)} "
                 f"({unit.rate or 'no recorded rate'}), {dollars(option.judge_dollars)}{batch}")
    return lines


def format_plan(plan: WidthPlan, *, run: str) -> str:
    """The plan in words: the count, its assumption, the command, the costs, and what was bought."""
    level = f"; the judge says {plan.judge_level:.3f}" if plan.judge_level is not None else ""
    window = (f" of the window's {plan.n_population}" if plan.n_population > plan.n_judged else "")
    lines = [f"label plan: {plan.metric} of run {run} ({plan.n_judged} judged answers{window}{level})",
             f"  wanted: a 95% interval {plan.width:g} wide on the prediction-powered level (`review.labelled`)",
             f"  assumption: {plan.errors.describe()}"]
    chosen = plan.chosen
    for k, option in enumerate(plan.options):
        mark = "->" if k == plan.chosen_index and len(plan.options) > 1 else "  "
        lines.append(f"{mark}{_option_line(plan, option)}")
    if chosen.labels is not None:
        gain = (f"; active selection saves {chosen.labels_uniform - chosen.labels} labels against a uniform draw"
                if chosen.labels_uniform is not None and chosen.labels_uniform > chosen.labels else "")
        more = max(chosen.labels - plan.labels_given, 0)
        lines.append(f"  labels: {chosen.labels} in all, predicted width {chosen.predicted_width:.3f}{gain}; "
                     f"{plan.labels_given} usable already, {more} to give")
        lines.append(f"  python run.py review serve --run {run} --metric {plan.metric} --n {chosen.labels}")
    lines += _cost_lines(plan, chosen)
    if plan.note:
        lines.append(f"  {plan.note}")
    if plan.bought is not None:
        lines.append(format_bought(plan.metric, plan.bought))
    return "\n".join(lines)


def format_bought(metric: str, gain: Bought) -> str:
    """What the labels bought: the interval now, against what the plan promised."""
    now = (f"{metric}: {gain.labels} labels bought {gain.estimate:.3f} [{gain.ci_low:.3f}, {gain.ci_high:.3f}], "
           f"an interval {gain.width:.3f} wide")
    if gain.promised_width is None:
        return f"  bought: {now} (no plan recorded for this run)"
    ratio = gain.width / gain.promised_width
    promised = f"{gain.promised_width:g} promised for {gain.promised_labels} labels"
    return f"  bought: {now} against {promised} ({ratio:.2f}x the promised width)"
