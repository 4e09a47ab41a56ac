"""Feedback per window: the share with its interval and n over every answer of the window, its unpaired
change against earlier windows, and the prediction-powered level from the judge and the feedback
(its coverage by simulation, `ragwatch.simulation.feedback` as the benchmark runs it, fewer repetitions)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from ragwatch.evalset.logged import log_samples
from ragwatch.logsources.records import Feedback, LogContext, LogReadResult, LogRecord
from ragwatch.monitoring.feedback import (
    SELF_SELECTED,
    FeedbackSummary,
    attach_feedback,
    feedback_changes,
    label_noise,
)
from ragwatch.monitoring.monitor import evaluate_window, monitor_report
from ragwatch.monitoring.report import report_html, report_text
from ragwatch.monitoring.settings import FeedbackSettings, MonitorConfig
from ragwatch.monitoring.windows import select_windows
from ragwatch.results import ItemScore, MetricInfo, MetricResult
from ragwatch.simulation.feedback import SETTINGS, Setting, coverage
from ragwatch.statistics.intervals import mean_interval, unpaired_diff_interval
from ragwatch.statistics.ppi import ppi_mean

DAY = datetime(2026, 11, 20, tzinfo=UTC)


def _records(day: datetime, thumbs: list[int | None], prefix: str) -> list[LogRecord]:
    return [LogRecord(trace_id=f"{prefix}{i}", question=f"q{i}?", answer="Run zenml stack register.",
                      contexts=[LogContext(text="Register a stack with zenml stack register.")],
                      timestamp=day + timedelta(minutes=10 * i),
                      feedback=None if t is None else Feedback(kind="thumbs", value=float(t)))
            for i, t in enumerate(thumbs)]


def _judged(ids: list[str], scores: list[float]) -> dict[str, MetricResult]:
    items = [ItemScore(item_id=i, score=s) for i, s in zip(ids, scores, strict=True)]
    return {"answer_relevance": MetricResult.from_items("answer_relevance", items, info=MetricInfo(scale=(1.0, 5.0)))}


def test_share_is_over_the_whole_window_and_the_level_over_the_judged_answers():
    thumbs = [1, 0, 1, None, 1, None, 1, 0, None, 1] * 2  # 14 thumbs, 10 up, on 20 answers
    samples = log_samples(_records(DAY, thumbs, "a"))
    judged = samples[:10]  # the judges' sample: 7 thumbs among them
    scores = [5, 2, 4, 3, 5, 1, 4, 2, 3, 5]
    metrics, summary = attach_feedback(_judged([s.id for s in judged], scores), judged, FeedbackSettings(),
                                       window_samples=samples, window="2026-11-20")
    figure = summary.figures[0]
    values = [float(t) for t in thumbs if t is not None]
    expected = mean_interval(values, scale=(0.0, 1.0))
    assert (figure.n, figure.score, figure.ci_low, figure.ci_high) == (14, expected.mean, expected.low, expected.high)
    assert summary.n_answers == 20 and summary.n_judged == 10 and figure.labels == "answer_relevance/pass"
    assert figure.note == SELF_SELECTED and "only some users click" in figure.note
    level = summary.levels[0]
    passed = [float(s >= 4) for s in scores]
    rated = [i for i, t in enumerate(thumbs[:10]) if t is not None]
    y = [float(thumbs[i]) for i in rated]
    noise = label_noise(np.array(y), np.array([passed[i] for i in rated]))
    est = ppi_mean(y, [passed[i] for i in rated], passed, bounds=(0.0, 1.0), noise=noise)
    assert level.metric == "answer_relevance/pass" and level.n_labels == 7 and level.n_judged == 10
    assert (level.score, level.ci_low, level.ci_high, level.lam) == (est.estimate, est.ci_low, est.ci_high, est.lam)
    assert level.judge_mean == metrics["answer_relevance/pass"].score == 0.5
    assert level.judge_mean_rated == pytest.approx(np.mean([passed[i] for i in rated]))
    assert metrics["answer_relevance/pass"].labelled is None  # beside the metrics, never their careful labels
    assert "n labels=7, n judged=10" in summary.text() and "raw judge mean 0.500" in summary.text()


def test_too_few_rated_answers_among_the_judged_say_why_and_no_judge_no_level():
    samples = log_samples(_records(DAY, [1, None, None, 0], "b"))
    _, summary = attach_feedback(_judged([s.id for s in samples[:2]], [5, 3]), samples[:2], FeedbackSettings(),
                                 window_samples=samples)
    assert not summary.levels and "1 of the judged answers have thumbs" in summary.skipped["answer_relevance/pass"]
    _, alone = attach_feedback({}, samples, FeedbackSettings())
    assert not alone.levels and alone.figures[0].labels is None and "not measured" in alone.figures[0].note


def test_changes_are_unpaired_differences_against_each_earlier_window():
    new = attach_feedback({}, log_samples(_records(DAY, [1, 0, 0, 0, 1], "n")), FeedbackSettings(),
                          window="new")[1]
    old = attach_feedback({}, log_samples(_records(DAY, [1, 1, 1, 1, 0, 1], "o")), FeedbackSettings(),
                          window="old")[1]
    (change,) = feedback_changes(new, old, "vs previous window")
    diff, low, high = unpaired_diff_interval([1, 0, 0, 0, 1], [1, 1, 1, 1, 0, 1], scale=(0.0, 1.0))
    assert (change.diff, change.ci_low, change.ci_high) == (diff, low, high)
    assert (change.n_new, change.n_old, change.old_window) == (5, 6, "old")
    assert change.diff == pytest.approx(0.4 - 5 / 6) and not change.shown and "no change shown" in change.text()
    many = attach_feedback({}, log_samples(_records(DAY, [0] * 40, "m")), FeedbackSettings(), window="m")[1]
    sure = attach_feedback({}, log_samples(_records(DAY, [1] * 40, "s")), FeedbackSettings(), window="s")[1]
    assert feedback_changes(many, sure, "vs reference window")[0].text().endswith("down")
    assert feedback_changes(new, FeedbackSummary(window="empty"), "vs previous window") == []


def test_monitor_report_prints_each_window_and_the_changes(tmp_path):
    days = [_records(DAY - timedelta(days=2), [1, 1, None, 1, 0, 1, None, 1], "d0"),
            _records(DAY - timedelta(days=1), [1, None, 1, 1, None, 1, 1, 1], "d1"),
            _records(DAY, [0, None, 0, 1, 0, None, 0, 1], "d2")]
    log = LogReadResult(source="test", format="jsonl", records=[r for d in days for r in d])
    config = MonitorConfig(logs={"path": str(tmp_path / "x.jsonl")})
    windows = select_windows(log.records, config.window)
    evaluations = [evaluate_window(w, config) for w in (windows.current, windows.previous, windows.reference)]
    report = monitor_report(log, windows, *evaluations, config)
    assert list(report.feedback_windows) == ["current", "previous", "reference"]
    assert [(c.label, c.old_window) for c in report.feedback_changes] == [
        ("vs previous window", "2026-11-19"), ("vs reference window", "2026-11-18")]
    text = report_text(report)
    assert "current   2026-11-20: 0.333 [" in text and "n=6 of 8 answers" in text
    assert "change vs previous window (2026-11-19): -0.667 [" in text
    assert "previous  2026-11-19: 1.000 [" in text and "reference 2026-11-18: 0.833 [" in text
    assert "what feedback measures" in text and "User feedback" in report_html(report)
    shares = report.metadata()["feedback"]["shares"]["thumbs up share"]
    assert shares["n"] == 6 and shares["change_vs_previous"]["diff"] == pytest.approx(1 / 3 - 1)
    assert set(report.metadata()["feedback"]["windows"]) == {"2026-11-20", "2026-11-19", "2026-11-18"}


def test_label_noise_is_agresti_coull_and_never_zero():
    y = np.array([1.0] * 9 + [0.0])
    (sd,) = set(label_noise(y, np.ones(10)).round(12))
    p = (9 + 1.96**2 / 2) / (10 + 1.96**2)
    assert sd == pytest.approx(np.sqrt(p * (1 - p)), abs=1e-3)
    assert (label_noise(np.ones(6), np.array([1, 1, 1, 0, 0, 0.0])) > 0.2).all()  # agreeing labels still vary


@pytest.mark.parametrize("setting", [
    Setting("thumbs, good judge, p=0.95", "thumbs", 90, p=0.95),  # 18 labels often all up
    Setting("thumbs, good judge", "thumbs", 200),
    Setting("ratings 1-5, good judge", "rating", 90, signal=0.8),
])
def test_level_covers_by_simulation(setting):
    result = coverage(setting, reps=300, seed=1)
    assert result["coverage"] >= 0.93, result
    assert result["width"] <= result["labels_only_width"] + 1e-9  # the judge never costs width


def test_selection_on_the_answer_breaks_the_share_and_a_weak_judge_cannot_save_the_level():
    biased = next(s for s in SETTINGS if s.name.startswith("NOT AT RANDOM: thumbs, weak"))
    result = coverage(biased, reps=200, seed=2)
    assert result["share_covers"] < 0.5 and result["coverage"] < 0.7, result
