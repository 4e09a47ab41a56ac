"""One monitor run without ZenML: a window of logged answers evaluated as they were answered, and
compared (unpaired) with the window before it, with the reference window, and version by version.

Example:
    >>> windows = select_windows(read_log(config.logs).records, config.window)  # doctest: +SKIP
    >>> current = evaluate_window(windows.current, config)  # doctest: +SKIP
    >>> report = monitor_report(log, windows, current, evaluate_window(windows.previous, config),
    ...                         evaluate_window(windows.reference, config), config)  # doctest: +SKIP
    >>> print(report_text(report))  # doctest: +SKIP (ragwatch.monitoring.report)
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from ragwatch.artifacts import MetricGroup
from ragwatch.evalset.logged import log_samples
from ragwatch.judges import JudgesConfig
from ragwatch.logsources.records import BadRow, LogReadResult
from ragwatch.logsources.window import LogWindow
from ragwatch.monitoring.anchor import WindowJudges, identity_of, judge_anchor
from ragwatch.monitoring.drift import DriftComparison, DriftRow, compare_windows
from ragwatch.monitoring.evaluate import evaluate_logged
from ragwatch.monitoring.feedback import FeedbackChange, FeedbackSummary, attach_feedback, feedback_changes
from ragwatch.monitoring.judge_drift import JudgeDriftRow, compare_corrected, judge_drift
from ragwatch.monitoring.settings import MonitorConfig
from ragwatch.monitoring.windows import Windows
from ragwatch.results import MetricResult


class WindowEvaluation(BaseModel):
    """A window's sample and its figures: the metrics, what users said (the feedback summary), and the
    judges that judged it (each one's identity and its verdicts on the labelled anchor)."""

    window: LogWindow
    metrics: MetricGroup
    feedback: FeedbackSummary = Field(default_factory=FeedbackSummary)
    judges: WindowJudges = Field(default_factory=WindowJudges)

    @property
    def empty(self) -> bool:
        return not self.window.records


def evaluate_window(window: LogWindow, config: MonitorConfig, embedder: Any = None) -> WindowEvaluation:
    """The window's answers, measured as they were given (no generator call): the judges (and the
    feedback's level from them) on the sample, the metrics that need no LLM call (and the feedback's
    share) on every answer."""
    if not window.records:
        return WindowEvaluation(window=window, metrics=MetricGroup(group="logged", details={"generator_calls": 0}),
                                feedback=FeedbackSummary(window=window.name))
    samples = log_samples(window.records)
    group = evaluate_logged(samples, config.judges, config.match, embedder)
    if window.unsampled:  # the budget is about LLM calls: what costs none is measured on the whole window
        whole = evaluate_logged(log_samples(window.all_records), JudgesConfig(enabled=[]), config.match)
        group.metrics.update(whole.metrics)
        group.details["n_answers_costless"] = len(window.all_records)
    every = log_samples(window.all_records) if window.unsampled else samples
    metrics, feedback = attach_feedback(group.metrics, samples, config.feedback, window_samples=every,
                                        window=window.name, confidence=config.drift.confidence)
    return WindowEvaluation(window=window, metrics=group.model_copy(update={"metrics": metrics}), feedback=feedback,
                            judges=window_judges(metrics, config))


def window_judges(metrics: dict[str, MetricResult], config: MonitorConfig) -> WindowJudges:
    """The identity of each judged metric's judge and, with the same judges, their runs on the anchor."""
    if not config.judges.enabled:
        return WindowJudges()
    identities = {name: identity_of(config.judges, result) for name, result in metrics.items()
                  if result.info.is_judge and "/" not in name}
    try:
        anchor = judge_anchor(config.judges, config.drift.anchor)
    except FileNotFoundError as exc:  # e.g. a remote orchestrator's image without data/: the window still counts
        return WindowJudges(identities=identities, unavailable=str(exc))
    identities.update({name: run.identity for name, run in anchor.items()})
    return WindowJudges(identities=identities, anchor=anchor)


def subset(metrics: dict[str, MetricResult], ids: set[str]) -> dict[str, MetricResult]:
    """The metrics over the items `ids` only (their interval recomputed on those items)."""
    out = {}
    for name, result in metrics.items():
        items = [it for it in result.items if it.item_id in ids]
        if items:
            out[name] = MetricResult.from_items(name, items, info=result.info, details=dict(result.details))
    return out


class JudgeComparison(BaseModel):
    """The judges of two windows: each anchored judge on the anchor, and the judges that changed with no
    anchor to correct them (metric -> what changed)."""

    label: str
    new_window: str
    old_window: str
    rows: list[JudgeDriftRow] = Field(default_factory=list)
    unanchored: dict[str, str] = Field(default_factory=dict)
    unavailable: list[str] = Field(default_factory=list)  # "<window>: why its anchor was not judged"

    @property
    def drift(self) -> list[str]:
        return [r.metric for r in self.rows if r.drift] + list(self.unanchored)


class MonitorReport(BaseModel):
    """What a monitor run found: the log's outcomes, the window's figures, and its drift comparisons."""

    source: str
    counts: dict[str, int]
    bad: list[BadRow] = Field(default_factory=list)  # the first bad rows (all are counted)
    windows: dict[str, str] = Field(default_factory=dict)  # label -> describe()
    metrics: dict[str, dict[str, Any]] = Field(default_factory=dict)  # the current window's summary
    unavailable: dict[str, str] = Field(default_factory=dict)
    comparisons: list[DriftComparison] = Field(default_factory=list)
    feedback: FeedbackSummary = Field(default_factory=FeedbackSummary)  # the current window's
    feedback_windows: dict[str, FeedbackSummary] = Field(default_factory=dict)  # label -> each distinct window's
    feedback_changes: list[FeedbackChange] = Field(default_factory=list)  # the current window's vs the earlier ones
    judge_drift: list[JudgeComparison] = Field(default_factory=list)  # each comparison's judges, on the anchor
    usage: dict[str, dict[str, Any]] = Field(default_factory=dict)  # role -> calls, tokens, cost (this run)
    annotations_written: int = 0  # verdicts written back to the trace source (Phoenix span annotations)

    @property
    def worse(self) -> list[str]:
        """"<comparison>: <metric>" for every drift for the worse."""
        return [f"{c.label}: {metric}" for c in self.comparisons for metric in c.verdict.worse]

    def verdict_line(self) -> str:
        if not self.comparisons:
            return "no earlier window to compare with"
        worse = self.worse
        line = f"DRIFT for the worse: {', '.join(worse)}" if worse else "no drift for the worse"
        judges = [f"{c.label}: {m}" for c in self.judge_drift for m in c.drift]
        return line + (f"; judge drift (the judge, not the system): {', '.join(judges)}" if judges else "")

    def metadata(self) -> dict[str, Any]:
        """Stable keys, the same in every run: `monitor` (window and counts), `drift_vs_previous`,
        `drift_vs_reference` (metric -> diff, interval, verdict), `feedback` (per kind: the current
        window's share, its changes; per metric: the prediction-powered level; per window: the shares)."""
        out: dict[str, Any] = {"monitor": {"verdict": self.verdict_line(), "log_counts": dict(self.counts),
                                           "windows": dict(self.windows),
                                           "metrics": {k: {f: v for f, v in s.items() if v is not None}
                                                       for k, s in self.metrics.items()},
                                           "usage": self.usage}}
        for comparison in self.comparisons:
            key = {"vs previous window": "drift_vs_previous", "vs reference window": "drift_vs_reference"}.get(
                comparison.label, f"drift_{comparison.label.replace(' ', '_')}")
            out[key] = {r.metric: {k: v for k, v in {"diff": r.diff, "diff_low": r.diff_low, "diff_high": r.diff_high,
                                                     "verdict": r.verdict, "n_new": r.n_new, "n_old": r.n_old,
                                                     "level": r.level, "method": _method(r)}.items()
                                         if v is not None}
                        for r in comparison.rows}
        out["feedback"] = feedback_metadata(self)
        out["judge_drift"] = judge_drift_metadata(self)
        return out


def _method(row: DriftRow) -> str:
    return "corrected level" if row.method.startswith("corrected") else "unpaired"


def judge_drift_metadata(report: MonitorReport) -> dict[str, Any]:
    """The `judge_drift` metadata: per comparison, per judge: drift or not, what changed, and the anchor's
    figures (n, kappa, balanced accuracy and level before/after, the paired difference's interval)."""
    out: dict[str, Any] = {}
    for comparison in report.judge_drift:
        key = comparison.label.replace(" window", "").replace(" ", "_")  # vs_previous
        out[key] = {r.metric: {k: v for k, v in {
            "judge_drift": r.drift, "changes": ", ".join(r.changes) or "none", "n_anchor": r.n,
            "kappa_old": r.kappa_old, "kappa_new": r.kappa_new, "balanced_accuracy_old": r.bacc_old,
            "balanced_accuracy_new": r.bacc_new, "level_old": r.level_old, "level_new": r.level_new,
            "level_diff": r.diff, "level_diff_low": r.diff_low, "level_diff_high": r.diff_high,
            "anchor_verdicts_changed": r.n_changed, "corrected_metric": r.corrected or "none",
            "anchor": r.source}.items() if v is not None} for r in comparison.rows}
        out[key].update({m: {"judge_drift": True, "changes": what, "n_anchor": 0, "corrected_metric": "none"}
                         for m, what in comparison.unanchored.items()})
    return out


def feedback_metadata(report: MonitorReport) -> dict[str, Any]:
    """The `feedback` metadata: the current window's shares and changes, its levels, each window's shares."""
    shares: dict[str, Any] = {}
    for f in report.feedback.figures:
        shares[f.kind] = {"score": f.score, "ci_low": f.ci_low, "ci_high": f.ci_high, "n": f.n,
                          "labels": f.labels or "none"}
        for c in report.feedback_changes:
            if c.kind == f.kind:
                key = "change_" + c.label.replace(" window", "").replace(" ", "_")  # change_vs_previous
                shares[f.kind][key] = {"diff": c.diff, "ci_low": c.ci_low, "ci_high": c.ci_high,
                                       "n_new": c.n_new, "n_old": c.n_old, "method": "unpaired"}
    levels = {lv.metric: {"score": lv.score, "ci_low": lv.ci_low, "ci_high": lv.ci_high, "n_labels": lv.n_labels,
                          "n_judged": lv.n_judged, "judge_mean": lv.judge_mean, "lambda": lv.lam,
                          "method": "ppi++ from user feedback"} for lv in report.feedback.levels}
    windows = {s.window: {f.kind: {"score": f.score, "ci_low": f.ci_low, "ci_high": f.ci_high, "n": f.n}
                          for f in s.figures} for s in report.feedback_windows.values()}
    return {"shares": shares, "levels": levels, "windows": windows}


def _usage(evaluations: list[WindowEvaluation]) -> dict[str, dict[str, Any]]:
    """The judge calls of each distinct window once (the reference may be the previous window)."""
    distinct = {(e.window.start, e.window.end): e for e in evaluations}
    judge = [e.metrics.details.get("usage", {}) for e in distinct.values()]
    runs = [run for e in distinct.values() for run in e.judges.anchor.values()]
    return {
        "generator": {"calls": 0, "note": "logged answers: nothing is generated"},
        "judge": {key: sum(u.get(key, 0) for u in judge) for key in
                  ("calls", "cache_hits", "prompt_tokens", "completion_tokens", "cost_usd")},
        "anchor": {"calls": sum(r.calls for r in runs), "cache_hits": sum(r.cache_hits for r in runs),
                   "items": sum(len(r.ids) for r in runs)},
    }


def monitor_report(log: LogReadResult, windows: Windows, current: WindowEvaluation, previous: WindowEvaluation,
                   reference: WindowEvaluation, config: MonitorConfig) -> MonitorReport:
    """The current window against the previous and the reference window, and its versions against
    each other (the first version seen is the baseline)."""
    report = MonitorReport(source=log.source, counts=log.counts, bad=log.bad[:20],
                           metrics=current.metrics.summary(), unavailable=current.metrics.unavailable,
                           feedback=current.feedback, usage=_usage([current, previous, reference]))
    # the labels from `windows`: a window's evaluation may come from the step cache, where it was "current"
    for label, window in (("current", windows.current), ("previous", windows.previous),
                          ("reference", windows.reference)):
        report.windows[label] = window.describe()
    for label, evaluation in (("current", current), ("previous", previous), ("reference", reference)):
        if not evaluation.empty and all(s.window != evaluation.feedback.window
                                        for s in report.feedback_windows.values()):
            report.feedback_windows[label] = evaluation.feedback
    for label, old in (("vs previous window", previous), ("vs reference window", reference)):
        same = old.window.start == current.window.start
        if old.empty or current.empty or (label == "vs reference window" and (
                same or old.window.start == previous.window.start)):
            continue  # nothing to compare, or the reference is this window or the previous one
        comparison, judges = _compare(current, old, config, label)
        report.comparisons.append(comparison)
        report.judge_drift.append(judges)
        report.feedback_changes += feedback_changes(current.feedback, old.feedback, label, config.drift.confidence)
    if config.window.by_system_version:
        report.comparisons += version_comparisons(current, config)
    return report


def _unanchored(current: WindowEvaluation, old: WindowEvaluation) -> dict[str, str]:
    """Judged metrics whose judge changed between the windows with no anchor run in both."""
    new_ids, old_ids = current.judges.identities, old.judges.identities
    out = {}
    for metric in sorted(set(new_ids) & set(old_ids)):
        if metric in current.judges.anchor and metric in old.judges.anchor:
            continue
        if changes := new_ids[metric].changes(old_ids[metric]):
            out[metric] = ", ".join(changes)
    return out


def _compare(current: WindowEvaluation, old: WindowEvaluation, config: MonitorConfig, label: str
             ) -> tuple[DriftComparison, JudgeComparison]:
    """The windows' metrics compared, and their judges: a judge that changed is compared on corrected levels
    (one Holm over all the metrics); a changed judge without an anchor reads "undecided" (two judges' raw means)."""
    new, name = current.metrics.metrics, current.window.name
    rows, corrected = judge_drift(current.judges, old.judges, new, old.metrics.metrics, config.drift.confidence,
                                  seed=config.drift.anchor.seed)
    if corrected:
        comparison = compare_corrected(new, old.metrics.metrics, corrected, config.drift, label=label,
                                       new_window=name, old_window=old.window.name)
    else:
        comparison = compare_windows(new, old.metrics.metrics, config.drift, label=label, new_window=name,
                                     old_window=old.window.name)
    unanchored = _unanchored(current, old)
    for row in comparison.rows:
        base = row.metric.split("/")[0]
        if base in unanchored:
            row.verdict, row.direction, row.answers_to_decide = "undecided", "", None
            row.note = (f"the judge changed ({unanchored[base]}) and no anchor labels this metric: the raw means "
                        "of two judges do not measure the system (drift.anchor.path: labels of your own)")
    missing = [f"{e.window.name}: {e.judges.unavailable}" for e in (current, old) if e.judges.unavailable]
    return comparison, JudgeComparison(label=label, new_window=name, old_window=old.window.name, rows=rows,
                                       unanchored=unanchored, unavailable=missing)


def version_comparisons(current: WindowEvaluation, config: MonitorConfig) -> list[DriftComparison]:
    """Each system version of the window against the first one seen in it (unpaired: they answered
    different questions)."""
    order: list[str] = []
    ids: dict[str, set[str]] = {}
    for record in current.window.all_records:  # a metric's own items pick its answers (sample or all)
        version = record.system_version or "unversioned"
        if version not in ids:
            order.append(version)
        ids.setdefault(version, set()).add(record.trace_id)
    if len(order) < 2:
        return []
    base = order[0]
    baseline = subset(current.metrics.metrics, ids[base])
    return [compare_windows(subset(current.metrics.metrics, ids[v]), baseline, config.drift,
                            label=f"version {v} vs {base}", new_window=f"{v} (n={len(ids[v])})",
                            old_window=f"{base} (n={len(ids[base])})") for v in order[1:]]
