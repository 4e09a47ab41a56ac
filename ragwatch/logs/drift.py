"""Drift between two windows of logged answers: an UNPAIRED comparison (different days have different
questions), metric by metric, with a verdict.

For each metric scored in both windows, the difference of means `new - old` gets a MOVER interval
(`ragwatch.statistics.intervals.unpaired_diff_interval`) at a Bonferroni-corrected level, so that the
chance of any false "drift" in a window comparison stays at most `1 - confidence`:
- "drift": the interval excludes 0 (the note says worse or better, from the metric's direction);
- "no drift": a change as large as the tolerance (a share of the metric's scale range) is ruled out
  at the same error rate: two one-sided tests (TOST), i.e. the interval at `1 - 2 alpha` lies within
  +-tolerance;
- "undecided": neither (too few answers to rule a change of that size in or out), or fewer than 2 items.

Example:
    >>> cmp = compare_windows(today.metrics, yesterday.metrics, DriftSettings(), label="vs previous window")
    >>> [(r.metric, r.verdict) for r in cmp.rows]  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ragwatch.fmt import fmt_num, fmt_signed
from ragwatch.logs.settings import DriftSettings
from ragwatch.results import MetricResult
from ragwatch.statistics.intervals import unpaired_diff_interval

DriftVerdict = Literal["drift", "no drift", "undecided"]


class DriftRow(BaseModel):
    metric: str
    new_score: float | None
    old_score: float | None
    diff: float | None = None
    diff_low: float | None = None
    diff_high: float | None = None
    n_new: int = 0
    n_old: int = 0
    method: str = "unpaired (MOVER), Bonferroni over the window's metrics"
    level: float = 0.95  # the confidence of this row's interval
    tolerance: float = 0.0  # in the metric's units
    verdict: DriftVerdict = "undecided"
    direction: Literal["worse", "better", ""] = ""
    note: str = ""


class DriftComparison(BaseModel):
    """One window against another (e.g. "vs previous window 2026-11-19")."""

    label: str
    new_window: str
    old_window: str
    confidence: float
    rows: list[DriftRow] = Field(default_factory=list)

    @property
    def drifted(self) -> list[str]:
        return [r.metric for r in self.rows if r.verdict == "drift"]

    def verdicts(self) -> dict[str, str]:
        return {r.metric: r.verdict for r in self.rows}

    def text(self) -> str:
        head = f"{self.label} ({self.new_window} vs {self.old_window}; unpaired, {self.confidence:.0%} for the window)"
        lines = [head, f"  {'metric':<32} {'new':>7} {'old':>7} {'diff [interval]':>26} {'n new/old':>10}  verdict"]
        for r in self.rows:
            interval = (f"{fmt_signed(r.diff)} [{fmt_signed(r.diff_low)}, {fmt_signed(r.diff_high)}]"
                        if r.diff is not None else "-")
            verdict = r.verdict + (f" ({r.direction})" if r.direction else "")
            lines.append(f"  {r.metric[:32]:<32} {fmt_num(r.new_score):>7} {fmt_num(r.old_score):>7} {interval:>26} "
                         f"{f'{r.n_new}/{r.n_old}':>10}  {verdict}")
        if not self.rows:
            lines.append("  no metric scored in both windows")
        return "\n".join(lines)


def _values(result: MetricResult) -> list[float]:
    return [float(it.score) for it in result.items if it.ok and it.score is not None]


def compare_windows(new: dict[str, MetricResult], old: dict[str, MetricResult], settings: DriftSettings | None = None,
                    *, label: str = "vs previous window", new_window: str = "new", old_window: str = "old"
                    ) -> DriftComparison:
    """Every metric of both windows, compared unpaired (see the module docstring for the verdicts)."""
    settings = settings or DriftSettings()
    names = sorted(set(new) & set(old))
    # Bonferroni over the metrics compared: a window's "any drift" stays a (1 - confidence) false alarm
    level = 1 - (1 - settings.confidence) / max(len(names), 1)
    rows = [_row(name, new[name], old[name], settings.tolerance, level) for name in names]
    return DriftComparison(label=label, new_window=new_window, old_window=old_window,
                           confidence=settings.confidence, rows=rows)


def _equivalent(a: list[float], b: list[float], scale: tuple[float, float] | None, tol: float, level: float) -> bool:
    """Two one-sided tests (Schuirmann's TOST) at the row's error rate: the difference is above -tol
    and below +tol, each one-sided at `1 - level`, i.e. the two-sided `1 - 2(1 - level)` interval
    lies within +-tol."""
    _, low, high = unpaired_diff_interval(a, b, confidence=1 - 2 * (1 - level), scale=scale)
    return -tol <= low and high <= tol


def _row(name: str, new: MetricResult, old: MetricResult, tolerance: float, level: float) -> DriftRow:
    a, b = _values(new), _values(old)
    scale = new.info.scale
    tol = tolerance * (scale[1] - scale[0]) if scale is not None else tolerance
    row = DriftRow(metric=name, new_score=new.score, old_score=old.score, n_new=len(a), n_old=len(b),
                   level=level, tolerance=tol)
    if len(a) < 2 or len(b) < 2:
        row.note = "fewer than 2 scored answers in a window: no interval"
        return row
    row.diff, row.diff_low, row.diff_high = unpaired_diff_interval(a, b, confidence=level, scale=scale)
    assert row.diff_low is not None and row.diff_high is not None
    if row.diff_low > 0 or row.diff_high < 0:
        row.verdict = "drift"
        up = row.diff_low > 0
        row.direction = "better" if up == new.info.higher_is_better else "worse"
    elif _equivalent(a, b, scale, tol, level):
        row.verdict = "no drift"
    else:
        row.note = f"the interval reaches past the tolerance +-{fmt_num(tol)}: more answers would decide"
    return row
