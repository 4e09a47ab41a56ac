"""log -> windows (current, previous, reference) -> each evaluated as answered -> drift report."""

from __future__ import annotations

from zenml import pipeline

from ragwatch.code_version import code_version
from ragwatch.monitoring.settings import MonitorConfig
from ragwatch_zenml.steps.monitor import compare_windows_step, evaluate_window_step, read_log_step, select_windows_step


@pipeline(enable_cache=True)
def monitor(config: MonitorConfig, at: str | None = None, length: str | None = None):
    """`at` / `length`: the window's end and length (default: the config's, then the last logged day)."""
    log = read_log_step(config.logs)
    current_window, previous_window, reference_window = select_windows_step(log, config.window, at, length)
    version = code_version()  # in the windows' cache key: new evaluation code re-evaluates a cached window
    current = evaluate_window_step(current_window, config, version, id="evaluate_current_window")
    previous = evaluate_window_step(previous_window, config, version, id="evaluate_previous_window")
    reference = evaluate_window_step(reference_window, config, version, id="evaluate_reference_window")
    compare_windows_step(log, current_window, previous_window, reference_window, current, previous, reference,
                         config)
