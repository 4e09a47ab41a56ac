"""Monitor steps: read the log, pick and sample the windows, evaluate a window, compare them.

Reading is never cached (the log grows); a window's evaluation is cached on the window's content,
so a day evaluated as "current" is not judged again when it becomes "previous".
"""

from __future__ import annotations

from typing import Annotated

from zenml import get_step_context, log_metadata, step
from zenml.types import HTMLString

from ragwatch.logsources.read import read_log
from ragwatch.logsources.records import LogReadResult
from ragwatch.logsources.settings import LogSettings
from ragwatch.logsources.window import LogWindow
from ragwatch.monitoring.monitor import MonitorReport, WindowEvaluation, evaluate_window, monitor_report
from ragwatch.monitoring.phoenix_annotate import annotate_window
from ragwatch.monitoring.report import report_html
from ragwatch.monitoring.settings import MonitorConfig, MonitorWindow
from ragwatch.monitoring.windows import select_windows
from ragwatch_zenml.steps.monitor_materializers import LogWindowMaterializer, MonitorReportMaterializer
from ragwatch_zenml.steps.secrets import export_api_keys


@step(enable_cache=False)
def read_log_step(logs: LogSettings) -> Annotated[LogReadResult, "log_read"]:
    """Every logged answer as a record; every row that is not one, with its line and reason."""
    result = read_log(logs)
    log_metadata(metadata={"log": {"source": result.source, "format": result.format, **result.counts}})
    return result


@step(enable_cache=False, output_materializers=LogWindowMaterializer)
def select_windows_step(log: LogReadResult, window: MonitorWindow, at: str | None = None,
                        length: str | None = None) -> tuple[
        Annotated[LogWindow, "current_window"], Annotated[LogWindow, "previous_window"],
        Annotated[LogWindow, "reference_window"]]:
    """The window to evaluate, the one before it and the reference window, each sampled to the budget."""
    windows = select_windows(log.records, window, at=at, length=length)
    log_metadata(metadata={"windows": {w.label: w.describe() for w in (windows.current, windows.previous,
                                                                         windows.reference)}})
    return windows.current, windows.previous, windows.reference


@step
def evaluate_window_step(window: LogWindow, config: MonitorConfig, code_version: str = ""
                         ) -> Annotated[WindowEvaluation, "window_evaluation"]:
    """The window's answers measured as they were given: no generator call. `code_version`
    (`ragwatch.code_version`) is read by nobody: it is in the step's cache key, so new evaluation code
    re-evaluates a window instead of serving its old figures (the LLM cache still serves unchanged calls)."""
    export_api_keys()
    evaluation = evaluate_window(window, config)
    log_metadata(metadata={"window": {"name": window.name, "answers": len(window.records),
                                      "generator_calls": 0, **evaluation.metrics.scores()},
                           # the judge that judged this window, so a later run can tell a judge's change
                           "judges": {name: identity.model_dump() for name, identity
                                      in evaluation.judges.identities.items()}})
    return evaluation


@step(enable_cache=False, output_materializers={"monitor_report": MonitorReportMaterializer})
def compare_windows_step(log: LogReadResult, current_window: LogWindow, previous_window: LogWindow,
                         reference_window: LogWindow, current: WindowEvaluation, previous: WindowEvaluation,
                         reference: WindowEvaluation, config: MonitorConfig) -> tuple[
        Annotated[MonitorReport, "monitor_report"], Annotated[HTMLString, "drift_report"]]:
    """Drift vs the previous and the reference window (unpaired) and between versions; run metadata."""
    from ragwatch.monitoring.windows import Windows

    windows = Windows(current=current_window, previous=previous_window, reference=reference_window)
    report = monitor_report(log, windows, current, previous, reference, config)
    if config.logs.phoenix is not None:  # the verdicts back on the spans, where a Phoenix user looks
        report.annotations_written = annotate_window(config.logs.phoenix, report, current)
    log_metadata(metadata=report.metadata(), run_id_name_or_prefix=get_step_context().pipeline_run.id)
    return report, HTMLString(report_html(report))
