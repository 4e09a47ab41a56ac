"""When the judge is below the agreement bar: how many labels decide, and the decision once they exist.

A judge whose measured agreement is below `gate.min_judge_kappa` still sees differences; it cannot
be trusted to size them (a weak judge flags only part of a planted error, so its drop understates
the true one). `labels_plans` gives the gate (`ragwatch.decision.gate`), per such metric:
- `labels`: how many human labels of the new run's answers, drawn by active labelling
  (`ragwatch.statistics.active`, the design `review serve` uses), would put the interval of the
  difference clear of the allowed drop with 80% power, were the true difference what the judge sees;
  else with an even chance; else enough that the labels add no more uncertainty than the sampling of
  the items does (`power` says which; None: no number of labels would);
- `command`: the `review serve` line that gives them;
- `paired`: the prediction-powered paired difference, once the new run has labels (`PairedLabelled`).

The paired difference. Over the N items both runs scored, an item whose answer did not change
(same `judged_key`) has the same readers' label in both runs: its difference is exactly 0, no label
needed. For the N_c changed answers, the readers' difference `h_new - h_old` is estimated as the
judge's expected difference `e_new - e_old` (`e`: `ragwatch.review.spread.expected_label`, the
answer's value of the calibrated level when the score is one, as the headline and `compare`'s paired
difference are; else the mean P(supported) of its statements; else the score) plus the labels'
correction `h_new - e_new` on the labelled changed answers, each weighted by 1 / inclusion
probability (`ppi_mean` with lambda 1), scaled by N_c / N. The production side is its judge's
expectation: when production has labels of its own, `ragwatch.decision.compare` decides on both
runs' estimates instead (`basis="labelled"`). Stated assumption: on the changed answers production's
calibrated P(supported) is unbiased for its readers; a judge that overrates production makes a drop
look larger (and one that underrates it, smaller) by that bias times N_c / N.

Example:
    >>> plans = labels_plans(comparison, new_metrics, production_metrics, run="evaluate-2026_01_01", thresholds=th)
    >>> plans["faithfulness"].labels, plans["faithfulness"].command  # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import BaseModel

from ragwatch.results import MetricResult
from ragwatch.review.spread import expected_label, spreads_of
from ragwatch.statistics.active import labels_needed
from ragwatch.statistics.ppi import ppi_mean

if TYPE_CHECKING:
    from ragwatch.decision.compare import Comparison, MetricComparison
    from ragwatch.decision.thresholds import GateThresholds

Z95 = 1.959964
MIN_CHANGED_LABELS = 2


class PairedLabelled(BaseModel):
    """The prediction-powered paired difference new - production (metric units) and its 95% interval."""

    diff: float
    low: float
    high: float
    n_labels: int  # labels on changed answers that entered the estimate
    n_changed: int
    n_paired: int
    verdict: Literal["regressed", "cleared", "undecided"]


class LabelsPlan(BaseModel):
    """What a below-the-bar judge's gated metric needs: labels, the command, or the labelled decision."""

    metric: str
    labels: int | None
    power: str = ""  # what `labels` buys, in words
    command: str
    n_changed: int
    n_paired: int
    paired: PairedLabelled | None = None
    note: str = ""


def labels_plans(comparison: Comparison | None, new: Mapping[str, MetricResult], old: Mapping[str, MetricResult],
                 *, run: str, thresholds: GateThresholds) -> dict[str, LabelsPlan]:
    """A plan for every gated metric whose judge is below the bar and whose runs pair (see the module doc)."""
    if comparison is None or not comparison.has_baseline:
        return {}
    plans = {}
    for row in comparison.rows:
        # the row's standing is GateThresholds.judge_standing's, the one rule (human labels on both runs: none)
        below_bar = row.standing is not None and row.standing.kind == "below_bar" and row.basis != "labelled"
        if (not thresholds.is_gated(row.metric) or not below_bar or row.method != "paired"
                or row.metric not in new or row.metric not in old):
            continue
        plans[row.metric] = plan_for(row, new[row.metric], old[row.metric], run=run)
    return plans


def plan_for(row: MetricComparison, new: MetricResult, old: MetricResult, *, run: str) -> LabelsPlan:
    """The labels plan of one paired metric (see the module doc)."""
    f_new = {it.item_id: float(it.score) for it in new.items if it.ok and it.score is not None}
    f_old = {it.item_id: float(it.score) for it in old.items if it.ok and it.score is not None}
    key_new = {it.item_id: it.details.get("judged_key") for it in new.items}
    key_old = {it.item_id: it.details.get("judged_key") for it in old.items}
    common = [i for i in f_new if i in f_old]
    changed = [i for i in common if key_new.get(i) is None or key_new.get(i) != key_old.get(i)]
    spread = spreads_of(new)
    command = f"python run.py review serve --run {run} --metric {row.metric} --n {{n}}"
    # the draw `review serve` makes: every scored item of the new run, by its spread
    draw = np.array([spread[i][0] for i in f_new])
    residual = np.array([spread[i][0] if i in set(changed) else 0.0 for i in f_new])
    item_var = ((row.diff_high - row.diff_low) / (2 * Z95)) ** 2 if row.diff_high is not None else 0.0
    k, power = _how_many(draw, residual, _gap(row.diff, row), item_var, scale=len(f_new) / max(len(common), 1)
                         ) if changed else (None, "")
    plan = LabelsPlan(metric=row.metric, labels=k, power=power, command=command.format(n=k or len(f_new)),
                      n_changed=len(changed), n_paired=len(common))
    if new.labelled is not None and changed:
        plan.paired = paired_difference(row, new, old, f_new, f_old, changed, len(common))
        if plan.paired is None:
            plan.note = (f"fewer than {MIN_CHANGED_LABELS} of this run's labels are on the {len(changed)} answers "
                         "that changed")
    return plan


def _how_many(draw: np.ndarray, residual: np.ndarray, gap: float | None, item_var: float, *, scale: float
              ) -> tuple[int | None, str]:
    """Labels for 80% power at the difference seen; else for an even chance; else enough that the labels
    add no more uncertainty than the items themselves (a difference this close to the allowed drop
    cannot be promised a decision). The power phrase says which."""
    kwargs = {"residual": residual, "extra_variance": item_var, "scale": scale}
    if gap:
        for power, phrase in ((0.8, "80% power to decide at the difference seen"),
                              (0.5, "an even chance to decide at the difference seen")):
            if (k := labels_needed(draw, gap, power=power, **kwargs)) is not None:
                return k, phrase
    if item_var > 0 and (k := labels_needed(draw, Z95 * math.sqrt(2 * item_var), power=0.5, **kwargs)):
        return k, ("as sure as the items allow: the difference seen is too close to the allowed drop to "
                   "promise a decision")
    return None, ""


def _gap(diff: float | None, row: MetricComparison) -> float | None:
    """How far the difference lies from the allowed-drop boundary, which the interval must clear."""
    if diff is None:
        return None
    gain = diff if row.higher_is_better else -diff
    return abs(gain + row.allowed_drop) or None


def _expected(result: MetricResult, scores: dict[str, float]) -> dict[str, float]:
    """item id -> the label the judge expects (`expected_label`), for every scored item."""
    out = {it.item_id: expected_label(it) for it in result.items if it.item_id in scores}
    return {i: scores[i] if v is None else v for i, v in out.items()}


def paired_difference(row: MetricComparison, new: MetricResult, old: MetricResult, f_new: dict[str, float],
                      f_old: dict[str, float], changed: list[str], n_paired: int) -> PairedLabelled | None:
    """The prediction-powered paired difference from the new run's labels (module doc), or None when
    fewer than 2 labels fall on changed answers."""
    labels = (new.labelled.details.get("labels") or {}) if new.labelled is not None else {}
    used = [i for i in changed if i in labels]
    if len(used) < MIN_CHANGED_LABELS:
        return None
    noise = spreads_of(new)
    # what the judge expects a reader to say of each answer: the calibrated mean P(supported), which
    # estimates the readers' level (the verdict share does not); production's side rests on it
    e_new, e_old = _expected(new, f_new), _expected(old, f_old)
    y = [labels[i][0] - e_old[i] for i in used]  # the readers' new label against production's expectation
    g_lab = [e_new[i] - e_old[i] for i in used]
    g_all = [e_new[i] - e_old[i] for i in changed]
    est = ppi_mean(y, g_lab, g_all, weights=[1.0 / labels[i][1] for i in used], lam=1.0,
                   noise=[noise[i][1] for i in used])
    share = len(changed) / n_paired  # unchanged answers differ by exactly 0
    diff, low, high = est.estimate * share, est.ci_low * share, est.ci_high * share
    gain_low, gain_high = (low, high) if row.higher_is_better else (-high, -low)
    verdict: Literal["regressed", "cleared", "undecided"] = (
        "regressed" if gain_high < -row.allowed_drop else "cleared" if gain_low >= -row.allowed_drop
        else "undecided")
    return PairedLabelled(diff=diff, low=low, high=high, n_labels=len(used), n_changed=len(changed),
                          n_paired=n_paired, verdict=verdict)
