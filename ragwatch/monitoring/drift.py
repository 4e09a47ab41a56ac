"""Drift between two windows of logged answers: an UNPAIRED comparison (different days have different
questions), metric by metric, with a verdict.

For each metric scored in both windows, the difference of means `new - old` gets a MOVER interval
(`ragwatch.statistics.intervals.unpaired_diff_interval`). With `alpha = 1 - confidence`:
- "drift": the change is shown: the interval excludes 0, Holm's step-down over the window's metrics
  (the first step at `1 - alpha / k` for k metrics, then `1 - alpha / (k - 1)` for the rest, ...), so
  the chance of ANY false "drift" in a window comparison stays at most `alpha`. The note says worse or
  better from the metric's direction, and when the change shown is within the tolerance.
- "no drift": a change as large as the tolerance (a share of the metric's scale range) is ruled out
  by two one-sided tests (TOST) at `alpha` each: the `1 - 2 alpha` interval lies within +-tolerance.
  No multiplicity correction: a metric's "no drift" is wrong at most `alpha` of the time, and so is
  "no drift on every metric" (an intersection-union test: it is wrong only if some metric's is).
- "undecided": neither; the note says how many answers per window would decide
  (`ragwatch.monitoring.drift_size`: always more than the windows already hold), or that more answers would
  not (the difference seen is within the noise at any size), or fewer than 2 scored answers in a window.

Example:
    >>> cmp = compare_windows(today.metrics, yesterday.metrics, DriftSettings(), label="vs previous window")
    >>> [(r.metric, r.verdict) for r in cmp.rows]  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from ragwatch.fmt import fmt_num, fmt_signed
from ragwatch.monitoring.drift_size import MAX_ANSWERS, Seen, answers_to_decide, round_up
from ragwatch.monitoring.settings import DriftSettings
from ragwatch.results import MetricResult
from ragwatch.statistics.intervals import unpaired_diff_interval

DriftVerdict = Literal["drift", "no drift", "undecided"]


class DriftRow(BaseModel):
    metric: str
    new_score: float | None
    old_score: float | None
    diff: float | None = None
    diff_low: float | None = None  # the interval the verdict is read from, at `level`: Holm's for "drift",
    diff_high: float | None = None  # the 1 - 2 alpha one (two one-sided tests) for "no drift" and "undecided"
    n_new: int = 0
    n_old: int = 0
    method: str = "unpaired (MOVER); drift: Holm over the window's metrics; no drift: TOST per metric"
    level: float = 0.95  # the confidence of this row's interval
    tolerance: float = 0.0  # in the metric's units
    verdict: DriftVerdict = "undecided"
    direction: Literal["worse", "better", ""] = ""
    answers_to_decide: int | None = None  # undecided: answers per window that would decide (~, 80% of the time)
    judged: bool = False  # an LLM judge's metric: scored on the window's sample (window.budget), not all of it
    note: str = ""


class WindowVerdict(BaseModel):
    """A window comparison read as a whole: `verdict` is "drift" when any metric drifted (either way),
    "no drift" when every metric was shown not to, else "undecided" (also with no metric); `drift` the
    metrics that drifted, `worse` those that drifted for the worse."""

    verdict: DriftVerdict
    drift: list[str] = Field(default_factory=list)
    worse: list[str] = Field(default_factory=list)


def window_verdict(rows: Sequence[DriftRow]) -> WindowVerdict:
    """The one reading of a comparison's rows as a window's verdict: the monitor's exit code and verdict
    line, the Phoenix annotations and `DriftComparison.drifted` all read it."""
    drift = [r.metric for r in rows if r.verdict == "drift"]
    verdict: DriftVerdict = "drift" if drift else "no drift" if rows and all(
        r.verdict == "no drift" for r in rows) else "undecided"
    return WindowVerdict(verdict=verdict, drift=drift,
                         worse=[r.metric for r in rows if r.verdict == "drift" and r.direction == "worse"])


class DriftComparison(BaseModel):
    """One window against another (e.g. "vs previous window 2026-11-19")."""

    label: str
    new_window: str
    old_window: str
    confidence: float
    rows: list[DriftRow] = Field(default_factory=list)

    @property
    def verdict(self) -> WindowVerdict:
        """The comparison read as a whole (`window_verdict`)."""
        return window_verdict(self.rows)

    @property
    def drifted(self) -> list[str]:
        return self.verdict.drift

    def verdicts(self) -> dict[str, str]:
        return {r.metric: r.verdict for r in self.rows}

    def text(self) -> str:
        alpha = 1 - self.confidence
        head = (f"{self.label} ({self.new_window} vs {self.old_window}; unpaired; drift: {self.confidence:.0%} for the "
                f"window (Holm), no drift: the {1 - 2 * alpha:.0%} interval within the tolerance)")
        lines = [head, f"  {'metric':<32} {'new':>7} {'old':>7} {'diff [interval]':>26} {'level':>6} {'n new/old':>10}"
                       "  verdict"]
        for r in self.rows:
            interval = (f"{fmt_signed(r.diff)} [{fmt_signed(r.diff_low)}, {fmt_signed(r.diff_high)}]"
                        if r.diff is not None else "-")
            verdict = r.verdict + (f" ({r.direction})" if r.direction else "")
            if r.verdict == "undecided" and r.method.startswith("corrected"):
                verdict += ": the anchor's error rates widen it (a larger drift.anchor.size narrows it)"
            elif r.verdict == "undecided" and r.answers_to_decide:
                verdict += f": {_decide_phrase(r)} would decide"
            elif r.verdict == "undecided" and r.diff is not None:
                verdict += ": more answers would not decide (within the noise)"
            level = f"{r.level:.1%}" if r.diff is not None else "-"
            lines.append(f"  {r.metric[:32]:<32} {fmt_num(r.new_score):>7} {fmt_num(r.old_score):>7} {interval:>26} "
                         f"{level:>6} {f'{r.n_new}/{r.n_old}':>10}  {verdict}")
        if not self.rows:
            lines.append("  no metric scored in both windows")
        return "\n".join(lines)


@dataclass(frozen=True)
class Pair:
    """One metric's scores in the two windows, as the decision rule sees them."""

    new: np.ndarray
    old: np.ndarray
    scale: tuple[float, float] | None
    higher_is_better: bool = True
    judged: bool = False
    # another estimator's (diff, low, high) at a confidence (a corrected level, ragwatch.monitoring.judge_drift)
    interval: Callable[[float], tuple[float, float, float]] | None = None

    def diff_interval(self, confidence: float) -> tuple[float, float, float]:
        if self.interval is not None:
            return self.interval(confidence)
        return unpaired_diff_interval(self.new, self.old, confidence=confidence, scale=self.scale)


def _decide_phrase(row: DriftRow) -> str:
    if row.judged:
        return f"~{row.answers_to_decide:,} judged answers per window (window.budget)"
    return f"a window of ~{row.answers_to_decide:,} answers"


def _values(result: MetricResult) -> np.ndarray:
    return np.asarray([float(it.score) for it in result.items if it.ok and it.score is not None], dtype=float)


def compare_windows(new: dict[str, MetricResult], old: dict[str, MetricResult], settings: DriftSettings | None = None,
                    *, label: str = "vs previous window", new_window: str = "new", old_window: str = "old"
                    ) -> DriftComparison:
    """Every metric of both windows, compared unpaired (see the module docstring for the verdicts)."""
    settings = settings or DriftSettings()
    names = sorted(set(new) & set(old))
    pairs = {name: Pair(_values(new[name]), _values(old[name]), new[name].info.scale,
                        new[name].info.higher_is_better, new[name].info.family == "judge") for name in names}
    rows = decide(pairs, settings)
    for row in rows:
        row.new_score, row.old_score = new[row.metric].score, old[row.metric].score
    return DriftComparison(label=label, new_window=new_window, old_window=old_window,
                           confidence=settings.confidence, rows=rows)


def decide(pairs: dict[str, Pair], settings: DriftSettings) -> list[DriftRow]:
    """The verdict of every metric (the decision rule of the module docstring), in the order given."""
    alpha = 1 - settings.confidence
    rows: dict[str, DriftRow] = {}
    for name, pair in pairs.items():
        scale = pair.scale
        tol = settings.tolerance * (scale[1] - scale[0]) if scale is not None else settings.tolerance
        rows[name] = DriftRow(metric=name, new_score=None, old_score=None, n_new=pair.new.size, n_old=pair.old.size,
                              tolerance=tol, judged=pair.judged)
    pending = [name for name, pair in pairs.items() if pair.new.size >= 2 and pair.old.size >= 2]
    for name in set(pairs) - set(pending):
        rows[name].note = "fewer than 2 scored answers in a window: no interval"
    k = len(pending)
    shown = _holm(pairs, rows, pending, alpha)
    for name in pending:
        pair, row = pairs[name], rows[name]
        _, low, high = pair.diff_interval(1 - 2 * alpha)
        equivalent = -row.tolerance <= low and high <= row.tolerance  # TOST: each one-sided test at alpha
        if name not in shown:  # print the interval the verdict is read from
            row.diff_low, row.diff_high, row.level = low, high, 1 - 2 * alpha
        if name in shown:
            row.verdict = "drift"
            up = (row.diff_low or 0.0) > 0
            row.direction = "better" if up == pair.higher_is_better else "worse"
            if equivalent:
                row.note = f"a change shown, but within the tolerance +-{fmt_num(row.tolerance)}"
        elif equivalent:
            row.verdict = "no drift"
        else:
            row.answers_to_decide = _to_decide(pair, row, alpha, alpha / max(k, 1))
            row.note = (f"the interval reaches past the tolerance +-{fmt_num(row.tolerance)}: "
                        + (f"{_decide_phrase(row)} would decide (80% of the time, at the difference and spread seen)"
                           if row.answers_to_decide else _no_size(row)))
    return list(rows.values())


def _holm(pairs: dict[str, Pair], rows: dict[str, DriftRow], pending: list[str], alpha: float) -> set[str]:
    """Holm's step-down on intervals: at each step every remaining metric's interval at `1 - alpha / m`
    (m remaining); those that exclude 0 are shown and leave, until a step shows none. Each row keeps the
    interval of its last step, so its verdict reads off the interval printed beside it."""
    shown: set[str] = set()
    remaining = list(pending)
    while remaining:
        level = 1 - alpha / len(remaining)
        step = []
        for name in remaining:
            row, pair = rows[name], pairs[name]
            row.diff, row.diff_low, row.diff_high = pair.diff_interval(level)
            row.level = level
            if row.diff_low > 0 or row.diff_high < 0:
                step.append(name)
        if not step:
            break
        shown.update(step)
        remaining = [name for name in remaining if name not in step]
    return shown


def _to_decide(pair: Pair, row: DriftRow, alpha: float, alpha_drift: float) -> int | None:
    """The answers per window that would decide, from the intervals these windows gave (never fewer
    than they hold); None when no size would."""
    diff = row.diff or 0.0
    _, low, high = pair.diff_interval(1 - 2 * alpha)
    _, d_low, d_high = pair.diff_interval(1 - alpha_drift)
    seen = Seen(n_new=pair.new.size, n_old=pair.old.size,
                half_drift=diff - d_low if diff >= 0 else d_high - diff,  # the side that would have to pass 0
                half_same=max(diff - low, high - diff))
    n = answers_to_decide(var_new=float(pair.new.var(ddof=1)), var_old=float(pair.old.var(ddof=1)), diff=diff,
                          tolerance=row.tolerance, alpha=alpha, alpha_drift=alpha_drift, seen=seen)
    return round_up(n) if n else None


def _no_size(row: DriftRow) -> str:
    """Why more answers would not decide: the difference is within the noise at any window size."""
    return (f"the difference seen ({fmt_signed(row.diff)}) is within the noise: more answers would not decide "
            f"(no window up to {MAX_ANSWERS:,} answers would)")
