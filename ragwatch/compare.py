"""Run comparison and the regression gate.

`compare_runs` sets two runs' metrics side by side: for every metric in both, the difference
`new - old` with a bootstrap 95% interval (paired over items scored in both runs, unpaired when the
items do not pair) and a verdict. `gate_decision` turns a comparison into promote / do not promote.

Direction, scale and meaning come from each metric's `MetricResult.info` (`MetricInfo`). When both
runs carry a `MetricResult.labelled` estimate (prediction-powered, from human labels), the verdict
uses the difference of those estimates and its interval, and the row says so (`basis="labelled"`);
the judge-only interval stays in the row for contrast.

What an "inconclusive" gated metric does is the team's choice (`GateThresholds.inconclusive`):
"promote" (only clear regressions block), "hold" (any inconclusive gated metric holds the
promotion), "min_n" (the default: inconclusive holds only when fewer than `min_n` items were
compared, i.e. when the evaluation set is too small to decide).

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
- "added" / "removed": the metric exists only in the new / only in the old run.

Example:
    >>> comparison = compare_runs(new_metrics, production_metrics, thresholds=GateThresholds())
    >>> print(comparison.to_text())
    >>> decision = gate_decision(comparison, GateThresholds())
    >>> decision.promote, decision.reasons
"""

from __future__ import annotations

import html
import math
from collections import Counter
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ragwatch.results import MetricResult
from ragwatch.stats import bootstrap_paired_diff_ci, bootstrap_unpaired_diff_ci

if TYPE_CHECKING:
    import pandas as pd

Verdict = Literal["regressed", "improved", "unchanged", "inconclusive", "constant", "not_comparable", "added",
                  "removed"]
InconclusiveRule = Literal["promote", "hold", "min_n"]
GateStatus = Literal["promote", "regressed", "hold", "no_baseline"]

# Row order in tables: what needs attention first.
_VERDICT_ORDER = ["regressed", "not_comparable", "removed", "constant", "improved", "added", "inconclusive",
                  "unchanged"]

# Pair items only when most of them pair: a handful of shared ids says little about the rest.
_MIN_PAIRED_FRACTION = 0.5

VERDICT_COLOURS = {
    "regressed": "#c62828",
    "improved": "#2e7d32",
    "unchanged": "#546e7a",
    "inconclusive": "#9e9e9e",
    "constant": "#ef6c00",
    "not_comparable": "#6a1b9a",
    "added": "#1565c0",
    "removed": "#1565c0",
}


def matches(name: str, pattern: str) -> bool:
    """True when `pattern` equals `name`, is a prefix of it, or matches it as a glob (`hit_rate@*`)."""
    return name == pattern or name.startswith(pattern) or fnmatchcase(name, pattern)


class GateThresholds(BaseModel):
    """How much each metric may drop before the gate refuses a promotion.

    Drops are absolute, in the metric's own units (0.02 on a 0-1 rate is two points). Names in
    `per_metric`, `gated_metrics` and `lower_is_better` match exactly, by prefix or as globs.
    A metric's direction comes from its `MetricInfo`; `lower_is_better` only overrides it for
    metrics whose producer declares it wrongly. `inconclusive` and `min_n`: see the module docstring.

    Example:
        >>> GateThresholds(default_allowed_drop=0.02, per_metric={"faithfulness": 0.05},
        ...                gated_metrics=["system/hit_rate", "faithfulness"], inconclusive="min_n", min_n=30)
    """

    model_config = ConfigDict(extra="forbid")

    default_allowed_drop: float = Field(0.0, ge=0.0)
    per_metric: dict[str, float] = Field(default_factory=dict)
    gated_metrics: list[str] | None = None  # None: every metric present in both runs
    lower_is_better: list[str] = Field(default_factory=list)
    inconclusive: InconclusiveRule = "min_n"
    min_n: int = Field(30, ge=2)

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

    def is_lower_better(self, metric: str) -> bool:
        return any(matches(metric, p) for p in self.lower_is_better)


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
    method: Literal["paired", "unpaired"] | None = None
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

    @property
    def n_compared(self) -> int:
        """Items behind the interval: pairs, or the smaller run when unpaired."""
        return self.n_paired if self.method == "paired" else min(self.n_new, self.n_old)

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

    def _cells(self, r: MetricComparison) -> list[str]:
        interval = (
            f"[{_signed(r.diff_low)}, {_signed(r.diff_high)}]" if r.diff_low is not None else "-"
        )
        if r.basis == "labelled":
            interval += f"; labelled {_signed(r.labelled_diff)} [{_signed(r.labelled_low)}, {_signed(r.labelled_high)}]"
        direction = "higher" if r.higher_is_better else "lower"
        return [
            r.metric, _num(r.old_score), _num(r.new_score), _signed(r.diff), interval,
            {"paired": f"{r.n_paired}", "unpaired": f"{r.n_new}/{r.n_old} unpaired"}.get(r.method or "", "-"),
            direction, _num(r.allowed_drop), r.verdict + ("" if r.gated else " (not gated)"),
        ]

    _HEADER = ("metric", "old", "new", "diff", "95% CI of diff", "n paired", "better", "allowed drop",
               "verdict")

    def _title(self) -> str:
        return f"{self.new_label} vs {self.old_label}"

    def to_markdown(self) -> str:
        lines = [f"**{_md(self._title())}**", ""]
        if not self.has_baseline:
            return "\n".join([*lines, f"No {_md(self.old_label)} baseline to compare with."])
        lines.append("| " + " | ".join(self._HEADER) + " |")
        lines.append("|" + "---|" * len(self._HEADER))
        for r in self.rows:
            cells = [_md(c) for c in self._cells(r)]
            if r.verdict in ("regressed", "improved"):
                cells[-1] = f"**{cells[-1]}**"
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def to_text(self) -> str:
        """A plain terminal table (no colour codes, so it reads the same in CI logs)."""
        if not self.has_baseline:
            return f"{self._title()}: no {self.old_label} baseline to compare with."
        table = [list(self._HEADER)] + [self._cells(r) for r in self.rows]
        widths = [max(len(row[i]) for row in table) for i in range(len(self._HEADER))]
        numeric = {1, 2, 3, 5, 7}
        out = [self._title()]
        for j, row in enumerate(table):
            cells = [c.rjust(w) if i in numeric and j else c.ljust(w) for i, (c, w) in
                     enumerate(zip(row, widths, strict=True))]
            out.append("  ".join(cells).rstrip())
            if j == 0:
                out.append("  ".join("-" * w for w in widths))
        counts = ", ".join(f"{v} {k}" for k, v in sorted(self.counts().items()))
        out.append(f"({counts})")
        return "\n".join(out)

    def to_html(self, *, full_page: bool = False) -> str:
        """An HTML table with coloured verdicts; `full_page=True` wraps it in a standalone page."""
        title = html.escape(self._title())
        if not self.has_baseline:
            body = f"<p>No {html.escape(self.old_label)} baseline to compare with.</p>"
        else:
            head = "".join(f"<th>{html.escape(h)}</th>" for h in self._HEADER)
            rows = []
            for r in self.rows:
                cells = self._cells(r)
                tds = "".join(f'<td class="num">{html.escape(c)}</td>' if i in (1, 2, 3, 4, 5, 7)
                              else f"<td>{html.escape(c)}</td>" for i, c in enumerate(cells[:-1]))
                colour = VERDICT_COLOURS[r.verdict]
                note = f' title="{html.escape(r.note)}"' if r.note else ""
                tds += (f'<td><span class="verdict" style="background:{colour}"{note}>'
                        f"{html.escape(cells[-1])}</span></td>")
                rows.append(f"<tr>{tds}</tr>")
            notes = [f"<li><b>{html.escape(r.metric)}</b>: {html.escape(r.note)}</li>"
                     for r in self.rows if r.note]
            body = (f'<table class="cmp"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody>'
                    f"</table>" + (f'<ul class="notes">{"".join(notes)}</ul>' if notes else ""))
        fragment = f'<section class="comparison"><h3>{title}</h3>{body}</section>'
        if not full_page:
            return fragment
        return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
                f"<style>{COMPARISON_CSS}</style></head><body>{fragment}</body></html>")


COMPARISON_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5rem;color:#222}
table.cmp{border-collapse:collapse;font-size:.9rem}
table.cmp th,table.cmp td{border-bottom:1px solid #ddd;padding:.3rem .6rem;text-align:left}
table.cmp th{background:#f3f5f7}
table.cmp td.num{text-align:right;font-variant-numeric:tabular-nums}
.verdict{color:#fff;border-radius:.6rem;padding:.05rem .5rem;font-size:.8rem;white-space:nowrap}
ul.notes{font-size:.8rem;color:#555}
"""


class GateDecision(BaseModel):
    """Promote or not, and why (one reason per regressed or held metric, or why it passed).

    `status`: "promote", "regressed" (a gated metric got worse), "hold" (nothing regressed but the
    team's inconclusive rule asks for more evidence), "no_baseline" (first evaluation: promoted).
    `flags`: warnings that do not decide, e.g. a constant judge that was excluded from gating.
    """

    promote: bool
    reasons: list[str] = Field(default_factory=list)
    status: GateStatus = "promote"
    flags: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _status_agrees(self) -> GateDecision:
        # a decision built by hand with promote=False and no status is a refusal
        if not self.promote and self.status in ("promote", "no_baseline"):
            self.status = "regressed"
        if self.promote and self.status in ("regressed", "hold"):
            raise ValueError(f"promote=True contradicts status {self.status!r}")
        return self


def compare_runs(
    new: dict[str, MetricResult],
    old: dict[str, MetricResult] | None,
    *,
    thresholds: GateThresholds | None = None,
    higher_is_better: dict[str, bool] | None = None,
    new_label: str = "new",
    old_label: str = "old",
    seed: int = 0,
) -> Comparison:
    """Compare every metric of `new` with `old`; `old=None` (or empty) means there is no baseline.

    Direction per metric: `higher_is_better[name]` if given, else lower-is-better when the name
    matches `thresholds.lower_is_better`, else the metric's `info.direction`.
    """
    thresholds = thresholds or GateThresholds()
    higher_is_better = higher_is_better or {}
    for label, run in (("new", new), ("old", old or {})):
        wrong = [k for k, v in run.items() if not isinstance(v, MetricResult)]
        if wrong:
            raise TypeError(f"{label} run: values must be MetricResult, got other types for {wrong}")
    if not old:
        rows = [_one_sided(m, new[m], "added", thresholds, higher_is_better) for m in sorted(new)]
        return Comparison(new_label=new_label, old_label=old_label, has_baseline=False, rows=rows)

    rows: list[MetricComparison] = []
    for name in sorted(set(new) | set(old)):
        if name not in old:
            rows.append(_one_sided(name, new[name], "added", thresholds, higher_is_better))
        elif name not in new:
            rows.append(_one_sided(name, old[name], "removed", thresholds, higher_is_better))
        else:
            rows.append(_compare_metric(name, new[name], old[name], thresholds, higher_is_better, seed))
    rows.sort(key=lambda r: (_VERDICT_ORDER.index(r.verdict), r.metric))
    return Comparison(new_label=new_label, old_label=old_label, rows=rows)


def gate_decision(comparison: Comparison | None, thresholds: GateThresholds | None = None) -> GateDecision:
    """Promote unless a gated metric regressed beyond its allowed drop (or vanished), or the team's
    inconclusive rule holds the promotion.

    Refuses also when a gated metric has no scored item in the new run, when a metric named in
    `gated_metrics` is missing from the new run, and when a `gated_metrics` pattern matches nothing
    (most likely a typo in the config). Constant judges never gate; they are listed in `flags`.
    """
    thresholds = thresholds or GateThresholds()
    if comparison is None or not comparison.has_baseline:
        return GateDecision(promote=True, reasons=["no production baseline"], status="no_baseline")
    reasons: list[str] = []
    held: list[str] = []
    flags: list[str] = []
    for r in comparison.rows:
        if r.constant_value is not None:
            flags.append(_constant_flag(r))
        if r.verdict == "not_comparable" and r.n_new > 0:
            flags.append(f"{r.metric}: {r.note}")
        if not thresholds.is_gated(r.metric):
            continue
        diff, low, high = r.decided_interval
        basis = " from human labels (prediction-powered)" if r.basis == "labelled" else ""
        if r.verdict == "regressed":
            worse = "dropped" if r.higher_is_better else "rose"
            reasons.append(
                f"{r.metric} regressed: {worse} by {_num(abs(diff or 0.0))} "
                f"({_num(r.old_score)} -> {_num(r.new_score)}, diff {_signed(diff)}, "
                f"95% CI{basis} [{_signed(low)}, {_signed(high)}], {r.method}, n={r.n_compared}), "
                f"beyond the allowed drop of {_num(r.allowed_drop)}"
            )
        elif r.verdict == "not_comparable" and r.n_new == 0 and r.n_old > 0:
            reasons.append(f"{r.metric}: no item could be scored in the new run ({r.note})")
        elif r.verdict == "removed" and thresholds.gated_metrics is not None:
            reasons.append(f"{r.metric} is gated but missing from the new run")
        elif r.verdict == "inconclusive" and _holds(r, thresholds):
            why = ("the team's rule holds every inconclusive gated metric" if thresholds.inconclusive == "hold"
                   else f"only {r.n_compared} items compared, fewer than min_n={thresholds.min_n}")
            held.append(f"{r.metric} inconclusive: diff {_signed(diff)}, 95% CI{basis} "
                        f"[{_signed(low)}, {_signed(high)}] neither rules out a drop beyond "
                        f"{_num(r.allowed_drop)} nor shows one; {why}")
    for pattern in thresholds.gated_metrics or []:
        if not any(matches(r.metric, pattern) for r in comparison.rows):
            reasons.append(f"gated metric {pattern!r} matches no metric in either run; "
                           f"check gated_metrics in the config (have {[r.metric for r in comparison.rows]})")
    if reasons:
        return GateDecision(promote=False, reasons=reasons + held, status="regressed", flags=flags)
    if held:
        advice = ("add questions to the evaluation set, or set gate.inconclusive: promote to accept "
                  "undecided metrics")
        return GateDecision(promote=False, reasons=[*held, advice], status="hold", flags=flags)
    counts = comparison.counts()
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    reason = f"no gated metric regressed vs {comparison.old_label} ({summary})"
    return GateDecision(promote=True, reasons=[reason], status="promote", flags=flags)


def _holds(row: MetricComparison, thresholds: GateThresholds) -> bool:
    if thresholds.inconclusive == "hold":
        return True
    if thresholds.inconclusive == "min_n":
        return row.n_compared < thresholds.min_n
    return False


def _constant_flag(row: MetricComparison) -> str:
    return (f"{row.metric}: the judge gave every item {_num(row.constant_value)} in this run; it measures "
            "nothing here and does not gate (check its prompt and threshold, or use a stronger judge model)"
            + (f"; {row.note}" if row.note else ""))


def is_higher_better(name: str, result: MetricResult | None = None, thresholds: GateThresholds | None = None,
                     overrides: dict[str, bool] | None = None) -> bool:
    """The direction of metric `name`: overrides, then `thresholds.lower_is_better`, then the metric's
    `info.direction` (higher is better when there is no result)."""
    hib = overrides or {}
    thresholds = thresholds or GateThresholds()
    if name in hib:
        return hib[name]
    if thresholds.is_lower_better(name):
        return False
    return True if result is None else result.info.higher_is_better


def judge_change(new: MetricResult, old: MetricResult) -> str | None:
    """How the judge of a metric differs between two runs (model, prompt version), else None."""
    if not (new.info.is_judge and old.info.is_judge):
        return None
    changes = [f"{label} {a} -> {b}" for label, a, b in (
        ("judge model", old.info.judge_model, new.info.judge_model),
        ("prompt", old.info.prompt_version, new.info.prompt_version)) if a and b and a != b]
    return ", ".join(changes) or None


def constant_value(result: MetricResult) -> float | None:
    """The one score every scored item has, when a judge gave at least 2 items the same score."""
    values = {float(it.score) for it in result.items if it.ok and it.score is not None}
    return values.pop() if result.info.is_judge and result.n_scored >= 2 and len(values) == 1 else None


def _one_sided(name: str, result: MetricResult, verdict: Verdict, thresholds: GateThresholds,
               hib: dict[str, bool]) -> MetricComparison:
    added = verdict == "added"
    return MetricComparison(
        metric=name,
        new_score=result.score if added else None,
        old_score=None if added else result.score,
        n_new=result.n_scored if added else 0,
        n_old=0 if added else result.n_scored,
        higher_is_better=is_higher_better(name, result, thresholds, hib),
        allowed_drop=thresholds.allowed_drop(name),
        gated=thresholds.is_gated(name),
        verdict=verdict,
        constant_value=constant_value(result) if added else None,
    )


def _scored(result: MetricResult) -> dict[str, float] | None:
    """item_id -> score of the scored items, or None when ids repeat (then items cannot pair)."""
    ids = [it.item_id for it in result.items if it.ok and it.score is not None]
    if len(set(ids)) != len(ids):
        return None
    return {it.item_id: float(it.score) for it in result.items if it.ok and it.score is not None}


def _add_note(row: MetricComparison, note: str) -> None:
    row.note = (row.note + "; " if row.note else "") + note


def _compare_metric(name: str, new: MetricResult, old: MetricResult, thresholds: GateThresholds,
                    hib: dict[str, bool], seed: int) -> MetricComparison:
    row = MetricComparison(
        metric=name, old_score=old.score, new_score=new.score, n_old=old.n_scored, n_new=new.n_scored,
        higher_is_better=is_higher_better(name, new, thresholds, hib),
        allowed_drop=thresholds.allowed_drop(name), gated=thresholds.is_gated(name), verdict="inconclusive",
        constant_value=constant_value(new),
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

    min_pairs = _MIN_PAIRED_FRACTION * min(len(new_values), len(old_values))
    if new_scores is not None and old_scores is not None and common and len(common) >= min_pairs:
        diff, low, high = bootstrap_paired_diff_ci(
            [new_scores[i] for i in common], [old_scores[i] for i in common], seed=seed)
        row.method, row.n_paired = "paired", len(common)
        enough = len(common) >= 2
    else:
        diff, low, high = bootstrap_unpaired_diff_ci(new_values, old_values, seed=seed)
        row.method = "unpaired"
        if not row.note:
            row.note = (f"only {len(common)} item ids in common: compared unpaired" if common
                        else "no item ids in common: compared unpaired")
        enough = min(len(new_values), len(old_values)) >= 2
    row.diff, row.diff_low, row.diff_high = diff, low, high
    _labelled_interval(row, new, old)
    if row.basis != "labelled" and (change := judge_change(new, old)):
        row.verdict, row.gated = "not_comparable", False
        _add_note(row, f"judged differently ({change}): the scores are on different bases; not gated")
        return row
    if row.constant_value is not None:
        row.verdict = "constant"
        row.gated = False
        before = "as before" if constant_value(old) is not None else "it varied in the old run"
        _add_note(row, f"constant judge ({_num(row.constant_value)} on every item; {before}): not gated")
        return row
    if row.basis != "labelled" and row.method == "paired" and len(common) == len(new_values) == len(old_values) and all(
        new_scores[i] == old_scores[i] for i in common
    ):
        # The same score on every item of both runs: no change to measure, whatever n is.
        row.verdict = "unchanged"
        _add_note(row, f"identical on all {len(common)} paired items")
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


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.1f}" if abs(x) >= 100 else f"{x:.3f}"


def _signed(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:+.1f}" if abs(x) >= 100 else f"{x:+.3f}"


def _md(text: str) -> str:
    """A Markdown table cell: HTML-escaped, pipes escaped, one line."""
    return html.escape(text, quote=False).replace("|", "\\|").replace("\n", " ")
