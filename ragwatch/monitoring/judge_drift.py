"""Judge drift apart from system drift: two windows' judges compared on the anchor, and the judged
metrics compared on levels corrected for each window's judge.

For each anchored judge (`ragwatch.monitoring.anchor`), the two windows' runs on the same anchor items give:
- **judge drift**: the judge's identity changed (model, prompt, options, calibration), or its mean
  verdict on the anchor moved (the paired difference's interval excludes 0); the figures: n, Cohen's
  kappa and balanced accuracy against the labels, before and after, and the level before and after
  with the paired difference's interval. A judge whose every anchor verdict is unchanged and whose
  identity is the same is unchanged: its raw means compare the windows as before.
- **the corrected level** of a window, where the judge changed in any way: the share of the window's
  answers the anchor's labellers would pass, from the share the window's judge passed `q` and that
  judge's error rates on the anchor (true positive rate `t`, false positive rate `f`):
  `p = (q - f) / (t - f)` (Rogan and Gladen's estimator, clipped to 0..1). It assumes the judge errs
  on the window's answers as on the anchor's (labels of your own answers make the best anchor). A
  judge that no longer tells the labels apart (`t <= f`) gives no level. The difference of two
  windows' corrected levels gets a percentile bootstrap interval that resamples each window's answers
  and the anchor's items of each label (paired across the two judges); resamples where a judge tells
  nothing apart count at both ends, so such a judge widens the interval rather than hides it. These
  rows enter the window's Holm step-down with the other metrics (`ragwatch.monitoring.drift.decide`).

Example:
    >>> rows, pairs = judge_drift(new_judges, old_judges, new_metrics, old_metrics)  # doctest: +SKIP
    >>> print(rows[0].text())  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, Field

from ragwatch.fmt import fmt_num, fmt_signed
from ragwatch.monitoring.anchor import AnchorRun, WindowJudges, corrected_metric, verdict_values
from ragwatch.monitoring.drift import DriftComparison, Pair, decide
from ragwatch.monitoring.settings import DriftSettings
from ragwatch.results import MetricResult
from ragwatch.statistics.intervals import paired_diff_interval

RESAMPLES = 4000
CORRECTED = "corrected"  # the suffix of a corrected level's row


class JudgeDriftRow(BaseModel):
    """One judge between two windows, on the anchor items both windows' judges scored."""

    metric: str
    source: str
    unit: str
    changes: list[str] = Field(default_factory=list)  # identity changes, e.g. "prompt a -> b"
    n: int = 0
    kappa_old: float | None = None
    kappa_new: float | None = None
    bacc_old: float | None = None
    bacc_new: float | None = None
    level_old: float | None = None
    level_new: float | None = None
    diff: float | None = None
    diff_low: float | None = None
    diff_high: float | None = None
    confidence: float = 0.95
    n_changed: int = 0  # anchor items whose verdict differs
    corrected: str | None = None  # the metric compared on corrected levels, when the judge changed at all

    @property
    def drift(self) -> bool:
        """Judge drift: a new judge, or a level change shown on the anchor."""
        shown = self.diff_low is not None and self.diff_high is not None and (self.diff_low > 0 or self.diff_high < 0)
        return bool(self.changes) or shown

    @property
    def changed(self) -> bool:
        """The judge changed in any way (a new identity or any anchor verdict): raw means do not compare."""
        return bool(self.changes) or self.n_changed > 0

    def text(self) -> str:
        what = (f"judge changed ({', '.join(self.changes)})" if self.changes else
                "judge drifted (same model, prompt and settings: a silent change)" if self.drift else
                f"no judge drift shown ({self.n_changed} anchor verdicts differ)" if self.n_changed else
                "judge unchanged")
        head = "judge drift" if self.drift else "judge"
        if not self.n:
            return f"{head}: {self.metric} {what}: no anchor item scored by both judges"
        return (f"{head}: {self.metric} {what}: on {self.n} anchor {self.unit} kappa {fmt_num(self.kappa_old)} -> "
                f"{fmt_num(self.kappa_new)}, balanced accuracy {fmt_num(self.bacc_old)} -> {fmt_num(self.bacc_new)}, "
                f"level {fmt_num(self.level_old)} -> {fmt_num(self.level_new)} ({fmt_signed(self.diff)} "
                f"[{fmt_signed(self.diff_low)}, {fmt_signed(self.diff_high)}] {self.confidence:.0%}, paired)")


def _paired(new: AnchorRun, old: AnchorRun) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(labels, old values, new values) on the anchor items both judges scored, in the old run's order."""
    new_by_id = dict(zip(new.ids, new.values, strict=True))
    rows = [(y, v, new_by_id.get(i)) for i, y, v in zip(old.ids, old.labels, old.values, strict=True)]
    rows = [r for r in rows if r[1] is not None and r[2] is not None]
    return (np.array([r[0] for r in rows], dtype=int), np.array([r[1] for r in rows], dtype=float),
            np.array([r[2] for r in rows], dtype=float))


def compare_runs(new: AnchorRun, old: AnchorRun, confidence: float = 0.95) -> JudgeDriftRow:
    """The two windows' judges of one metric on the anchor items both scored."""
    from ragwatch.statistics.agreement import balanced_accuracy, cohen_kappa

    y, a, b = _paired(new, old)
    row = JudgeDriftRow(metric=new.metric, source=new.source, unit=new.unit, changes=new.identity.changes(old.identity),
                        n=int(y.size), confidence=confidence)
    if y.size:
        row.kappa_old, row.kappa_new = (cohen_kappa(y.tolist(), (v >= 0.5).astype(int).tolist()) for v in (a, b))
        row.bacc_old, row.bacc_new = (balanced_accuracy(y.tolist(), (v >= 0.5).astype(int).tolist()) for v in (a, b))
        row.level_old, row.level_new = float(a.mean()), float(b.mean())
        row.diff, row.diff_low, row.diff_high = paired_diff_interval(b, a, confidence=confidence, scale=(0.0, 1.0))
        row.n_changed = int((a != b).sum())
    return row


def rogan_gladen(q: np.ndarray | float, t: np.ndarray | float, f: np.ndarray | float
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The corrected level `(q - f) / (t - f)` clipped to 0..1, and where it is defined: a judge whose
    true-positive rate `t` is not above its false-positive rate `f` tells nothing apart (level 0 there,
    `defined` False: never a number read as a level)."""
    q, t, f = np.asarray(q, dtype=float), np.asarray(t, dtype=float), np.asarray(f, dtype=float)
    defined = (t - f) > 0
    level = np.clip((q - f) / np.where(defined, t - f, 1.0), 0.0, 1.0)
    return np.where(defined, level, 0.0), defined


@dataclass
class CorrectedDiff:
    """The difference of two windows' corrected levels and its bootstrap distribution."""

    level_new: float | None
    level_old: float | None
    draws: np.ndarray  # resampled differences where both judges told the labels apart
    undefined: int = 0  # resamples where a judge told nothing apart

    @property
    def diff(self) -> float | None:
        if self.level_new is None or self.level_old is None:
            return None
        return self.level_new - self.level_old

    def interval(self, confidence: float) -> tuple[float, float, float]:
        """(diff, low, high): percentiles of the draws, the undefined ones counted at both ends (-1 and +1)."""
        alpha = 1 - confidence
        defined = np.sort(self.draws)
        low_side = np.concatenate([np.full(self.undefined, -1.0), defined])
        high_side = np.concatenate([defined, np.full(self.undefined, 1.0)])
        diff = self.diff if self.diff is not None else 0.0
        low = float(np.quantile(low_side, alpha / 2)) if low_side.size else -1.0
        high = float(np.quantile(high_side, 1 - alpha / 2)) if high_side.size else 1.0
        return diff, min(low, diff), max(high, diff)


def corrected_diff(window_new: np.ndarray, window_old: np.ndarray, labels: np.ndarray, anchor_new: np.ndarray,
                   anchor_old: np.ndarray, *, resamples: int = RESAMPLES, seed: int = 0) -> CorrectedDiff:
    """The corrected levels of two windows (verdict values of their answers, and their judges' values on
    the same anchor items with `labels`) and the bootstrap draws of their difference."""
    pos, neg = labels == 1, labels == 0

    def level(window: np.ndarray, anchor: np.ndarray) -> float | None:
        p, defined = rogan_gladen(window.mean(), anchor[pos].mean(), anchor[neg].mean())
        return float(p) if defined else None

    rng = np.random.default_rng(seed)
    draws, undefined = np.empty(0), 0
    if window_new.size and window_old.size and pos.any() and neg.any():
        def means(values: np.ndarray) -> np.ndarray:
            return values[rng.integers(0, values.size, (resamples, values.size))].mean(axis=1)

        q_new, q_old = means(window_new), means(window_old)
        ip = rng.integers(0, int(pos.sum()), (resamples, int(pos.sum())))
        ineg = rng.integers(0, int(neg.sum()), (resamples, int(neg.sum())))
        t_new, t_old = anchor_new[pos][ip].mean(axis=1), anchor_old[pos][ip].mean(axis=1)
        f_new, f_old = anchor_new[neg][ineg].mean(axis=1), anchor_old[neg][ineg].mean(axis=1)
        (p_new, ok_new), (p_old, ok_old) = rogan_gladen(q_new, t_new, f_new), rogan_gladen(q_old, t_old, f_old)
        both = ok_new & ok_old
        draws, undefined = (p_new - p_old)[both], int((~both).sum())
    return CorrectedDiff(level_new=level(window_new, anchor_new) if pos.any() and neg.any() else None,
                         level_old=level(window_old, anchor_old) if pos.any() and neg.any() else None,
                         draws=draws, undefined=undefined)


def _window_values(result: MetricResult) -> np.ndarray:
    return np.array([v for v in verdict_values(result) if v is not None], dtype=float)


@dataclass
class CorrectedPair:
    """A judged metric of two windows, compared on corrected levels: the pair `decide` reads, and the
    raw metrics it replaces in the comparison."""

    name: str
    pair: Pair
    levels: CorrectedDiff
    replaces: list[str]


def judge_drift(new: WindowJudges, old: WindowJudges, new_metrics: dict[str, MetricResult],
                old_metrics: dict[str, MetricResult], confidence: float = 0.95, seed: int = 0
                ) -> tuple[list[JudgeDriftRow], list[CorrectedPair]]:
    """Each anchored judge of both windows compared on the anchor, and, where it changed in any way, its
    metric compared on corrected levels (`CorrectedPair`, replacing its raw rows)."""
    rows: list[JudgeDriftRow] = []
    pairs: list[CorrectedPair] = []
    for metric in sorted(set(new.anchor) & set(old.anchor)):
        row = compare_runs(new.anchor[metric], old.anchor[metric], confidence)
        rows.append(row)
        if not row.changed or metric not in new_metrics or metric not in old_metrics:
            continue
        y, a, b = _paired(new.anchor[metric], old.anchor[metric])
        levels = corrected_diff(_window_values(new_metrics[metric]), _window_values(old_metrics[metric]), y, b, a,
                                seed=seed)
        name = corrected_metric(metric, new_metrics[metric])
        row.corrected = name
        info = new_metrics[metric].info
        pair = Pair(_window_values(new_metrics[metric]), _window_values(old_metrics[metric]), (0.0, 1.0),
                    info.higher_is_better, True, interval=levels.interval)
        replaces = [m for m in (metric, f"{metric}/pass") if m in new_metrics or m in old_metrics]
        pairs.append(CorrectedPair(name=name, pair=pair, levels=levels, replaces=replaces))
    return rows, pairs


def _values(result: MetricResult) -> np.ndarray:
    return np.asarray([float(it.score) for it in result.items if it.ok and it.score is not None], dtype=float)


def compare_corrected(new: dict[str, MetricResult], old: dict[str, MetricResult], corrected: list[CorrectedPair],
                      settings: DriftSettings, *, label: str, new_window: str, old_window: str) -> DriftComparison:
    """`compare_windows`, with each changed judge's raw rows replaced by its corrected level's row: one
    Holm step-down over all the window's metrics."""
    replaced = {m for c in corrected for m in c.replaces}
    names = sorted((set(new) & set(old)) - replaced)
    pairs = {name: Pair(_values(new[name]), _values(old[name]), new[name].info.scale, new[name].info.higher_is_better,
                        new[name].info.family == "judge") for name in names}
    pairs.update({c.name: c.pair for c in corrected})
    rows = decide(pairs, settings)
    by_name = {c.name: c for c in corrected}
    for row in rows:
        if row.metric in by_name:
            levels = by_name[row.metric].levels
            row.new_score, row.old_score = levels.level_new, levels.level_old
            row.method = "corrected level (the anchor's error rates of each window's judge), bootstrap; drift: Holm"
            row.answers_to_decide = None
            if levels.diff is None:
                row.diff = None
                row.note = ("no corrected level: a window's judge tells the anchor's labels apart no better than "
                            "chance, so its verdicts say nothing of the system")
            elif row.verdict == "undecided":
                row.note = ("corrected level: the interval carries the anchor's error rates too; a larger anchor "
                            "(drift.anchor.size) or more judged answers would narrow it")
            row.metric = f"{row.metric} {CORRECTED}"
        else:
            row.new_score, row.old_score = new[row.metric].score, old[row.metric].score
    return DriftComparison(label=label, new_window=new_window, old_window=old_window,
                           confidence=settings.confidence, rows=rows)
