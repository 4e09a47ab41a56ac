"""One window model for a log (`ragwatch.logsources.window.WindowSettings`): the monitor's `window:` block
and a pipeline config's `logs.window:` read the same keys with the same defaults, pick the same answers,
and the old flat spelling of `logs:` still reads, with a warning; one window verdict
(`ragwatch.monitoring.drift.window_verdict`) for every reader of a comparison."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from pydantic import ValidationError

from ragwatch.config import FullConfig
from ragwatch.evalset.logged import LogInput, logged_eval_set
from ragwatch.logsources.read import read_log
from ragwatch.logsources.window import WindowSettings, last_window
from ragwatch.monitoring.drift import DriftComparison, DriftRow, window_verdict
from ragwatch.monitoring.settings import MonitorConfig, MonitorWindow
from ragwatch.monitoring.windows import select_windows

LOG = Path(__file__).resolve().parents[2] / "data" / "sample" / "logs" / "answers.jsonl.gz"


def _ids(settings: LogInput) -> list[str]:
    return [s.id for s in logged_eval_set(settings)[0]]


def test_the_monitor_and_a_log_evaluation_set_share_the_model_and_its_defaults():
    monitor = MonitorConfig.model_validate({"logs": {"path": str(LOG)}}).window
    logs = LogInput.model_validate({"path": str(LOG), "window": {}}).window
    assert isinstance(monitor, WindowSettings) and type(logs) is WindowSettings
    assert (monitor.length, monitor.budget, monitor.seed) == (logs.length, logs.budget, logs.seed) == ("1d", 200, 0)
    assert set(WindowSettings.model_fields) < set(MonitorWindow.model_fields)


def test_a_log_evaluation_set_is_the_monitors_current_window():
    records = read_log(LogInput(path=str(LOG))).records
    settings = {"length": "1d", "budget": 30, "seed": 4}
    current = select_windows(records, MonitorWindow(**settings)).current
    assert _ids(LogInput(path=str(LOG), window=settings)) == [r.trace_id for r in current.records]
    assert len(current.records) == 30 < current.n_population


def test_no_window_is_every_answer_and_a_null_length_the_whole_log_sampled():
    records = read_log(LogInput(path=str(LOG))).records
    every = _ids(LogInput(path=str(LOG)))
    assert sorted(every) == sorted(r.trace_id for r in records)
    sampled = _ids(LogInput(path=str(LOG), window={"length": None, "budget": 25, "seed": 1}))
    assert len(sampled) == 25 and set(sampled) < set(every)
    assert last_window(records, WindowSettings(length=None, budget=None)).label == "log"


@pytest.mark.parametrize(("old", "new"), [
    ({"window": "1d", "budget": 40, "seed": 2}, {"length": "1d", "budget": 40, "seed": 2}),
    ({"window": "2d"}, {"length": "2d", "budget": None, "seed": 0}),  # an unset budget was every answer
    ({"budget": 25, "seed": 1}, {"length": None, "budget": 25, "seed": 1}),  # no window was the whole log
])
def test_the_old_flat_spelling_reads_as_the_window_it_meant_and_says_so(old, new):
    with pytest.warns(FutureWarning, match="old spelling of a log's window"):
        then = LogInput.model_validate({"path": str(LOG), **old})
    now = LogInput.model_validate({"path": str(LOG), "window": new})
    assert then == now and _ids(then) == _ids(now)


def test_the_old_spelling_of_no_window_is_no_window_and_the_new_one_is_quiet():
    with pytest.warns(FutureWarning):
        assert LogInput.model_validate({"path": str(LOG), "window": None, "budget": None}).window is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = FullConfig.model_validate({"logs": {"path": str(LOG), "window": {"length": "7d", "budget": 300}}})
    assert config.logs is not None and config.logs.window == WindowSettings(length="7d", budget=300)


def test_a_mixed_or_wrong_window_is_an_error_that_names_the_key():
    with pytest.raises(ValidationError, match=r"budget and seed go inside logs\.window"):
        LogInput.model_validate({"path": str(LOG), "window": {"length": "1d"}, "budget": 5})
    with pytest.raises(ValidationError, match="the monitor compares windows of a length"):
        MonitorConfig.model_validate({"logs": {"path": str(LOG)}, "window": {"length": None}})
    with pytest.raises(ValidationError, match="at least 2"):
        WindowSettings(budget=1)
    with pytest.raises(ValidationError, match="reference"):  # the monitor's keys are the monitor's
        LogInput.model_validate({"path": str(LOG), "window": {"reference": "2026-11-14"}})


def _row(metric: str, verdict: str, direction: str = "") -> DriftRow:
    return DriftRow(metric=metric, new_score=None, old_score=None, verdict=verdict, direction=direction)


@pytest.mark.parametrize(("verdicts", "expected"), [
    ([("a", "drift", "better"), ("b", "no drift", "")], "drift"),
    ([("a", "no drift", ""), ("b", "no drift", "")], "no drift"),
    ([("a", "no drift", ""), ("b", "undecided", "")], "undecided"),
    ([], "undecided"),
])
def test_one_window_verdict(verdicts, expected):
    rows = [_row(*v) for v in verdicts]
    verdict = window_verdict(rows)
    assert verdict.verdict == expected
    comparison = DriftComparison(label="vs previous window", new_window="n", old_window="o", confidence=0.95,
                                 rows=rows)
    assert comparison.verdict == verdict and comparison.drifted == verdict.drift


def test_the_worse_are_the_drifts_for_the_worse():
    verdict = window_verdict([_row("a", "drift", "worse"), _row("b", "drift", "better"), _row("c", "undecided")])
    assert (verdict.drift, verdict.worse) == (["a", "b"], ["a"])
