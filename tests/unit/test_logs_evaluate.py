"""Logged answers evaluate as they were answered: zero generator calls, and the same figures as the
same answers given by a callable system; windows and sampling (the drift verdicts: test_logs_drift.py)."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ragwatch.evalset.logged import log_samples, logged_answer
from ragwatch.judges import JudgesConfig
from ragwatch.llm.types import LLMSettings
from ragwatch.logsources.records import LogContext, LogRecord
from ragwatch.logsources.tabular import read_tabular
from ragwatch.monitoring.evaluate import NO_RELEVANCE, evaluate_answers, evaluate_logged
from ragwatch.monitoring.settings import MonitorWindow
from ragwatch.monitoring.windows import by_version, select_windows
from ragwatch.rag import CallableRAG, RagSettings, build_rag
from ragwatch.rag.logged import LoggedRAG

LOGS = Path(__file__).resolve().parent.parent / "data" / "logs"


def _judge(score: int) -> JudgesConfig:
    verdict = json.dumps({"verdict": "yes" if score >= 3 else "no"})  # answer relevance asks yes/no
    return JudgesConfig(llm=LLMSettings(model="openai/judge", extra={"mock_response": verdict}, cache=False),
                        enabled=["answer_relevance"])


def test_logged_figures_equal_the_same_answers_from_a_callable(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGWATCH_CACHE_DIR", str(tmp_path))
    records = read_tabular(LOGS / "answers.jsonl").records
    samples = log_samples(records)
    by_question = {r.question: logged_answer(r) for r in records}

    def replay(question: str):
        answer = by_question[question]
        if answer.error:
            raise ValueError(answer.error)
        return {"answer": answer.answer, "contexts": [c.model_dump() for c in answer.contexts]}

    logged = evaluate_logged(samples, _judge(4))
    called = evaluate_answers(samples, CallableRAG(replay), _judge(4))
    assert logged.details["generator_calls"] == 0 and logged.details["usage"]["calls"] == 5  # the judge's, 1 failed
    assert set(logged.metrics) == set(called.metrics) == {"answer/context_support", "answer_relevance",
                                                           "system/availability"}
    for name, result in logged.metrics.items():
        other = called.metrics[name]
        assert (result.score, result.ci_low, result.ci_high, result.n_scored, result.n_failed) == \
               (other.score, other.ci_low, other.ci_high, other.n_scored, other.n_failed)
    assert logged.unavailable["system/hit_rate"] == NO_RELEVANCE
    failed = [it for it in logged.metrics["answer/context_support"].items if not it.ok]
    assert [it.item_id for it in failed] == ["t6"] and "empty" in failed[0].error


def test_logged_system_is_built_by_kind_and_cannot_be_asked_new_questions():
    rag = build_rag(RagSettings(kind="logged"))
    assert isinstance(rag, LoggedRAG) and rag.describe()["generator_calls"] == 0
    assert "only the questions its log holds" in rag.answer("anything new?").error


def _records(n: int, day: datetime, version: str = "v1", support: float = 1.0, seed: int = 0) -> list[LogRecord]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = [f"w{j}" for j in range(10)]
        answer = " ".join(w if rng.random() < support else f"invented{j}" for j, w in enumerate(words))
        out.append(LogRecord(trace_id=f"{day.date()}-{version}-{i}", question=f"q{i}?", answer=answer,
                             contexts=[LogContext(text=" ".join(words))], system_version=version,
                             timestamp=day + timedelta(minutes=i)))
    return out


def test_windows_end_at_the_last_day_and_sample_to_the_budget():
    day = datetime(2026, 11, 20, tzinfo=UTC)
    records = _records(50, day - timedelta(days=2)) + _records(30, day - timedelta(days=1)) + _records(300, day)
    windows = select_windows(records, MonitorWindow(budget=100, seed=3))
    assert windows.current.start == day and len(windows.current.records) == 100
    assert windows.current.n_population == 300 and windows.current.inclusion_prob == pytest.approx(1 / 3)
    assert windows.previous.n_population == 30 and windows.previous.inclusion_prob == 1.0
    assert windows.reference.start == day - timedelta(days=2) and windows.reference.n_population == 50
    again = select_windows(records, MonitorWindow(budget=100, seed=3))
    assert [r.trace_id for r in again.current.records] == [r.trace_id for r in windows.current.records]
    other = select_windows(records, MonitorWindow(budget=100, seed=4))
    assert [r.trace_id for r in other.current.records] != [r.trace_id for r in windows.current.records]
    at = select_windows(records, MonitorWindow(), at="2026-11-20T00:00:00Z", length="12h")
    assert at.current.n_population == 0 and at.previous.n_population == 30


def test_sampling_keeps_every_answer_equally_likely():
    day = datetime(2026, 11, 20, tzinfo=UTC)
    records = _records(20, day)
    counts = dict.fromkeys((r.trace_id for r in records), 0)
    for seed in range(2000):
        for r in select_windows(records, MonitorWindow(budget=5, seed=seed)).current.records:
            counts[r.trace_id] += 1
    shares = [c / 2000 for c in counts.values()]
    assert min(shares) > 0.2 and max(shares) < 0.3  # each 5/20 = 0.25


def test_versions_split_the_window():
    day = datetime(2026, 11, 20, tzinfo=UTC)
    records = _records(10, day, "v1") + _records(5, day, "v2")
    groups = by_version(select_windows(records, MonitorWindow()).current)
    assert {v: len(w.records) for v, w in groups.items()} == {"v1": 10, "v2": 5}
    sampled = by_version(select_windows(records, MonitorWindow(budget=6)).current)
    assert {v: w.n_population for v, w in sampled.items()} == {"v1": 10, "v2": 5}  # counted, not guessed
    assert sum(len(w.records) for w in sampled.values()) == 6


def test_costless_metrics_see_the_whole_window_and_judges_the_sample(tmp_path, monkeypatch):
    """The budget bounds LLM calls: context support is measured on all 40 answers, the judge on the 10 sampled."""
    from ragwatch.monitoring.monitor import evaluate_window
    from ragwatch.monitoring.settings import MonitorConfig

    monkeypatch.setenv("RAGWATCH_CACHE_DIR", str(tmp_path))
    day = datetime(2026, 11, 20, tzinfo=UTC)
    window = select_windows(_records(40, day, support=0.7), MonitorWindow(budget=10, seed=1)).current
    assert len(window.records) == 10 and len(window.all_records) == 40 and window.inclusion_prob == 0.25
    assert "10 of 40 answers sampled for the judges" in window.describe()
    config = MonitorConfig(logs={"path": str(LOGS / "answers.jsonl")}, judges=_judge(4))
    metrics = evaluate_window(window, config).metrics
    support = metrics.metrics["answer/context_support"]
    assert support.n_scored == 40  # every answer: no LLM call needed
    assert metrics.metrics["answer_relevance"].n_scored == 10  # the judge: the sample only
    assert metrics.details["usage"]["calls"] == 10
    whole = evaluate_logged(log_samples(window.all_records), JudgesConfig(enabled=[])).metrics
    assert support.score == whole["answer/context_support"].score


def test_feedback_labels_the_metric_it_means_and_the_rest_is_reported_beside(tmp_path, monkeypatch):
    from ragwatch.monitoring.feedback import attach_feedback
    from ragwatch.monitoring.settings import FeedbackSettings

    monkeypatch.setenv("RAGWATCH_CACHE_DIR", str(tmp_path))
    samples = log_samples(read_tabular(LOGS / "answers.jsonl").records)
    group = evaluate_logged(samples, _judge(5))
    metrics, summary = attach_feedback(group.metrics, samples, FeedbackSettings())
    passed = metrics["answer_relevance/pass"]
    assert passed.info.binary and passed.score == 1.0  # the judge says 5 everywhere
    assert passed.labelled is None  # feedback is shown beside the metrics, never as their careful labels
    levels = {level.metric: level for level in summary.levels}
    # t1 up, t2 down (t6 has an empty answer: a failed item, its label unused): the labels pull the level down
    assert levels["answer_relevance/pass"].n_labels == 2 and levels["answer_relevance/pass"].score < 1.0
    assert levels["answer_relevance"].n_labels == 2  # ratings 4 and 2 of 1-5, on the judge's own scale
    assert "faithfulness" not in {f.labels for f in summary.figures}
    thumbs = next(f for f in summary.figures if f.kind.startswith("thumbs"))
    assert thumbs.n == 3 and thumbs.score == pytest.approx(2 / 3) and thumbs.ci_low < thumbs.score < thumbs.ci_high
    assert "not a random sample" in thumbs.note
    _, alone = attach_feedback(evaluate_logged(samples, JudgesConfig(enabled=[])).metrics, samples,
                               FeedbackSettings())
    assert all(f.labels is None and "not measured" in f.note for f in alone.figures)
    with pytest.raises(ValueError, match="do not see the retrieved contexts"):
        FeedbackSettings(thumbs_metric="faithfulness")
