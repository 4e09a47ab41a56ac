"""Judge drift apart from system drift: the anchor, the judge comparison on it, the corrected level's
interval (coverage by simulation), and two planted changes through `evaluate_window` / `monitor_report`
with a fake judge behind the fake OpenAI-compatible server."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragwatch.logsources.read import read_log
from ragwatch.monitoring.anchor import AnchorRun, JudgeIdentity, anchored_metrics, load_anchor
from ragwatch.monitoring.judge_drift import compare_runs, corrected_diff, rogan_gladen
from ragwatch.monitoring.monitor import evaluate_window, monitor_report
from ragwatch.monitoring.report import report_text
from ragwatch.monitoring.settings import AnchorSettings, MonitorConfig
from ragwatch.monitoring.windows import select_windows
from tests.fake_llm_server import FakeLLMServer
from tests.planted_judge import PlantedJudge, write_log


def test_the_shipped_anchor_is_the_same_balanced_sample_every_time():
    settings = AnchorSettings(size=40)
    for metric, unit in (("faithfulness", "statements"), ("answer_relevance", "answers")):
        source, got_unit, items = load_anchor(metric, settings)
        again = load_anchor(metric, settings)[2]
        assert got_unit == unit and "reference labels" in source
        assert [it.id for it in items] == [it.id for it in again] and len(items) == 40
        positives = sum(it.faithful for it in items)
        assert 18 <= positives <= 22  # half of each label where the labels allow (18 irrelevant answers ship)
        if metric == "faithfulness":
            assert all(it.contexts and it.question for it in items)
    assert [it.id for it in load_anchor("faithfulness", AnchorSettings(size=40, seed=1))[2]] != \
        [it.id for it in load_anchor("faithfulness", settings)[2]]


def test_a_users_anchor_file_and_a_file_of_one_label_is_refused(tmp_path):
    import json

    from ragwatch.judges import JudgesConfig

    path = tmp_path / "mine.jsonl"
    rows = [{"id": str(i), "question": "q", "answer": f"a{i}", "label": "yes" if i % 2 else "no"} for i in range(30)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    settings = AnchorSettings(path=str(path), size=20)
    judges = JudgesConfig.model_validate({"llm": {"model": "openai/x"}, "enabled": ["answer_relevance"]})
    assert anchored_metrics(judges, settings) == ["answer_relevance"]  # no contexts: it labels answer relevance
    assert len(load_anchor("answer_relevance", settings)[2]) == 20
    path.write_text("".join(json.dumps({**r, "label": "yes"}) + "\n" for r in rows))
    with pytest.raises(ValueError, match="both labels"):
        load_anchor("answer_relevance", settings)
    with pytest.raises(FileNotFoundError, match=r"drift\.anchor\.path: no labelled file"):
        anchored_metrics(judges, AnchorSettings(path=str(tmp_path / "missing.jsonl")))


def _run(values: list[float], labels: list[int], **identity: str) -> AnchorRun:
    return AnchorRun(metric="faithfulness", source="s", unit="statements", identity=JudgeIdentity(**identity),
                     ids=[str(i) for i in range(len(values))], labels=labels, values=values)


def test_compare_runs_reports_the_anchors_figures_and_what_changed():
    labels = [1] * 20 + [0] * 20
    old = _run([1.0] * 17 + [0.0] * 3 + [0.0] * 16 + [1.0] * 4, labels, model="m", prompt_version="faithfulness-v6")
    new = _run([1.0] * 40, labels, model="m", prompt_version="faithfulness-v7")
    row = compare_runs(new, old)
    assert row.changes == ["prompt faithfulness-v6 -> faithfulness-v7"] and row.drift and row.changed
    assert row.n == 40 and row.kappa_old == pytest.approx(0.65) and row.kappa_new == 0.0
    assert row.level_old == pytest.approx(0.525) and row.level_new == 1.0 and row.diff == pytest.approx(0.475)
    assert row.diff_low > 0
    text = row.text()
    assert text.startswith("judge drift: faithfulness judge changed (prompt faithfulness-v6 -> faithfulness-v7): "
                           "on 40 anchor statements kappa 0.650 -> 0.000")
    assert "level 0.525 -> 1.000 (+0.475 [" in text
    same = compare_runs(old, old)
    assert not same.drift and not same.changed and same.text().startswith("judge: faithfulness judge unchanged")
    silent = compare_runs(new, old.model_copy(update={"identity": new.identity}))
    assert silent.drift and "silent change" in silent.text()


def test_rogan_gladen_recovers_the_level_and_refuses_a_judge_that_tells_nothing_apart():
    level, defined = rogan_gladen(0.8 * 0.9 + 0.2 * 0.3, 0.9, 0.3)
    assert defined and level == pytest.approx(0.8)
    assert not rogan_gladen(1.0, 1.0, 1.0)[1]
    labels = np.array([1] * 20 + [0] * 20)
    diff = corrected_diff(np.ones(60), np.r_[np.ones(40), np.zeros(20)], labels, np.ones(40),
                          np.r_[np.ones(18), np.zeros(2), np.zeros(17), np.ones(3)])
    assert diff.level_new is None and diff.diff is None
    _, low, high = diff.interval(0.95)
    assert low == -1.0 and high == 1.0  # a judge that says yes to everything tells nothing of the system


@pytest.mark.parametrize("judges", [((0.85, 0.30), (0.85, 0.30)), ((0.85, 0.30), (0.97, 0.60))])
def test_the_corrected_difference_covers_the_true_change(judges):
    """Windows of 90 answers (true levels 0.70 and 0.62), an anchor of 20 + 20 labelled items; the judge
    errs on the answers as on the anchor. The 95% interval covers the true difference >= 0.93 of the time."""
    rng = np.random.default_rng(7)
    (t_old, f_old), (t_new, f_new) = judges
    p_old, p_new, reps, covered = 0.70, 0.62, 400, 0
    labels = np.array([1] * 20 + [0] * 20)
    for rep in range(reps):
        def window(p: float, t: float, f: float) -> np.ndarray:
            truth = rng.random(90) < p
            return np.where(truth, rng.random(90) < t, rng.random(90) < f).astype(float)

        u = rng.random(40)  # one draw per anchor item: the two judges' verdicts on an item are related
        anchor_old = np.where(labels == 1, u < t_old, u < f_old).astype(float)
        anchor_new = np.where(labels == 1, u < t_new, u < f_new).astype(float)
        got = corrected_diff(window(p_new, t_new, f_new), window(p_old, t_old, f_old), labels, anchor_new,
                             anchor_old, resamples=1000, seed=rep)
        _, low, high = got.interval(0.95)
        covered += low <= p_new - p_old <= high
    assert covered / reps >= 0.93


def _config(log: Path, server: FakeLLMServer, model: str) -> MonitorConfig:
    return MonitorConfig.model_validate({
        "logs": {"path": str(log)}, "window": {"budget": 100},
        "judges": {"enabled": ["answer_relevance"], "use_logprobs": False,
                   "llm": {"model": f"openai/{model}", "api_base": server.base_url, "cache": False}}})


def test_a_lenient_judge_is_corrected_back_to_the_systems_level(tmp_path):
    """Window 2's judge passes half of what it should fail: raw, the system looks better; corrected by the
    anchor's error rates, both windows read near the true 0.7 and no system drift is claimed."""
    write_log(tmp_path / "log.jsonl", {0: 0.7, 1: 0.7}, per_day=200)
    with FakeLLMServer(responder=PlantedJudge({"judge-a": "good", "judge-b": "lenient"})) as server:
        before, after = (_config(tmp_path / "log.jsonl", server, m) for m in ("judge-a", "judge-b"))
        log = read_log(before.logs)
        windows = select_windows(log.records, before.window.model_copy(update={"budget": 200}))
        previous, current = evaluate_window(windows.previous, before), evaluate_window(windows.current, after)
    report = monitor_report(log, windows, current, previous, previous, before)
    (row,) = report.judge_drift[0].rows
    assert row.drift and 0.1 < row.kappa_new < row.kappa_old and row.level_new > row.level_old
    raw_new, raw_old = (e.metrics.metrics["answer_relevance/pass"].score for e in (current, previous))
    assert raw_new - raw_old > 0.1  # the raw means moved with the judge
    corrected = next(r for r in report.comparisons[0].rows if r.metric == "answer_relevance/pass corrected")
    assert corrected.verdict != "drift" and abs(corrected.new_score - 0.7) < 0.1
    assert abs(corrected.old_score - 0.7) < 0.1 and corrected.diff_low < 0.0 < corrected.diff_high
    assert "a larger drift.anchor.size narrows it" in report_text(report)


def test_a_planted_judge_change_reads_judge_drift_and_no_system_drift(tmp_path):
    write_log(tmp_path / "log.jsonl", {0: 0.7, 1: 0.7})  # the same system both days
    with FakeLLMServer(responder=PlantedJudge({"judge-a": "good", "judge-b": "yes"})) as server:
        before, after = _config(tmp_path / "log.jsonl", server, "judge-a"), _config(tmp_path / "log.jsonl", server,
                                                                                   "judge-b")
        log = read_log(before.logs)
        windows = select_windows(log.records, before.window)
        previous = evaluate_window(windows.previous, before)
        current = evaluate_window(windows.current, after)  # window 2: a judge that says yes to everything
    report = monitor_report(log, windows, current, previous, previous, before)
    assert previous.judges.anchor["answer_relevance"].identity.model == "openai/judge-a"
    assert current.judges.identities["answer_relevance"].model == "openai/judge-b"
    (judges,) = report.judge_drift
    (row,) = judges.rows
    assert row.drift and row.changes == ["model openai/judge-a -> openai/judge-b"] and row.n == 40
    assert row.kappa_old > 0.6 and row.kappa_new == 0.0 and row.level_new == 1.0 and row.diff_low > 0
    text = report_text(report)
    assert ("judge drift: answer_relevance judge changed (model openai/judge-a -> openai/judge-b): on 40 anchor "
            "answers kappa") in text
    assert "system drift on corrected levels: none (answer_relevance/pass corrected" in text
    assert text.startswith("monitor: no drift for the worse; judge drift (the judge, not the system): "
                           "vs previous window: answer_relevance")
    (comparison,) = report.comparisons
    verdicts = comparison.verdicts()
    assert "answer_relevance" not in verdicts  # the raw judge means of two judges are not compared
    assert verdicts["answer_relevance/pass corrected"] == "undecided"
    assert not report.worse and "drift" not in [v for m, v in verdicts.items()]
    raw = current.metrics.metrics["answer_relevance/pass"].score
    assert raw == 1.0  # the raw judge mean jumped: read raw, it would have been a system that got better
    metadata = report.metadata()["judge_drift"]["vs_previous"]["answer_relevance"]
    assert metadata["judge_drift"] and metadata["n_anchor"] == 40 and metadata["kappa_new"] == 0.0


def test_a_planted_system_change_reads_system_drift_with_the_judge_unchanged(tmp_path):
    write_log(tmp_path / "log.jsonl", {0: 0.8, 1: 0.3})  # day 2: worse answers
    with FakeLLMServer(responder=PlantedJudge({"*": "good"})) as server:
        config = _config(tmp_path / "log.jsonl", server, "judge-a")
        log = read_log(config.logs)
        windows = select_windows(log.records, config.window)
        previous, current = evaluate_window(windows.previous, config), evaluate_window(windows.current, config)
    report = monitor_report(log, windows, current, previous, previous, config)
    (row,) = report.judge_drift[0].rows
    assert not row.drift and not row.changed and row.n_changed == 0 and row.diff == 0.0
    verdicts = report.comparisons[0].verdicts()
    assert verdicts["answer_relevance"] == "drift" and verdicts["answer/context_support"] == "drift"
    assert "answer_relevance" in " ".join(report.worse)
    text = report_text(report)
    assert "judge: answer_relevance judge unchanged: on 40 anchor answers" in text
    assert "system drift on corrected levels" not in text  # an unchanged judge's raw means compare the windows


def test_the_estimate_counts_the_anchor_once_with_the_cache_and_per_window_without(tmp_path, monkeypatch):
    from ragwatch.monitoring.estimate import estimate_monitor

    monkeypatch.setenv("RAGWATCH_CACHE_DIR", str(tmp_path / "cache"))
    write_log(tmp_path / "log.jsonl", {0: 0.7, 1: 0.7}, per_day=10)
    for cache, anchor_calls in ((True, 40), (False, 80)):
        config = MonitorConfig.model_validate({
            "logs": {"path": str(tmp_path / "log.jsonl")},
            "judges": {"enabled": ["answer_relevance"], "use_logprobs": False,
                       "llm": {"model": "openai/gpt-4o-mini", "cache": cache}}})
        estimate = estimate_monitor(config, select_windows(read_log(config.logs).records, config.window))
        assert [row.calls for row in estimate.rows] == [20, anchor_calls]  # two days of 10 answers, then the anchor
        assert any(note.startswith("anchor: 40 labelled answers re-judged") for note in estimate.notes)


def test_a_window_whose_anchor_labels_are_missing_is_still_evaluated_and_says_so(tmp_path, monkeypatch):
    import json

    from ragwatch.monitoring import anchor

    monkeypatch.setenv("RAGWATCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setitem(anchor.SHIPPED, "answer_relevance", ("answers", [tmp_path / "gone.jsonl"]))
    write_log(tmp_path / "log.jsonl", {0: 0.7, 1: 0.7}, per_day=5)
    config = MonitorConfig.model_validate({
        "logs": {"path": str(tmp_path / "log.jsonl")},
        "judges": {"enabled": ["answer_relevance"], "use_logprobs": False,
                   "llm": {"model": "openai/judge", "extra": {"mock_response": json.dumps({"verdict": "yes"})},
                           "cache": False}}})
    log = read_log(config.logs)
    windows = select_windows(log.records, config.window)
    previous, current = evaluate_window(windows.previous, config), evaluate_window(windows.current, config)
    assert current.metrics.metrics["answer_relevance"].n_scored == 5
    assert "shipped anchor labels are missing" in (current.judges.unavailable or "")
    text = report_text(monitor_report(log, windows, current, previous, previous, config))
    assert "the anchor was not judged for 2026-11-19: the shipped anchor labels are missing" in text
