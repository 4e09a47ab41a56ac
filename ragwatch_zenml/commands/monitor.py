"""`run.py monitor`: one window of logged answers evaluated and compared for drift.

Example:
    >>> code = monitor_command("configs/monitor.yaml", at=None, window="1d")  # doctest: +SKIP
"""

from __future__ import annotations

import time
from pathlib import Path

from ragwatch.config_loader import load_config
from ragwatch.logsources.read import read_log
from ragwatch.logsources.settings import parse_duration
from ragwatch.monitoring.estimate import estimate_monitor
from ragwatch.monitoring.monitor import MonitorReport
from ragwatch.monitoring.report import report_html, report_text
from ragwatch.monitoring.settings import MonitorConfig
from ragwatch.monitoring.windows import select_windows
from ragwatch_zenml.commands.dashboard import run_location

REPORT_STEP = "compare_windows_step"


def load_monitor_config(path: str | Path) -> MonitorConfig:
    return load_config(path, MonitorConfig, path_keys=MonitorConfig.PATH_KEYS)


def monitor_command(config_path: str | Path, *, at: str | None = None, window: str | None = None,
                    estimate: bool = False, no_cache: bool = False) -> tuple[int, str]:
    """Run the monitor pipeline (or only print its bill) and say what it found: exit code 1 when a
    metric drifted for the worse, else 0."""
    from ragwatch.estimate import format_comparison, format_estimate
    from ragwatch.llm.history import read_history, start_run

    config = load_monitor_config(config_path)
    if window is not None:
        parse_duration(window)  # a bad --window is answered before ZenML starts
    log = read_log(config.logs)  # a missing file or a bad format, also before ZenML starts
    planned = estimate_monitor(config, select_windows(log.records, config.window, at=at, length=window))
    if estimate:
        return 0, log.describe() + "\n\n" + format_estimate(planned)
    run_id = start_run()  # this run's usage records carry it: an overlapping run's calls are not counted
    started = time.time()
    from ragwatch_zenml.pipelines.monitor import monitor

    run = monitor.with_options(enable_cache=not no_cache)(config, at, window)
    report = _load_report(run.id)
    lines = [f"pipeline monitor: run {run.name}", "", report_text(report)]
    recorded = read_history(since=started, run_id=run_id)
    lines += ["", format_comparison(planned, recorded) if (planned.rows or recorded) else
              "estimate vs actual (usage history of this run): 0 calls planned, 0 made (generator: 0 calls)"]
    from ragwatch_zenml.commands.runner import REPORTS_DIR  # here: the estimate above needs no ZenML

    reports = Path(config.reports_dir) if config.reports_dir else REPORTS_DIR
    reports.mkdir(parents=True, exist_ok=True)
    path = (reports / f"{run.name}.html").absolute()
    path.write_text(report_html(report), encoding="utf-8")
    lines += ["", f"report: {path}", *run_location("monitor", run.name, run.id, [
        ("drift_report", REPORT_STEP, "the drift report")], ["monitor", "drift_vs_previous", "drift_vs_reference",
                                                             "feedback", "judge_drift"])]
    return (1 if report.worse else 0), "\n".join(lines)


def schedule_monitor(cron: str, config_path: str | Path) -> str:
    """A native ZenML schedule of the monitor pipeline on an orchestrator that has schedules (the local
    stack uses `python run.py schedule serve`, which runs `python run.py monitor --config FILE`)."""
    from zenml.config.schedule import Schedule

    from ragwatch_zenml.pipelines.monitor import monitor

    config = load_monitor_config(config_path)
    monitor.with_options(schedule=Schedule(cron_expression=cron))(config)
    return f"native ZenML schedule '{cron}' for monitor on the active stack's orchestrator"


def _load_report(run_id: object) -> MonitorReport:
    from zenml.client import Client

    run = Client().get_pipeline_run(run_id)
    return run.steps[REPORT_STEP].outputs["monitor_report"][0].load()
