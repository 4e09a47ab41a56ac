"""Run comparison: each metric of two runs side by side, the difference and its verdict.

`compare_runs` sets two runs' metrics side by side: for every metric in both, the difference
`new - old` with a 95% interval (`ragwatch.statistics.intervals`; paired over items scored in both runs,
unpaired when the items do not pair) and a verdict. The gate (`ragwatch.decision.gate`) turns a comparison
into promote / do not promote; `ragwatch.report.summary` writes it as text, Markdown or HTML.

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
  (`MetricGroup.unavailable`, e.g. perplexity of a system that returns no token logprobs); the note
  gives the reason. Like "removed", it blocks the gate only when `gated_metrics` names the metric.

Example:
    >>> comparison = compare_runs(new_metrics, production_metrics, thresholds=GateThresholds())
    >>> print(comparison_text(comparison))  # ragwatch.report.summary
    >>> decision = gate_decision(comparison, GateThresholds())  # ragwatch.decision.gate
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from ragwatch.decision.thresholds import GateThresholds
from ragwatch.fmt import fmt_num
from ragwatch.results import JudgeAgreement, MetricResult
from ragwatch.statistics.intervals import paired_diff_interval, unpaired_diff_interval

if TYPE_CHECKING:
    import pandas as pd

Verdict = Literal["regressed", "improved", "unchanged", "inconclusive", "constant", "not_comparable", "added",
                  "removed", "not_available"]

# Row order in tables: what needs attention first.
_VERDICT_ORDER = ["regressed", "not_comparable", "removed", "not_available", "constant", "improved", "added",
                  "inconclusive", "unchanged"]

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
    "added": the system changed, not the metric set.
    """
    thresholds = thresholds or GateThresholds()
    for label, run in (("new", new), ("old", old or {})):
        wrong = [k for k, v in run.items() if not isinstance(v, MetricResult)]
        if wrong:
            raise TypeError(f"{label} run: values must be MetricResult, got other types for {wrong}")
    if not old:
        rows = [_one_sided(m, new[m], "added", thresholds) for m in sorted(new)]
        return Comparison(new_label=new_label, old_label=old_label, has_baseline=False, rows=rows)

    new_unavailable, old_unavailable = new_unavailable or {}, old_unavailable or {}
    rows: list[MetricComparison] = []
    for name in sorted(set(new) | set(old)):
        if name not in old:
            rows.append(_one_sided(name, new[name], "added", thresholds))
            if name in old_unavailable:
                _not_available(rows[-1], old_label, old_unavailable[name])
        elif name not in new:
            rows.append(_one_sided(name, old[name], "removed", thresholds))
            if name in new_unavailable:
                _not_available(rows[-1], new_label, new_unavailable[name])
        else:
            rows.append(_compare_metric(name, new[name], old[name], thresholds))
    rows.sort(key=lambda r: (_VERDICT_ORDER.index(r.verdict), r.metric))
    return Comparison(new_label=new_label, old_label=old_label, rows=rows)


def _one_sided(name: str, result: MetricResult, verdict: Verdict, thresholds: GateThresholds) -> MetricComparison:
    added = verdict == "added"
    return MetricComparison(
        metric=name,
        new_score=result.score if added else None,
        old_score=None if added else result.score,
        n_new=result.n_scored if added else 0,
        n_old=0 if added else result.n_scored,
        higher_is_better=result.info.higher_is_better,
        allowed_drop=thresholds.allowed_drop(name),
        gated=thresholds.is_gated(name),
        verdict=verdict,
        constant_value=result.constant_value() if added else None,
        agreement=result.info.agreement if added else None,
    )


def _not_available(row: MetricComparison, run: str, reason: str) -> None:
    """The reason reads "not available for this system (...)" (`LLMJudge.unavailable`): name whose."""
    row.verdict = "not_available"
    _add_note(row, f"in {run}: {reason}")


def _scored(result: MetricResult) -> dict[str, float] | None:
    """item_id -> score of the scored items, or None when ids repeat (then items cannot pair)."""
    ids = [it.item_id for it in result.items if it.ok and it.score is not None]
    if len(set(ids)) != len(ids):
        return None
    return {it.item_id: float(it.score) for it in result.items if it.ok and it.score is not None}


def _add_note(row: MetricComparison, note: str) -> None:
    row.note = (row.note + "; " if row.note else "") + note


def _compare_metric(name: str, new: MetricResult, old: MetricResult, thresholds: GateThresholds) -> MetricComparison:
    row = MetricComparison(
        metric=name, old_score=old.score, new_score=new.score, n_old=old.n_scored, n_new=new.n_scored,
        higher_is_better=new.info.higher_is_better,
        allowed_drop=thresholds.allowed_drop(name), gated=thresholds.is_gated(name), verdict="inconclusive",
        constant_value=new.constant_value(),
        agreement=new.info.agreement,
    )
    new_scores, old_scores = _scored(new), _scored(old)
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
        row.verdict = "not_comparable"
        which = "new" if not new_values else "old"
        row.note = f"no scored item in the {which} run"
        return row

    if new.info.family == "e2e" and new_scores is not None and old_scores is not None:
        return _compare_cases(row, new_scores, old_scores)
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
    if row.basis != "labelled" and (change := new.info.judge_change(old.info)):
        row.verdict, row.gated = "not_comparable", False
        _add_note(row, f"judged differently ({change}): the scores are on different bases; not gated")
        return row
    if row.constant_value is not None:
        row.verdict = "constant"
        row.gated = False
        before = "as before" if old.constant_value() is not None else "it varied in the old run"
        _add_note(row, f"constant judge ({fmt_num(row.constant_value)} on every item; {before}): not gated")
        return row
    if row.basis != "labelled" and row.method == "paired" and all(new_scores[i] == old_scores[i] for i in common):
        # The same score on every paired item: no change to measure, whatever n is. Items scored in
        # one run only (a judge failure) are counted in n_new/n_old, not read as a change.
        row.verdict = "unchanged"
        unpaired = max(len(new_values), len(old_values)) - len(common)
        _add_note(row, f"identical on all {len(common)} paired items"
                       + (f" ({unpaired} scored in one run only)" if unpaired else ""))
        return row
    if not enough:
        row.verdict = "inconclusive"
        _add_note(row, "fewer than 2 items: no interval")
        return row
    _, low, high = row.decided_interval
    row.verdict = _verdict(low, high, row.higher_is_better, row.allowed_drop)
    gain_high = high if row.higher_is_better else -low
    if row.verdict == "unchanged" and gain_high < 0:
        _add_note(row, "a drop, but within the allowed drop")
    return row


def _compare_cases(row: MetricComparison, new: dict[str, float], old: dict[str, float]) -> MetricComparison:
    """Handcrafted tests are the whole population, not a sample of one: the difference over the cases
    both runs scored is exact (no interval, no minimum n), and the cases that flipped are named."""
    common = [case for case in new if case in old]
    row.method, row.n_paired = "exact", len(common)
    if not common:
        row.verdict = "not_comparable"
        row.note = "no test case in common"
        return row
    diff = sum(new[c] - old[c] for c in common) / len(common)
    row.diff = row.diff_low = row.diff_high = diff
    row.verdict = _verdict(diff, diff, row.higher_is_better, row.allowed_drop)
    better = (lambda c: new[c] > old[c]) if row.higher_is_better else (lambda c: new[c] < old[c])
    worse = [c for c in common if new[c] != old[c] and not better(c)]
    fixed = [c for c in common if new[c] != old[c] and better(c)]
    notes = [f"exact over {len(common)} handcrafted cases"]
    notes += [f"worse: {', '.join(worse[:5])}"] if worse else []
    notes += [f"better: {', '.join(fixed[:5])}"] if fixed else []
    if len(common) < max(len(new), len(old)):
        notes.append(f"{len(new) - len(common)} new and {len(old) - len(common)} removed cases not compared")
    _add_note(row, "; ".join(notes))
    return row


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
