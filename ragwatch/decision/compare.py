"""Run comparison: each metric of two runs side by side, the difference and its verdict.

`compare_runs` sets two runs' metrics side by side: for every metric in both, the difference
`new - old` with a 95% interval (`ragwatch.statistics.intervals`; paired over items scored in both runs,
unpaired when the items do not pair) and a verdict. The gate (`ragwatch.decision.gate`) turns a comparison
into promote / do not promote; `ragwatch.report.summary` writes it as text, Markdown or HTML.

A score that is a level rather than the mean of item scores (faithfulness: the mean over items of
calibrated P(supported), `MetricResult.level_values`) is differenced on the items' values of that
level in both runs, so the difference is of the headline figures' own quantity (over the paired
items); when only one run's score is a level, the difference is of item scores and the row says so.

Direction, scale and meaning come from each metric's `MetricResult.info` (`MetricInfo`). When both
runs carry a `MetricResult.labelled` estimate (prediction-powered, from human labels), the verdict
uses the difference of those estimates and its interval, and the row says so (`basis="labelled"`);
the judge-only interval stays in the row for contrast.

Verdicts, with `gain` the difference oriented so that positive is better (mirrored for
lower-is-better metrics such as perplexity or failure rates) and `drop` the allowed drop:
- "regressed": the whole interval of the gain lies below `-drop` (ci_high < -drop);
- "improved": the whole interval lies above 0;
- "unchanged": the whole interval lies within [-drop, +drop] (with drop 0: only an exact tie);
- "inconclusive": anything else (the data neither show a change nor rule one out), and fewer than
  2 items to compare;
- "constant": an LLM judge that gave every item of the new run the same score: it measures nothing
  there, is flagged and never gates (its difference is still shown);
- "not_comparable": one run has no scored item of the metric; or an LLM judge scored the two runs
  with a different judge model or prompt version (without human labels to bridge them): its difference
  is still shown, flagged, and does not gate (a judge upgrade must not read as a regression or a gain);
- "added" / "removed": the metric exists only in the new / only in the old run;
- "not_available": the metric exists in one run only because the other run's system cannot have it
  (`MetricGroup.unavailable`, e.g. perplexity of a system that returns no token logprobs) or the other
  run's config does not measure it (judges or keyword tests off); the note gives the reason and the
  setting. It never refuses a promotion: the gate warns once and decides on what was measured;
- "needs_labels": set by the gate (`ragwatch.decision.gate.settle`), never here: a judge below the
  agreement bar sees a drop it cannot size, and human labels will decide it.

A judged metric's standing (below the agreement bar, or of unknown agreement) comes from one rule,
`GateThresholds.judge_standing`; the row carries it (`standing`) for the gate and the labels plan.

Example:
    >>> comparison = compare_runs(new_metrics, production_metrics, thresholds=GateThresholds())
    >>> print(comparison_text(comparison))  # ragwatch.report.summary
    >>> decision = gate_decision(comparison, GateThresholds())  # ragwatch.decision.gate
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from pydantic import BaseModel, Field, model_validator

from ragwatch.decision.reasons import GateReason, GateRule
from ragwatch.decision.thresholds import GateThresholds, JudgeStanding, WeakJudgeRule, weak_judge_blocks
from ragwatch.fmt import fmt_num
from ragwatch.results import JudgeAgreement, MetricResult
from ragwatch.statistics.intervals import paired_diff_interval, unpaired_diff_interval

if TYPE_CHECKING:
    import pandas as pd

Verdict = Literal["regressed", "improved", "unchanged", "inconclusive", "constant", "not_comparable", "added",
                  "removed", "not_available", "needs_labels"]

# Row order in tables: what needs attention first.
VERDICT_ORDER = ["regressed", "needs_labels", "not_comparable", "removed", "not_available", "constant", "improved",
                 "added", "inconclusive", "unchanged"]

# Pair items only when most of them pair: a handful of shared ids says little about the rest.
_MIN_PAIRED_FRACTION = 0.5


class MetricComparison(BaseModel):
    """One metric in two runs. `diff*` are `new - old` in the metric's units (not oriented)."""

    metric: str
    old_score: float | None = None
    new_score: float | None = None
    diff: float | None = None
    diff_low: float | None = None
    diff_high: float | None = None
    n_paired: int = 0
    n_old: int = 0  # items scored in the old run
    n_new: int = 0
    method: Literal["paired", "unpaired", "exact"] | None = None
    higher_is_better: bool = True
    allowed_drop: float = 0.0
    gated: bool = True
    verdict: Verdict
    note: str = ""
    basis: Literal["judge", "labelled"] = "judge"  # which interval decided the verdict
    labelled_diff: float | None = None  # difference of the prediction-powered estimates, when both runs have one
    labelled_low: float | None = None
    labelled_high: float | None = None
    constant_value: float | None = None  # set when the new run's scores are all this one value (a judge)
    agreement: JudgeAgreement | None = None  # the new run's judge's measured agreement (MetricInfo.agreement)
    standing: JudgeStanding | None = None  # GateThresholds.judge_standing of the new run's judge
    gate_rule: GateRule | None = None  # "weak_judge_paired": a below-bar judge's row gates (`weak_judge_blocks`)
    gate_role: Literal["reason", "needs", "opinion"] | None = None  # set once the gate settled a below-bar judge
    gate_reason: GateReason | None = None  # the gate's finding for a settled row (its reason, call for labels, opinion)

    @model_validator(mode="before")
    @classmethod
    def _older_shape(cls, data: Any) -> Any:
        # a row stored before the gate's findings were typed carries their words in `gate_note`
        if isinstance(data, dict) and "gate_note" in data:
            data = dict(data)
            words = data.pop("gate_note")
            if words and data.get("gate_reason") is None:
                data["gate_reason"] = words  # read as a "said" GateReason
        return data

    def __setstate__(self, state: dict[str, Any]) -> None:
        # a pickle of an older row is read as its JSON would be (fields it lacks take their defaults)
        fresh = type(self).model_validate(dict(state["__dict__"]))
        super().__setstate__({**state, "__dict__": fresh.__dict__,
                              "__pydantic_fields_set__": state.get("__pydantic_fields_set__", set())})

    @property
    def n_compared(self) -> int:
        """Items behind the interval: pairs, or the smaller run when unpaired."""
        return self.n_paired if self.method in ("paired", "exact") else min(self.n_new, self.n_old)

    @property
    def decided_interval(self) -> tuple[float | None, float | None, float | None]:
        """(diff, low, high) of the interval that decided the verdict."""
        if self.basis == "labelled":
            return self.labelled_diff, self.labelled_low, self.labelled_high
        return self.diff, self.diff_low, self.diff_high


class Comparison(BaseModel):
    """Metric-by-metric comparison of a new run with an old one (`old_label`: e.g. "production")."""

    new_label: str = "new"
    old_label: str = "old"
    has_baseline: bool = True
    rows: list[MetricComparison] = Field(default_factory=list)

    def row(self, metric: str) -> MetricComparison:
        for r in self.rows:
            if r.metric == metric:
                return r
        raise KeyError(f"metric {metric!r} not in this comparison; have {[r.metric for r in self.rows]}")

    def counts(self) -> dict[str, int]:
        return dict(Counter(r.verdict for r in self.rows))

    def to_frame(self) -> pd.DataFrame:
        """One row per metric, the columns of `MetricComparison`."""
        import pandas as pd  # ~0.5 s to import; config validation needs none of it

        columns = list(MetricComparison.model_fields)
        return pd.DataFrame([r.model_dump() for r in self.rows], columns=columns)


def compare_runs(
    new: dict[str, MetricResult],
    old: dict[str, MetricResult] | None,
    *,
    thresholds: GateThresholds | None = None,
    new_label: str = "new",
    old_label: str = "old",
    new_unavailable: Mapping[str, str] | None = None,
    old_unavailable: Mapping[str, str] | None = None,
) -> Comparison:
    """Compare every metric of `new` with `old`; `old=None` (or empty) means there is no baseline.

    A metric's direction is its `info.direction` (`MetricInfo`), the one source. `new_unavailable` /
    `old_unavailable` (each run's `MetricGroup.unavailable`: metric -> why that run's system cannot have
    it) turn a metric present in one run only into "not_available" with the reason, not "removed" or
    "added": the system changed, not the metric set. Every row's verdict comes from `decide_verdict`.
    """
    thresholds = thresholds or GateThresholds()
    for label, run in (("new", new), ("old", old or {})):
        wrong = [k for k, v in run.items() if not isinstance(v, MetricResult)]
        if wrong:
            raise TypeError(f"{label} run: values must be MetricResult, got other types for {wrong}")
    if not old:
        rows = [_one_sided(m, new[m], Evidence(in_old=False), thresholds) for m in sorted(new)]
        return Comparison(new_label=new_label, old_label=old_label, has_baseline=False, rows=rows)

    new_unavailable, old_unavailable = new_unavailable or {}, old_unavailable or {}
    rows: list[MetricComparison] = []
    for name in sorted(set(new) | set(old)):
        if name not in old:
            why = f"in {old_label}: {old_unavailable[name]}" if name in old_unavailable else None
            rows.append(_one_sided(name, new[name], Evidence(in_old=False, unavailable=why), thresholds))
        elif name not in new:
            why = f"in {new_label}: {new_unavailable[name]}" if name in new_unavailable else None
            rows.append(_one_sided(name, old[name], Evidence(in_new=False, unavailable=why), thresholds))
        else:
            rows.append(_compare_metric(name, new[name], old[name], thresholds))
    rows.sort(key=lambda r: (VERDICT_ORDER.index(r.verdict), r.metric))
    return Comparison(new_label=new_label, old_label=old_label, rows=rows)


@dataclass(frozen=True)
class Evidence:
    """Everything a metric's verdict is decided from, gathered by `compare_runs` (`decide_verdict` reads
    nothing else). `interval` is (low, high) of the difference that decides (labelled or the judge's),
    `cases` the number of handcrafted cases both runs scored (keyword tests; None for a sample)."""

    in_new: bool = True
    in_old: bool = True
    unavailable: str | None = None  # why the run without the metric cannot have it ("in <run>: <reason>")
    n_new: int = 0
    n_old: int = 0
    cases: int | None = None
    judge_change: str | None = None  # how the judge differs between runs, when no labels bridge them
    constant_value: float | None = None  # the new run's one score (a constant judge)
    old_constant: bool = False
    identical_pairs: int = 0  # > 0: every one of this many paired items has the same score in both runs
    unpaired_extra: int = 0  # items scored in one run only, beside identical pairs
    enough: bool = True  # at least 2 items behind the interval
    interval: tuple[float, float] | None = None
    higher_is_better: bool = True
    allowed_drop: float = 0.0
    standing: JudgeStanding | None = None  # GateThresholds.judge_standing: below the bar or agreement unknown
    weak_judge: WeakJudgeRule = "paired"  # GateThresholds.weak_judge: what a judge below the bar still decides


class VerdictDecision(NamedTuple):
    verdict: Verdict
    note: str = ""
    gates: bool = True  # False: shown, never gates (whatever the thresholds say)


def decide_verdict(e: Evidence) -> VerdictDecision:
    """The one rule that decides a metric's verdict, the first that applies, in this order:
    in one run only (added / removed / not_available); no scored item in a run; no handcrafted case in
    common (not_comparable); a different judge (not_comparable, not gated); a constant judge (constant,
    not gated); identical on every paired item (unchanged); fewer than 2 items (inconclusive); else the
    interval against the allowed drop (`_verdict`). A judge below the gate's agreement bar or of unknown
    agreement (`standing`) keeps its verdict and is shown, not gated, except what `weak_judge_blocks`
    lets it decide (rule "weak_judge_paired"; `ragwatch.report.verdicts` words it). The gate and every
    printed verdict read the result, never the deltas."""
    if not (e.in_new and e.in_old):
        if e.unavailable:
            return VerdictDecision("not_available", e.unavailable)
        return VerdictDecision("added" if e.in_new else "removed")
    if not e.n_new or not e.n_old:
        return VerdictDecision("not_comparable", f"no scored item in the {'new' if not e.n_new else 'old'} run")
    if e.cases == 0:
        return VerdictDecision("not_comparable", "no test case in common")
    if e.judge_change:
        return VerdictDecision("not_comparable", f"judged differently ({e.judge_change}): the scores are on "
                                                 "different bases; not gated", gates=False)
    if e.constant_value is not None:
        before = "as before" if e.old_constant else "it varied in the old run"
        return VerdictDecision("constant", f"constant judge ({fmt_num(e.constant_value)} on every item; {before}): "
                                           "not gated", gates=False)
    not_gated = f"{e.standing.reason}: shown, not gated" if e.standing else ""
    if e.identical_pairs:
        extra = f" ({e.unpaired_extra} scored in one run only)" if e.unpaired_extra else ""
        return VerdictDecision("unchanged", _join(f"identical on all {e.identical_pairs} paired items{extra}",
                                                  not_gated), gates=not not_gated)
    if not e.enough or e.interval is None:
        return VerdictDecision("inconclusive", _join("fewer than 2 items: no interval", not_gated),
                               gates=not not_gated)
    low, high = e.interval
    verdict = _verdict(low, high, e.higher_is_better, e.allowed_drop)
    gain_high = high if e.higher_is_better else -low
    within = "a drop, but within the allowed drop" if verdict == "unchanged" and gain_high < 0 else ""
    if weak_judge_blocks(e.standing, verdict, e.weak_judge):
        assert e.standing is not None
        return VerdictDecision(verdict, e.standing.reason, gates=True)  # the row's gate_rule says why
    return VerdictDecision(verdict, _join(within, not_gated), gates=not not_gated)


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def _apply(row: MetricComparison, e: Evidence) -> MetricComparison:
    """Set the row's verdict (and whether it gates) from `decide_verdict`, keeping notes already made."""
    decision = decide_verdict(e)
    row.verdict = decision.verdict
    row.gated = row.gated and decision.gates
    if weak_judge_blocks(e.standing, decision.verdict, e.weak_judge):
        row.gate_rule = "weak_judge_paired"
    if decision.note:
        _add_note(row, decision.note)
    return row


def _one_sided(name: str, result: MetricResult, e: Evidence, thresholds: GateThresholds) -> MetricComparison:
    added = e.in_new
    row = MetricComparison(
        metric=name,
        new_score=result.score if added else None,
        old_score=None if added else result.score,
        n_new=result.n_scored if added else 0,
        n_old=0 if added else result.n_scored,
        higher_is_better=result.info.higher_is_better,
        allowed_drop=thresholds.allowed_drop(name),
        gated=thresholds.is_gated(name),
        verdict="added" if added else "removed",
        constant_value=result.constant_value() if added else None,
        agreement=result.info.agreement if added else None,
    )
    return _apply(row, e)


def _scored(result: MetricResult) -> dict[str, float] | None:
    """item_id -> score of the scored items, or None when ids repeat (then items cannot pair)."""
    ids = [it.item_id for it in result.items if it.ok and it.score is not None]
    if len(set(ids)) != len(ids):
        return None
    return {it.item_id: float(it.score) for it in result.items if it.ok and it.score is not None}


def _item_values(new: MetricResult, old: MetricResult) -> tuple[dict[str, float] | None, dict[str, float] | None, str]:
    """Per run, item id -> the value the difference is taken on: the items' values of the level when
    both scores are levels (`MetricResult.level_values`: the headline is their mean, so the paired
    difference and the headline figures are one quantity), else the item scores; and a note when the
    headline and the difference cannot be the same quantity (one run's score is a level, the other's not)."""
    level_new, level_old = new.level_values(), old.level_values()
    if level_new is not None and level_old is not None:
        return level_new, level_old, ""
    note = ""
    if level_new is not None or level_old is not None:
        which = "new" if level_new is not None else "old"
        note = (f"only the {which} run's score is a calibrated level: the difference is of item scores, not of "
                "the two headline figures")
    return _scored(new), _scored(old), note


def _add_note(row: MetricComparison, note: str) -> None:
    row.note = (row.note + "; " if row.note else "") + note


def _compare_metric(name: str, new: MetricResult, old: MetricResult, thresholds: GateThresholds) -> MetricComparison:
    """Gather the evidence of one metric in both runs (differences, intervals) for `decide_verdict`."""
    row = MetricComparison(
        metric=name, old_score=old.score, new_score=new.score, n_old=old.n_scored, n_new=new.n_scored,
        higher_is_better=new.info.higher_is_better,
        allowed_drop=thresholds.allowed_drop(name), gated=thresholds.is_gated(name), verdict="inconclusive",
        constant_value=new.constant_value(),
        agreement=new.info.agreement,
    )
    facts = {"higher_is_better": row.higher_is_better, "allowed_drop": row.allowed_drop}
    new_scores, old_scores, quantity = _item_values(new, old)
    if quantity:
        _add_note(row, quantity)
    if new_scores is None or old_scores is None:
        # duplicate ids: fall back to every scored item of each run
        new_values = [float(it.score) for it in new.items if it.ok and it.score is not None]
        old_values = [float(it.score) for it in old.items if it.ok and it.score is not None]
        common: list[str] = []
        row.note = "duplicate item ids: compared unpaired"
    else:
        new_values, old_values = list(new_scores.values()), list(old_scores.values())
        common = [i for i in new_scores if i in old_scores]
    row.n_new, row.n_old = len(new_values), len(old_values)
    if not new_values or not old_values:
        return _apply(row, Evidence(n_new=row.n_new, n_old=row.n_old, **facts))

    if new.info.family == "e2e" and new_scores is not None and old_scores is not None:
        return _compare_cases(row, new_scores, old_scores, facts)
    min_pairs = _MIN_PAIRED_FRACTION * min(len(new_values), len(old_values))
    if new_scores is not None and old_scores is not None and common and len(common) >= min_pairs:
        diff, low, high = paired_diff_interval(
            [new_scores[i] for i in common], [old_scores[i] for i in common], scale=new.info.scale)
        row.method, row.n_paired = "paired", len(common)
        enough = len(common) >= 2
    else:
        diff, low, high = unpaired_diff_interval(new_values, old_values, scale=new.info.scale)
        row.method = "unpaired"
        if not row.note:
            row.note = (f"only {len(common)} item ids in common: compared unpaired" if common
                        else "no item ids in common: compared unpaired")
        enough = min(len(new_values), len(old_values)) >= 2
    row.diff, row.diff_low, row.diff_high = diff, low, high
    _labelled_interval(row, new, old)
    judged = row.basis != "labelled"
    standing = thresholds.judge_standing(name, new.info, labelled=not judged)
    row.standing = standing
    identical = (judged and row.method == "paired" and new_scores is not None and old_scores is not None
                 and all(new_scores[i] == old_scores[i] for i in common))
    _, d_low, d_high = row.decided_interval
    return _apply(row, Evidence(
        n_new=row.n_new, n_old=row.n_old,
        judge_change=new.info.judge_change(old.info) if judged else None,
        constant_value=row.constant_value, old_constant=old.constant_value() is not None,
        identical_pairs=len(common) if identical else 0,
        unpaired_extra=max(len(new_values), len(old_values)) - len(common) if identical else 0,
        enough=enough, interval=None if d_low is None or d_high is None else (d_low, d_high),
        standing=standing,
        weak_judge=thresholds.weak_judge, **facts))


def _compare_cases(row: MetricComparison, new: dict[str, float], old: dict[str, float],
                   facts: dict[str, Any]) -> MetricComparison:
    """Handcrafted tests are the whole population, not a sample of one: the difference over the cases
    both runs scored is exact (no interval, no minimum n), and the cases that flipped are named."""
    common = [case for case in new if case in old]
    row.method, row.n_paired = "exact", len(common)
    if not common:
        return _apply(row, Evidence(n_new=row.n_new, n_old=row.n_old, cases=0, **facts))
    diff = sum(new[c] - old[c] for c in common) / len(common)
    row.diff = row.diff_low = row.diff_high = diff
    better = (lambda c: new[c] > old[c]) if row.higher_is_better else (lambda c: new[c] < old[c])
    worse = [c for c in common if new[c] != old[c] and not better(c)]
    fixed = [c for c in common if new[c] != old[c] and better(c)]
    notes = [f"exact over {len(common)} handcrafted cases"]
    notes += [f"worse: {', '.join(worse[:5])}"] if worse else []
    notes += [f"better: {', '.join(fixed[:5])}"] if fixed else []
    if len(common) < max(len(new), len(old)):
        notes.append(f"{len(new) - len(common)} new and {len(old) - len(common)} removed cases not compared")
    _add_note(row, "; ".join(notes))
    return _apply(row, Evidence(n_new=row.n_new, n_old=row.n_old, cases=len(common), interval=(diff, diff),
                                **facts))


def _labelled_interval(row: MetricComparison, new: MetricResult, old: MetricResult) -> None:
    """With a prediction-powered estimate in both runs, decide on the difference of those estimates.

    The two runs' estimates are independent samples, so the interval of the difference combines
    their half-widths in quadrature (a normal approximation of each interval).
    """
    if new.labelled is None or old.labelled is None:
        if new.labelled is not None or old.labelled is not None:
            _add_note(row, "human labels in one run only: decided on the judge's interval")
        return
    half_new = (new.labelled.ci_high - new.labelled.ci_low) / 2
    half_old = (old.labelled.ci_high - old.labelled.ci_low) / 2
    diff = new.labelled.score - old.labelled.score
    half = math.hypot(half_new, half_old)
    row.basis = "labelled"
    row.labelled_diff, row.labelled_low, row.labelled_high = diff, diff - half, diff + half
    _add_note(row, f"decided on the prediction-powered estimates ({new.labelled.method}, "
                   f"{new.labelled.n_labels} and {old.labelled.n_labels} human labels)")


def _verdict(low: float, high: float, higher_is_better: bool, allowed_drop: float) -> Verdict:
    gain_low, gain_high = (low, high) if higher_is_better else (-high, -low)
    # a small tolerance so that float noise on identical runs does not read as a change
    eps = 1e-12
    if gain_high < -allowed_drop - eps:
        return "regressed"
    if gain_low > eps:
        return "improved"
    if gain_low >= -allowed_drop - eps and gain_high <= allowed_drop + eps:
        return "unchanged"
    return "inconclusive"
